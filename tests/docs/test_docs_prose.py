"""README and docs prose speak of the project, its runs and findings: no commit hashes,
no dates, no remarks on the state of the machine while someone worked, no time relative
to the writing ("today's defaults", "now plans"), and no measured figure typed by hand.

A figure's provenance (command, code version, date, machine) is written once, by
docs/hooks/figures.py, in a page's "How these figures were made" table, from the
results file; that rendered table is the one place where hashes and dates belong, and
its commands show no directory of the machine they ran on (`/work/...`, `/tmp/...`).
"""

import json
import re

import pytest
from helpers.docs_site import REPOSITORY, load_docs_module

figures = load_docs_module("docs/hooks/figures.py")

COMMIT = re.compile(r"(?<![\w/.#-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w/-])")
# A short hash of digits only reads like a number; quoted as code, seven digits are a hash.
DIGITS_COMMIT = re.compile(r"`[0-9]{7}\^?`")
DATE = re.compile(r"\b(?:19|20)\d\d-[01]\d-[0-3]\d\b")
MACHINE_STATE = re.compile(
    r"nothing else (?:was )?running|load average|other work\b|background (?:job|training)"
    r"|while (?:another|other) (?:job|run|agent)s? |machine was (?:busy|idle|loaded)"
    r"|\(paused\)|other agents?\b|another agent|shared with (?:other|a training|another)"
    r"|other processes|quiet machine|nothing else on",
    re.IGNORECASE,
)
URL = re.compile(r"https?://\S+")
# Time relative to when a page was written: the page describes the code it ships with,
# so "the defaults" needs no "today's", and what changed belongs in the changelog.
RELATIVE_TIME = re.compile(
    r"\b(?:today(?:['’]s)?|now|nowadays|at present|currently|as of (?:now|today|writing)"
    r"|this session)\b",
    re.IGNORECASE,
)
# A directory of the machine a command ran on, as a provenance row must not show it.
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|tmp|home|root)\b")

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


KINDS = {
    "commit hash": COMMIT,
    "digits-only hash": DIGITS_COMMIT,
    "date": DATE,
    "machine state": MACHINE_STATE,
    "relative time": RELATIVE_TIME,
}


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
    found = problems(
        name, page.read_text(encoding="utf-8"), ("commit hash", "digits-only hash", "date")
    )
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


# Pages another change of issue 55 rewrites (its owner clears them there).
RELATIVE_TIME_PENDING: dict[str, str] = {}


def _relative_time_param(page):
    name = str(page.relative_to(REPOSITORY))
    marks = []
    if name in RELATIVE_TIME_PENDING:
        marks = [pytest.mark.xfail(strict=False, reason=RELATIVE_TIME_PENDING[name])]
    return pytest.param(page, id=name, marks=marks)


@pytest.mark.parametrize("page", [_relative_time_param(page) for page in PAGES])
def test_prose_has_no_time_relative_to_its_writing(page):
    """A page holds for the code it ships with: not "today's defaults" or "now plans"."""
    name = str(page.relative_to(REPOSITORY))
    found = problems(name, page.read_text(encoding="utf-8"), ("relative time",))
    assert not found, "\n".join(
        [f"{len(found)} in {name} (say what holds, without 'today' or 'now'):"] + found[:40]
    )


def provenance_rows(name: str, text: str) -> list[str]:
    """The rows of a page's provenance tables as a reader sees them: the README's as
    committed between its markers, a docs page's as the build renders them."""
    if name == "README.md":
        tables = [m[2] for m in figures.MARKER.finditer(text) if m[1].startswith("provenance")]
    else:
        calls = [m[1] for m in figures.CALL.finditer(text)]
        tables = [figures.evaluate(call, calls) for call in calls if call.startswith("provenance")]
    return [row for table in tables for row in table.splitlines() if row.startswith("|")]


def machine_paths(name: str, rows: list[str]) -> list[str]:
    return [
        f"{name}: {match[0]!r} in {row.strip()[:160]}"
        for row in rows
        for match in MACHINE_PATH.finditer(row)
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPOSITORY)))
def test_provenance_rows_show_no_machine_path(page):
    """A provenance row gives the command to run from a clone, not where it once ran."""
    name = str(page.relative_to(REPOSITORY))
    found = machine_paths(name, provenance_rows(name, page.read_text(encoding="utf-8")))
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "row, found",
    [
        ("| `a.json` | `python b.py --run-dir /work/runs/fra-eng` | `abc1234` |", ["/work"]),
        ("| `a.json` | `python b.py --out /tmp/x.json --venv /home/me/v` |", ["/tmp", "/home"]),
        ("| `a.json` | `cd /root && make` |", ["/root"]),
        ("| `a.json` | `python b.py --run-dir runs/fra-eng --out benchmarks/work/x` |", []),
        ("| `a.json` | `python b.py --out=/tmp/x` |", ["/tmp"]),
    ],
)
def test_the_machine_path_pattern_finds_what_it_should(row, found):
    assert [item.split("'")[1] for item in machine_paths("page.md", [row])] == found


def test_rendered_provenance_drops_the_machines_directories(tmp_path):
    """Through the real renderer: a record made in /work and /tmp shows a command that
    runs from a clone, and its file keeps the command as it ran."""
    machine = {
        "command": "python benchmarks/x.py --run-dir /work/runs/fra-eng --out /tmp/x.json",
        "commit": "abc1234",
        "date": "2026-01-02T03:04:05",
    }
    (tmp_path / "x.json").write_text(json.dumps({"machine": machine, "value": 1}))
    table = figures.provenance_table([("x", "")], results=tmp_path)
    assert "`python benchmarks/x.py --run-dir runs/fra-eng --out x.json`" in table
    assert not machine_paths("x.md", table.splitlines())
    assert json.loads((tmp_path / "x.json").read_text())["machine"] == machine


@pytest.mark.parametrize(
    "line, kinds",
    [
        ("Made with the code of commit `985160d`.", ["commit hash"]),
        ("the defaults of commit `9447243` (8 epochs)", ["digits-only hash"]),
        ("`--max-request-bytes` | `67108864` |, 1,000,000 pairs", []),
        ("trained on 2026-12-02, 510 s", ["date"]),
        ("timed with nothing else running", ["machine state"]),
        ("the load average was 3", ["machine state"]),
        ("a background job (paused)", ["machine state"]),
        ("10,074,497 parameters, 2.45x, beam 4, sha256 in `model_sha256`", []),
        ("see https://github.com/x/y/commit/0123abc4567", []),
        ("trained with today's defaults", ["relative time"]),
        ("`--epochs auto` now plans at most 16 epochs", ["relative time"]),
        ("Today the default is cosine; at present it is", ["relative time"]),
        ("it currently supports beam search", ["relative time"]),
        ("a known word, nowhere, snow, the default plans its steps", []),
        (
            '<!-- figure("a", "b") -->1<!-- /figure --> <!-- provenance() -->\n| `985160d` | 2026-12-02 |\n<!-- /provenance -->',
            [],
        ),
    ],
)
def test_the_patterns_find_what_they_should(line, kinds):
    found = problems("page.md", line)
    assert [kind for kind in KINDS if any(f": {kind} " in p for p in found)] == kinds


# ------------------------------------------------------------------ figures typed by hand

# A measured figure in prose: a number with a unit of measurement (a ratio `1.76x`, a
# share, a time, a size, a rate), or a bare number with two or more decimals (a BLEU
# score, a loss, a weight). Pages render measured figures with `{{ figure(...) }}` (the
# README between `<!-- figure(...) -->` markers); what is left in prose must be a setting,
# a threshold, a definition or a version, named below with the reason. Bare integers and
# one-decimal numbers without a unit (counts, `4,000 steps`, `BLEU 4.2`) are not caught:
# too many are settings to tell them apart by their form.
_NUMBER = r"(?<![\w.`/#^$=])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
MEASURED = re.compile(
    _NUMBER + r"(?:x(?![A-Za-z\d])|\s?%|\s?(?:ms|s|MB|MiB|GB|GiB|kB|GFLOP/s|tokens/s"
    r"|target tokens/s|req/s|sentences/s|s/step)(?![\w/]))"
    r"|(?<![\w.`/#^$=-])\d+\.\d{2,}(?![\d.]*\w)"
)
VERSION = re.compile(
    r"\b(?:TensorFlow|Keras|Python|tensorflow-text|TensorBoard|tensorflow-serving-api|glibc"
    r"|Serving|TF|CC-BY|CPython|macOS|version)\s+(?:>=\s*)?\d+\.\d+(?:\.\d+)?"
    r"(?:(?:,\s*|–|-)\d+\.\d+)*"
)
CODE_FENCES = {"bash", "sh", "shell", "console", "python", "py", "yaml", "yml", "json", "toml"}
CODE_FENCES |= {"dockerfile", "ini", "proto", "js", "javascript", "html", "css"}

_PYTHON_VERSIONS = dict.fromkeys(("3.10", "3.11", "3.12", "3.13", "3.14"), "a Python version")
_WORDS_COVERAGE = "`auto`'s rule: the word vocabularies' least coverage (WORDS_MIN_COVERAGE)"
_ONCE_PER_PAIR = "`auto`'s rule: words seen once per pair (SUBWORDS_MIN_SOURCE_ONCE_PER_PAIR)"
NOT_MEASURED = {
    "README.md": _PYTHON_VERSIONS,
    "docs/install.md": _PYTHON_VERSIONS,
    "docs/cli.md": {"98%": _WORDS_COVERAGE, "0.15": _ONCE_PER_PAIR, "2%": "the schedule's end"},
    "docs/training.md": {
        "2 %": "the cosine schedule decays to 2 % of the learning rate (a setting)",
        "1.2x": "the precision probe's threshold (a setting)",
        "5 %": "the budget plan's lengthening threshold, `LENGTHEN_SHARE` (a setting)",
        "98 %": _WORDS_COVERAGE,
        "98%": _WORDS_COVERAGE,
        "0.15": _ONCE_PER_PAIR,
    },
    "docs/quickstart.md": {"2 %": "`auto`'s rule: the share of unknown words (a threshold)"},
    "docs/data.md": {"2 %": "the test split's share and `auto`'s threshold (settings)"},
    "docs/results.md": {
        "2 %": "the test split's share (`split_corpus`'s default)",
        "98 %": _WORDS_COVERAGE,
        "0.15": _ONCE_PER_PAIR,
    },
    "docs/serving.md": {
        "400s": "HTTP status codes",
        "64 MiB": "`--max_request_bytes`'s default",
        "30 s": "the server's timeouts (settings)",
    },
    "docs/distributed.md": {
        "300 s": "the workers' wait, in an error message (a setting)",
        "5 %": "the multi-worker test's tolerance on the losses (a setting)",
    },
    "docs/export.md": {
        "1.6 MB": "the shortlist table's size computed from its shape (8,000 x 50 int32)",
        "0.02": "a bound on the BLEU change the export table shows",
    },
    "docs/layers.md": {"0.45": "a bound computed from the formula beside it"},
    "docs/steerable-decoding.md": {
        "0.3": "the confidence correlation the feature was set to reach (a target)",
        "30 %": "the constrained speed the feature was set to reach (a target)",
    },
    "docs/captioning.md": {
        "90 %": "the exact-match target the example was set to reach (a target)",
        "80 %": "the colour-attention target the example was set to reach (a target)",
    },
    "docs/research/index.md": {"0.05": "an initializer's range (a setting)"},
    "docs/peers.md": {
        "97 %": "the share of the budget the OpenNMT-py plan fills (a setting)",
        "105 %": "the overrun at which an OpenNMT-py training is stopped (a setting)",
    },
    "docs/research/model-notes.md": {"1.00": "the definition of a uniform distribution's score"},
    "docs/benchmarks.md": {"1.2x": "the seq2seq decoder's speed target (a target)"},
}

# Pages whose figures another change is moving into results files.
FIGURES_PENDING: dict[str, str] = {}


def typed_figures(name: str, text: str) -> list[str]:
    """Measured figures in `text`'s prose outside figure calls, less the named settings."""
    text = figures.MARKER.sub(lambda m: "F" + re.sub(r"[^\n]", "", m[0]), text)
    text = figures.CALL.sub(lambda m: "F" + re.sub(r"[^\n]", "", m[0]), text)
    text = re.sub(r"<!--.*?-->", lambda m: re.sub(r"[^\n]", "", m[0]), text, flags=re.DOTALL)
    allowed = NOT_MEASURED.get(name, {})
    found, fence = [], None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = None if fence is not None else (stripped[3:].strip().lower() or "text")
            continue
        if fence in CODE_FENCES:
            continue
        # Inline code is a command or a name, unless it quotes printed figures.
        line = URL.sub("", line)
        line = re.sub(r"`-[^`]*`|`[^`\d]*`|`[\w.]*\d[\w.]*`", "``", line)
        for match in MEASURED.finditer(VERSION.sub("V", line)):
            if match[0] not in allowed:
                found.append(f"{name}:{number}: {match[0]!r}: {stripped[:120]}")
    return found


def _figures_param(page):
    name = str(page.relative_to(REPOSITORY))
    marks = []
    if name in FIGURES_PENDING:
        marks = [pytest.mark.xfail(strict=True, reason=f"pending: {FIGURES_PENDING[name]}")]
    return pytest.param(page, id=name, marks=marks)


@pytest.mark.parametrize("page", [_figures_param(page) for page in PAGES])
def test_no_measured_figure_is_typed_in_prose(page):
    name = str(page.relative_to(REPOSITORY))
    found = typed_figures(name, page.read_text(encoding="utf-8"))
    assert not found, "\n".join(
        [
            f"{len(found)} typed in {name}: render them from a results file with figure(), "
            "or name a setting in NOT_MEASURED:"
        ]
        + found[:40]
    )


@pytest.mark.parametrize(
    "line, found",
    [
        (
            "decodes 1.76x as fast, 9.6 ms (p50), 5,934 target tokens/s",
            ["1.76x", "9.6 ms", "5,934 target tokens/s"],
        ),
        ("beam BLEU 47.41 against 46.20; loss 1.067", ["47.41", "46.20", "1.067"]),
        ("the variables take 25.0 MB, 30.5 % of the peak", ["25.0 MB", "30.5 %"]),
        ('{{ figure("a", "b", ".2f") }}x and <!-- figure("a", "b") -->1.5<!-- /figure -->x', []),
        ("TensorFlow 2.21 and Keras 3.15, `--steps 600`, batch 64, 4,000 steps, bf16, p50", []),
        ("```bash\nkeras-attention train --epochs 3   # 1.50x\n```", []),
        ("```text\ndefault export: 2.45x float32\n```", ["2.45x"]),
        ("printed `default: 2.01x tutorial (bf16)`", ["2.01x"]),
    ],
)
def test_the_figure_pattern_finds_what_it_should(line, found):
    assert [item.split(": ")[1].strip("'") for item in typed_figures("page.md", line)] == found


# `pip install keras-attention` (or `-client`) by name: the package index's
# `keras-attention` is another project (docs/install.md); ours installs from a clone.
INDEX_INSTALL = re.compile(
    r"""pip install\s+(?:-U\s+)?["']?keras-attention(?:-client)?\b(?![/\w.-])"""
)
INSTALL_PAGES = PAGES + [
    REPOSITORY / "serving" / "client" / "README.md",
    REPOSITORY / "deploy" / "README.md",
]


@pytest.mark.parametrize("page", INSTALL_PAGES, ids=lambda p: str(p.relative_to(REPOSITORY)))
def test_no_install_from_the_package_index(page):
    found = [
        f"{page.relative_to(REPOSITORY)}:{number}: {line.strip()}"
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if INDEX_INSTALL.search(line)
    ]
    assert not found, "install from a clone (pip install -e . / ./serving/client):\n" + "\n".join(
        found
    )


@pytest.mark.parametrize(
    "line, found",
    [
        ('pip install "keras-attention[litert]"', True),
        ("pip install keras-attention-client", True),
        ("pip install -U 'keras-attention'", True),
        ('pip install -e ".[litert]"', False),
        ('pip install "./serving/client[litert]"', False),
        ("pip install -e ./serving/client -e .", False),
    ],
)
def test_the_index_install_pattern_finds_what_it_should(line, found):
    assert bool(INDEX_INSTALL.search(line)) is found
