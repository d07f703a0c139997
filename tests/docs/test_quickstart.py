"""The Quickstart page's commands, run as written in a fresh directory, with a tiny
training budget: train, evaluate, translate, export, serve, the client from Python and
from the shell; and the README's step-by-step block, which must be the page's.

The page's code blocks are read from docs/quickstart.md and run by bash, with the changes
`helpers.page_commands` lists (tiny training flags, free ports, longer client waits,
`tensorboard` left out). The README's Python block runs beside the page's against the
same server. The section "Other corpora and directions" is parsed, not run. About 5-8
minutes on 2 CPU cores.
"""

import re
import sys

import pytest
from helpers.docs_site import REPOSITORY
from helpers.page_commands import (
    DOCS,
    PageShell,
    as_run,
    block_as_run,
    blocks,
    commands,
    parse_only,
    sections,
)

PAGE = DOCS / "quickstart.md"
README = REPOSITORY / "README.md"


def readme_blocks(language: str) -> list[str]:
    return blocks(sections(README.read_text(encoding="utf-8"))["Quickstart"], language)


def test_sections_hold_the_commands_this_test_runs():
    page = sections(PAGE.read_text(encoding="utf-8"))
    first = blocks(page[""], "bash")[0]
    for command in ("train", "evaluate", "translate", "export", "serve"):
        assert re.search(rf"^keras-attention {command}\b", first, flags=re.M), command
    assert "kill $!" in first
    assert blocks(page["Calling the served model"], "python")
    assert re.search(
        r"Start the server again \(`keras-attention serve", page["Calling the served model"]
    )


def test_the_readme_steps_are_the_quickstarts():
    page = sections(PAGE.read_text(encoding="utf-8"))
    assert commands(readme_blocks("bash")[1]) == commands(blocks(page[""], "bash")[0])
    assert "TranslationClient(" in readme_blocks("python")[0]


def test_the_other_corpora_commands_parse():
    """Run, they would be three more trainings; `keras-attention`'s parser checks their
    flags and values, and tests/data and tests/training what they do."""
    section = sections(PAGE.read_text(encoding="utf-8"))["Other corpora and directions"]
    parsed = [
        part
        for block in blocks(section, "bash")
        for command in commands(block)
        for part in command.split(" && ")
    ]
    for command in parsed:
        parse_only(command)
    assert len(parsed) == 5, parsed


@pytest.mark.slow
def test_the_quickstart_runs_as_written(tmp_path):
    page = sections(PAGE.read_text(encoding="utf-8"))
    shell = PageShell(tmp_path)

    out = shell.bash(block_as_run(blocks(page[""], "bash")[0], shell.ports), timeout=900)
    assert (tmp_path / "runs/fra-eng/model.keras").is_file()
    assert (tmp_path / "exports/fra-eng/1/saved_model.pb").is_file()
    assert "serving fra-eng (version 1)" in out

    shell.bash(block_as_run(blocks(page["More from the trained run"], "bash")[0], shell.ports), 600)
    assert list((tmp_path / "runs/fra-eng/plots").glob("*.png"))

    served = page["Calling the served model"]
    start = " ".join(re.search(r"Start the server again \(`(.*?)`\)", served, re.DOTALL)[1].split())
    (tmp_path / "client.py").write_text(as_run(blocks(served, "python")[0], shell.ports))
    (tmp_path / "readme.py").write_text(as_run(readme_blocks("python")[0], shell.ports))
    script = "\n".join(
        [
            as_run(start, shell.ports),
            block_as_run(blocks(served, "bash")[0], shell.ports),  # waits for the server
            f"{sys.executable} client.py",
            f"{sys.executable} readme.py",
            "kill $!",
        ]
    )
    out = shell.bash(script, timeout=600)
    # The ready line, a line per sentence from the two shell clients, the three sentences
    # of the page's Python block and the two of the README's (a tiny model may translate
    # to an empty line).
    lines = out.splitlines()
    assert lines[0].startswith("keras-attention serve: serving fra-eng (version 1)")
    assert len(lines) == 1 + 2 + 3 + 2, out
