"""A table labelled as a command's result shows only records that command made.

A label is the `keras-attention train ...` command written above a table, in a bash
block or in inline code, between the table and the heading or table before it. Every
figure of the table that reads `default_run.json` must come from a record whose
`machine.command` (the nearest one on the figure's key path, as the provenance table
shows it) ran the label's `keras-attention` steps, option for option (it may have run
more, e.g. `evaluate` after the labelled `train`). A record made with
`--time-budget-minutes 120` or `--data ...` fails under a label without them; the code
version is not compared here (the provenance table shows it), except for the Quickstart's
records, which must have the defaults of `TrainConfig`. oneDNN's instruction-set cap (`ONEDNN_MAX_CPU_ISA=...`), the stand-in for a
CPU without native bfloat16, is not an option of the command.

The README's Quickstart command, and the records `quickstart.<kind>` that
`benchmarks/default_run.py --quickstart` makes by running it, are checked too: each record
ran that command exactly, at the defaults `TrainConfig` has.
"""

import re

import pytest
from helpers.docs_site import REPOSITORY, load_docs_module

from keras_attention.runs.train_config import TrainConfig

figures = load_docs_module("docs/hooks/figures.py")
README = REPOSITORY / "README.md"
PAGES = [README, *sorted((REPOSITORY / "docs").rglob("*.md"))]
FIGURE = re.compile(r'figure\(\s*"default_run",\s*"([^"]+)"(.*?)\)', re.DOTALL)
OTHER_KEY = re.compile(r'(?:over|minus)="([^"]+)"')
CODE = re.compile(r"```bash\n(.*?)```|`([^`]+)`", re.DOTALL)
CAP = re.compile(r"^ONEDNN_MAX_CPU_ISA=\S+\s+")


def quickstart_command() -> str:
    """The README's Quickstart command: the first bash block under `## Quickstart`."""
    section = README.read_text(encoding="utf-8").split("\n## Quickstart\n", 1)[1]
    return re.search(r"```bash\n(.*?)\n```", section, flags=re.DOTALL).group(1).strip()


def steps(command: str) -> tuple[str, ...]:
    """The `keras-attention` commands of a shell line, in order, words normalized."""
    found = []
    for part in re.split(r"&&|;|\n", command):
        part = CAP.sub("", part.split("#", 1)[0].strip())
        if part.startswith("keras-attention "):
            found.append(" ".join(part.split()))
    return tuple(found)


def labelled_tables(markdown: str) -> list[tuple[set[tuple[str, ...]], str]]:
    """(the label commands' steps, the table's text) for each table with a label."""
    tables, context, rows = [], [], []
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("|"):
            rows.append(line)
            continue
        if rows:
            labels = {
                found
                for match in CODE.finditer("\n".join(context))
                if (found := steps(match.group(1) or " ".join(match.group(2).split())))
                and found[0].startswith("keras-attention train")
            }
            if labels:
                tables.append((labels, "\n".join(rows)))
            context, rows = [], []
        if line.startswith("#"):
            context = []
        context.append(line)
    return tables


def figure_keys(text: str) -> list[str]:
    keys = []
    for match in FIGURE.finditer(text):
        keys.append(match.group(1))
        keys += OTHER_KEY.findall(match.group(2))
    return keys


def test_steps_reads_the_keras_attention_commands_of_a_line():
    line = "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && keras-attention train && keras-attention evaluate runs/fra-eng"
    assert steps(line) == ("keras-attention train", "keras-attention evaluate runs/fra-eng")
    capped = (
        "ONEDNN_MAX_CPU_ISA=AVX2 keras-attention train  --out RUN && keras-attention evaluate RUN"
    )
    assert steps(capped) == ("keras-attention train --out RUN", "keras-attention evaluate RUN")
    assert steps("keras-attention train --time-budget-minutes 120") != steps(
        "keras-attention train"
    )


def test_a_table_under_a_label_is_found_with_its_figures():
    page = (
        "## A\n\n```bash\nkeras-attention train && keras-attention evaluate runs/fra-eng\n```\n\n"
        '| a |\n| --- |\n| {{ figure("default_run", "runs.x.training.seconds", over="runs.y.s") }} |\n\n'
        "## B\n\n| b |\n| --- |\n"
    )
    [(labels, table)] = labelled_tables(page)
    assert labels == {("keras-attention train", "keras-attention evaluate runs/fra-eng")}
    assert figure_keys(table) == ["runs.x.training.seconds", "runs.y.s"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPOSITORY)))
def test_labelled_tables_read_records_of_their_command(page):
    for labels, table in labelled_tables(page.read_text(encoding="utf-8")):
        for key in figure_keys(table):
            _, machine = figures.lookup("default_run", key)
            assert machine and machine.get("command"), f"{page.name}: {key} has no command"
            made = set(steps(machine["command"]))
            assert any(set(label) <= made for label in labels), (
                f"{page.name}: a table labelled {sorted(labels)} shows {key}, "
                f"made by {machine['command']!r}"
            )


def test_readme_shows_the_quickstart_records_under_the_quickstart_command():
    text = README.read_text(encoding="utf-8")
    command = quickstart_command()
    tables = labelled_tables(text)
    quickstart_tables = [t for labels, t in tables if steps(command) in labels]
    assert quickstart_tables, "README has no table labelled with the Quickstart's command"
    keys = [key for table in quickstart_tables for key in figure_keys(table)]
    assert keys and all(key.startswith("quickstart.") for key in keys), keys


def test_quickstart_records_ran_the_quickstart_command_at_the_defaults():
    records = figures.load("default_run")["quickstart"]
    assert set(records) <= {"native_bf16", "no_native_bf16"} and records
    defaults = TrainConfig()
    for kind, record in records.items():
        assert record["machine"]["command"] == quickstart_command(), kind
        config = record["config"]
        assert config["time_budget_minutes"] == defaults.time_budget_minutes, kind
        assert config["batch_size"] == defaults.batch_size, kind
        expected = "mixed_bfloat16" if kind == "native_bf16" else "float32"
        assert config["precision"] == expected, kind
        assert record["evaluation"]["replace_unknown"] is False, kind
        assert record["evaluation_replaced"]["replace_unknown"] is True, kind
