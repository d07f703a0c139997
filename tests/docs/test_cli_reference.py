"""docs/cli.md: current with the parsers, and a row for every training option."""

import dataclasses

from helpers.docs_site import REPOSITORY, load_docs_module

from keras_attention.cli import build_parser
from keras_attention.runs.train_config import TrainConfig

generator = load_docs_module("docs/gen_cli_reference.py")
PAGE = REPOSITORY / "docs" / "cli.md"


def subparser(parser, name):
    return {command: sub for command, _, sub in generator.subcommands(parser)}[name]


def test_committed_page_is_what_the_generator_writes():
    committed = PAGE.read_text(encoding="utf-8")
    assert committed == generator.render(), (
        f"docs/cli.md differs from the command-line parsers: run `{generator.COMMAND}` "
        "and commit docs/cli.md"
    )


def test_every_train_config_field_has_a_flag_and_a_row():
    train = subparser(build_parser(), "train")
    flags = {option for action in train._actions for option in action.option_strings}
    page = PAGE.read_text(encoding="utf-8")
    section = page.split("### keras-attention train", 1)[1].split("\n### ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `--")]
    for field in dataclasses.fields(TrainConfig):
        flag = "--" + field.name.replace("_", "-")
        assert flag in flags, f"TrainConfig.{field.name} has no {flag} in `keras-attention train`"
        assert any(row.startswith((f"| `{flag} ", f"| `{flag},")) for row in rows), (
            f"docs/cli.md has no row for {flag} (TrainConfig.{field.name}): "
            f"run `{generator.COMMAND}`"
        )


def test_every_command_has_a_section():
    page = PAGE.read_text(encoding="utf-8")
    for name, _, _ in generator.subcommands(build_parser()):
        assert f"\n### keras-attention {name}\n" in page
    assert "\n### keras-attention-client translate\n" in page


def test_table_cells_escape_markdown():
    assert generator.escape("a|b <TAB> x_y") == "a\\|b &lt;TAB&gt; x\\_y"
    assert generator.code("--x {a|b}") == "`--x {a\\|b}`"
