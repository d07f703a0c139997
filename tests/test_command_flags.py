"""Every command answers `--version` and states its defaults in `--help`; `serve` takes
TF Serving's underscore spellings as aliases of its dashed flags."""

import argparse

import pytest
from helpers.docs_site import load_docs_module

from keras_attention.cli import build_parser, main
from keras_attention.serving.server import cli as server_cli
from keras_attention_client import cli as client_cli

reference = load_docs_module("docs/gen_cli_reference.py")
COMMANDS = [name for name, _, _ in reference.subcommands(build_parser())]


def all_parsers():
    """(command line, parser) of every command and subcommand."""
    found = []
    for prog, parser in (
        ("keras-attention", build_parser()),
        ("keras-attention-client", client_cli.build_parser()),
        ("python -m keras_attention.serving", server_cli.build_parser()),
    ):
        found.append((prog, parser))
        found += [(f"{prog} {name}", sub) for name, _, sub in reference.subcommands(parser)]
    return found


@pytest.mark.parametrize(
    "command", [[], *([name] for name in COMMANDS)], ids=lambda c: " ".join(c) or "keras-attention"
)
def test_every_keras_attention_command_answers_version(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith("keras-attention-seq2seq ")


@pytest.mark.parametrize(
    "run, distribution",
    [
        (lambda: client_cli.main(["--version"]), "keras-attention-client "),
        (lambda: client_cli.main(["translate", "--version"]), "keras-attention-client "),
        (lambda: server_cli.main(["--version"]), "keras-attention-seq2seq "),
    ],
    ids=[
        "keras-attention-client",
        "keras-attention-client translate",
        "python -m keras_attention.serving",
    ],
)
def test_the_client_and_the_server_module_answer_version(run, distribution, capsys):
    with pytest.raises(SystemExit) as exit_:
        run()
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(distribution)


def test_every_option_with_a_default_states_it_in_its_help():
    missing = []
    for prog, parser in all_parsers():
        for action in parser._actions:
            if (
                not action.option_strings
                or isinstance(action, argparse._HelpAction)
                or action.default in (None, "", False, argparse.SUPPRESS)
                or reference.is_switch(action)
                or action.required
            ):
                continue
            if "default" not in reference.expand_help(action, parser.prog):
                missing.append(
                    f"{prog} {'/'.join(action.option_strings)} (default {action.default!r})"
                )
    assert not missing, "options whose --help does not state their default:\n" + "\n".join(missing)


def test_the_cli_reference_default_column_is_never_none_where_help_states_one():
    for prog, parser in all_parsers():
        for action in parser._actions:
            # An option whose default is None (not given: a library default applies).
            if (
                action.option_strings
                and action.default is None
                and reference.stated_default(action)
            ):
                assert reference.format_default(action) == reference.stated_default(action), (
                    f"{prog} {action.option_strings}"
                )


def test_the_cli_reference_says_required_and_real_defaults():
    page = (reference.PAGE).read_text(encoding="utf-8")
    assert "| `--export-dir BASE` | `required` |" in page
    assert "| `--model-version N` | `the highest existing version + 1, or 1` |" in page
    assert "| `--score-scale, --no-score-scale` | `on for cosine" in page


def test_serve_takes_tf_servings_underscore_spellings_as_aliases():
    parser = build_parser()
    dashed = parser.parse_args(
        [
            "serve",
            "--model-name",
            "m",
            "--model-base-path",
            "/b",
            "--port",
            "1",
            "--rest-api-port",
            "2",
        ]
    )
    underscored = parser.parse_args(
        [
            "serve",
            "--model_name",
            "m",
            "--model_base_path",
            "/b",
            "--port",
            "1",
            "--rest_api_port",
            "2",
        ]
    )
    assert vars(dashed) == vars(underscored)
    assert (dashed.model_name, dashed.model_base_path, dashed.port, dashed.rest_api_port) == (
        "m",
        "/b",
        1,
        2,
    )


def test_export_takes_model_version_and_version_prints_the_version(capsys):
    args = build_parser().parse_args(["export", "run", "--export-dir", "b", "--model-version", "3"])
    assert args.model_version == 3
    with pytest.raises(SystemExit):
        main(["export", "run", "--export-dir", "b", "--version"])
    assert capsys.readouterr().out.startswith("keras-attention-seq2seq ")
