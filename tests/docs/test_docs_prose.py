"""README and docs prose speak of the project, its runs and findings: no commit hashes,
no dates, no remarks on the state of the machine while someone worked.

A figure's provenance (command, code version, date, machine) is written once, by
docs/hooks/figures.py, in a page's "How these figures were made" table, from the
results file; that rendered table is the one place where hashes and dates belong.
"""

import re

import pytest
from helpers.docs_site import REPOSITORY, load_docs_module

figures = load_docs_module("docs/hooks/figures.py")

COMMIT = re.compile(r"(?<![\w/.#-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w/-])")
DATE = re.compile(r"\b(?:19|20)\d\d-[01]\d-[0-3]\d\b")
MACHINE_STATE = re.compile(
    r"nothing else (?:was )?running|load average|other work\b|background (?:job|training)"
    r"|while (?:another|other) (?:job|run|agent)s? |machine was (?:busy|idle|loaded)"
    r"|\(paused\)|other agents?\b|another agent|shared with (?:other|a training|another)"
    r"|other processes|quiet machine|nothing else on",
    re.IGNORECASE,
)
URL = re.compile(r"https?://\S+")

# A date that is a fact about something outside the project, not a trace of its work.
ALLOWED = {
    ("README.md", "2019-04-07"): "the release of the corpus file the package bundles",
    ("docs/data.md", "2019-04-07"): "the release of the corpus file the package bundles",
}

PAGES = [REPOSITORY / "README.md"] + sorted((REPOSITORY / "docs").rglob("*.md"))


def prose(text: str) -> str:
    """The text a reader reads as prose: without rendered provenance tables and URLs."""
    text = re.sub(
        r"<!--\s*provenance\(.*?\)\s*-->.*?<!--\s*/provenance\s*-->", "", text, flags=re.DOTALL
    )
    text = figures.MARKER.sub("", text)
    return URL.sub("", text)


KINDS = {"commit hash": COMMIT, "date": DATE, "machine state": MACHINE_STATE}


def problems(name: str, text: str, kinds=tuple(KINDS)) -> list[str]:
    found = []
    for number, line in enumerate(prose(text).splitlines(), 1):
        for what in kinds:
            for match in KINDS[what].finditer(line):
                if (name, match[0]) not in ALLOWED:
                    found.append(f"{name}:{number}: {what} {match[0]!r}: {line.strip()[:120]}")
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPOSITORY)))
def test_prose_has_no_commit_hash_or_date(page):
    name = str(page.relative_to(REPOSITORY))
    found = problems(name, page.read_text(encoding="utf-8"), ("commit hash", "date"))
    assert not found, "\n".join(
        [f"{len(found)} in {name} (provenance goes in a results file's `machine` record):"]
        + found[:40]
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPOSITORY)))
def test_prose_has_no_remark_on_the_machines_state(page):
    """Every page, the pending ones too: how busy the machine was is no fact of the project."""
    name = str(page.relative_to(REPOSITORY))
    found = problems(name, page.read_text(encoding="utf-8"), ("machine state",))
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "line, kinds",
    [
        ("Made with the code of commit `985160d`.", ["commit hash"]),
        ("trained on 2026-12-02, 510 s", ["date"]),
        ("timed with nothing else running", ["machine state"]),
        ("the load average was 3", ["machine state"]),
        ("a background job (paused)", ["machine state"]),
        ("10,074,497 parameters, 2.45x, beam 4, sha256 in `model_sha256`", []),
        ("see https://github.com/x/y/commit/0123abc4567", []),
        (
            '<!-- figure("a", "b") -->1<!-- /figure --> <!-- provenance() -->\n| `985160d` | 2026-12-02 |\n<!-- /provenance -->',
            [],
        ),
    ],
)
def test_the_patterns_find_what_they_should(line, kinds):
    found = problems("page.md", line)
    assert [
        kind
        for kind in ("commit hash", "date", "machine state")
        if any(f": {kind} " in p for p in found)
    ] == kinds
