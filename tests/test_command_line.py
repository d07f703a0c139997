"""The keras-attention command line, end to end on a tiny trained run."""

import dataclasses
import json
import shutil
import subprocess
import sys

import pytest
from helpers.subprocesses import modules_loaded_by
from helpers.training_runs import train_argv

from keras_attention.cli import build_parser, main


def test_help_is_instant_and_lists_commands():
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from keras_attention.cli import main; main(['--help'])",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0
    for command in ("train", "evaluate", "translate", "plot"):
        assert command in result.stdout
    assert "tensorflow" not in modules_loaded_by("from keras_attention import cli")


def test_evaluate_writes_bleu_and_signature(trained_digits_run, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(trained_digits_run, run)
    assert main(["evaluate", str(run), "--beam", "3", "--max-sentences", "40"]) == 0
    out = capsys.readouterr().out
    assert "sacreBLEU signature: nrefs:" in out and "tok:13a" in out
    evaluation = json.loads((run / "metrics.json").read_text())["evaluation"]
    assert evaluation["sentences"] == 40
    for name in ("greedy", "beam"):
        assert evaluation[name]["bleu"] > 30, evaluation[name]
        assert evaluation[name]["bleu_by_length"]
    assert (run / "translations.beam.tsv").read_text().count("\n") == 40
    assert evaluation["replace_unknown"] is True  # a word run: on by default
    argv = ["evaluate", str(run), "--beam", "1", "--max-sentences", "5", "--no-replace-unknown"]
    assert main(argv) == 0
    assert json.loads((run / "metrics.json").read_text())["evaluation"]["replace_unknown"] is False


def test_translate_arguments_file_and_stdin(trained_digits_run, tmp_path, capsys, monkeypatch):
    assert main(["translate", str(trained_digits_run), "1 2 3", "4 5 6 7"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].split()[0] == "un"

    source = tmp_path / "in.txt"
    source.write_text("8 9\n0 1 2\n", encoding="utf-8")
    assert main(["translate", str(trained_digits_run), "--file", str(source), "--beam", "2"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2

    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("3 3 3\n"))
    assert main(["translate", str(trained_digits_run), "--show-attention"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("trois")
    assert "3" in out  # the alignment names the source tokens


def test_translate_saves_heatmaps(trained_digits_run, tmp_path):
    assert (
        main(
            [
                "translate",
                str(trained_digits_run),
                "5 6 7",
                "--show-attention",
                "--attention-dir",
                str(tmp_path),
            ]
        )
        == 0
    )
    assert (tmp_path / "attention_0000.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_writes_pngs(trained_digits_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(trained_digits_run, run)
    main(["evaluate", str(run), "--beam", "1", "--max-sentences", "20"])
    out = tmp_path / "plots"
    assert main(["plot", str(run), str(run), "--sentence", "1 2 3", "--out", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["attention_00.png", "bleu_by_length.png", "training_curves_run.png"]


def test_translate_sample_flags(trained_digits_run, capsys):
    texts = ["1 2 3", "4 5 6 7", "8 9 0", "5 5"]
    assert main(["translate", str(trained_digits_run), *texts]) == 0
    greedy = capsys.readouterr().out
    assert main(["translate", str(trained_digits_run), *texts, "--sample", "--top-k", "1"]) == 0
    assert capsys.readouterr().out == greedy

    seeded = ["--sample", "--temperature", "5", "--seed", "11", "--format", "json"]
    outputs = []
    for _ in range(2):
        assert main(["translate", str(trained_digits_run), *texts, *seeded]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    records = [json.loads(line) for line in outputs[0].splitlines()]
    assert [r["source"] for r in records] == texts
    assert all(r["score"] <= 0 for r in records)


def test_translate_confidence(trained_digits_run, capsys):
    """`--confidence` prints CONFIDENCE<TAB>TRANSLATION<TAB>TOKEN:P ...; the confidence is
    the geometric mean of the token probabilities, the end token's included."""
    import math

    texts = ["1 2 3", "4 5 6 7"]
    for beam in ("1", "3"):
        assert main(["translate", str(trained_digits_run), *texts, "--beam", beam]) == 0
        plain = capsys.readouterr().out.splitlines()
        args = ["translate", str(trained_digits_run), *texts, "--beam", beam]
        assert main([*args, "--confidence"]) == 0
        lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
        assert [line[1] for line in lines] == plain
        assert main([*args, "--format", "json"]) == 0
        records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        for (confidence, _, pairs), record in zip(lines, records, strict=True):
            probabilities = record["token_probabilities"]
            assert [pair.rsplit(":", 1)[0] for pair in pairs.split(" ")] == record["tokens"]
            assert len(probabilities) == record["length"]
            assert all(0 < p <= 1 for p in probabilities)
            # The tokens' and the end token's log-probabilities sum to the score.
            scored = record["length"] + 1
            assert record["confidence"] == pytest.approx(math.exp(record["score"] / scored))
            assert float(confidence) == pytest.approx(record["confidence"], abs=5e-4)
            end_log_prob = record["score"] - sum(math.log(p) for p in probabilities)
            assert end_log_prob <= 1e-5


@pytest.mark.parametrize("command", ["translate", "evaluate", "export"])
def test_beam_width_has_one_spelling_and_an_alias(command):
    from keras_attention.cli import build_parser

    extra = ["--export-dir", "/tmp/unused"] if command == "export" else []
    parser = build_parser()
    spelled = parser.parse_args([command, "run", *extra, "--beam-width", "3"])
    alias = parser.parse_args([command, "run", *extra, "--beam", "3"])
    # Only the spelling differs: over the wire `--beam N` alone keeps calling beam_search.
    spellings = vars(spelled).pop("beam_option", None), vars(alias).pop("beam_option", None)
    assert spellings in ((None, None), ("--beam-width", "--beam"))
    assert vars(spelled) == vars(alias)
    assert spelled.beam_width == 3  # one name for the flag on every command


@pytest.mark.parametrize(
    "argv, message",
    [
        (["translate", "run", "hi", "--temperature", "0.5"], "--temperature only go with --sample"),
        (["translate", "run", "--top-k", "3", "--seed", "1"], "--top-k, --seed only go with"),
        (["translate", "--server", "localhost:1", "hi", "--sample", "--n-best", "2"], "cannot"),
        (["translate", "run", "hi", "--sample", "--beam", "4"], "cannot be combined"),
    ],
)
def test_bad_sampling_flags_give_a_clear_error(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_bad_sampling_values_give_a_clear_error(trained_digits_run, capsys):
    argv = ["translate", str(trained_digits_run), "1 2", "--sample", "--temperature", "0"]
    assert main(argv) == 2
    assert "temperature=0.0" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["evaluate", "/nonexistent/run"], "does not exist"),
        (["translate", "/nonexistent/run", "hi"], "does not exist"),
        (["translate"], "RUN_DIR"),
        (
            ["train", "--attention", "luong", "--score", "dot", "--decoder-units", "7"]
            + ["--out", "/tmp/x"],
            "twice",
        ),
        (["train", "--data", "/nonexistent.tsv", "--out", "/tmp/ka-missing"], "nonexistent"),
    ],
)
def test_bad_input_gives_a_clear_error(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_train_twice_has_nothing_to_do_and_other_options_are_refused(
    trained_digits_run, tmp_path, capsys
):
    from keras_attention.runs.train_config import TrainConfig

    run = tmp_path / "fra-eng"
    shutil.copytree(trained_digits_run, run)
    config = dataclasses.replace(TrainConfig.load(run), out=str(run))
    argv = train_argv(config)
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert (
        captured.out
        == f"keras-attention train: {run} already completed (3 epochs); nothing to do\n"
    )
    assert captured.err == ""
    # So `train && evaluate`, pasted again, runs through.
    assert main(["evaluate", str(run), "--beam-width", "1", "--max-sentences", "5"]) == 0
    capsys.readouterr()

    assert main([*argv, "--epochs", "5", "--batch-size", "16"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"keras-attention train: error: '{run}' already holds a completed")
    assert "batch_size: 32 -> 16; epochs: 3 -> 5 (saved -> given)" in err


# `keras-attention translate` flags the client's translate lacks (the decoding flags are
# shared: with --server they are the export's decoding inputs).
LOCAL_TRANSLATE_FLAGS = {
    "--show-attention",
    "--attention-dir",
    "--replace-unknown",
    "--no-replace-unknown",
}


def translate_flags(parser) -> dict[tuple[str, ...], tuple]:
    """The `translate` command's flags: option strings -> (dest, default, choices)."""
    import argparse

    def default(action):
        value = action.default
        if value is argparse.SUPPRESS:  # left unset: the top-level parser's value stands
            value = parser.get_default(action.dest)
        return None if value is argparse.SUPPRESS else value

    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {
        tuple(action.option_strings): (action.dest, default(action), action.choices)
        for action in commands.choices["translate"]._actions
        if action.option_strings
    }


def test_both_translate_commands_take_the_same_flags_with_the_same_defaults():
    from keras_attention.cli import build_parser
    from keras_attention_client import cli as client_cli

    ours = translate_flags(build_parser())
    local = {flags for flags in ours if set(flags) & LOCAL_TRANSLATE_FLAGS}
    assert {flag for flags in local for flag in flags} == LOCAL_TRANSLATE_FLAGS
    shared = {flags: value for flags, value in ours.items() if flags not in local}
    assert shared == translate_flags(client_cli.build_parser())
    assert shared[("--beam-width", "--beam")] == ("beam_width", 1, None)
    assert shared[("--batch-size",)] == ("batch_size", 64, None)
    assert shared[("--format",)] == ("output_format", "text", ["text", "json"])
    assert shared[("--timeout",)] == ("timeout", 30.0, None)
    args = client_cli.build_parser().parse_args(["translate", "--beam-width", "4", "x"])
    assert (args.beam_width, args.texts) == (4, ["x"])


def test_beam_width_help_says_it_is_the_exports_input(capsys):
    from keras_attention_client import cli as client_cli

    for command in (lambda: main(["translate", "--help"]), lambda: client_cli.main(["translate", "--help"])):  # fmt: skip
        with pytest.raises(SystemExit):
            command()
        help_text = " ".join(capsys.readouterr().out.split())
        assert "--beam is the same flag" in help_text and "max_beam_width" in help_text
        assert "beam_width" in help_text and "alone calls beam_search" not in help_text


OPTIONS_ANYWHERE = [
    # (argv with the options first, the same with them last, the fields compared)
    (
        ["translate", "--beam-width", "4", "RUN", "I am very happy."],
        ["translate", "RUN", "I am very happy.", "--beam-width", "4"],
        ("run_dir", "texts", "beam_width"),
    ),
    (
        ["translate", "RUN", "--batch-size", "3", "a", "--show-attention", "b"],
        ["translate", "RUN", "a", "b", "--batch-size", "3", "--show-attention"],
        ("run_dir", "texts", "batch_size", "show_attention"),
    ),
    (["status", "--json", "RUN"], ["status", "RUN", "--json"], ("run_dir", "json")),
    (
        ["evaluate", "--max-sentences", "5", "RUN"],
        ["evaluate", "RUN", "--max-sentences", "5"],
        ("run_dir", "max_sentences"),
    ),
    (
        ["plot", "--out", "o", "R1", "--sentence", "s", "R2"],
        ["plot", "R1", "R2", "--out", "o", "--sentence", "s"],
        ("run_dirs", "out", "sentence"),
    ),
    (
        ["export", "--export-dir", "B", "--model-version", "2", "RUN"],
        ["export", "RUN", "--export-dir", "B", "--model-version", "2"],
        ("run_dir", "export_dir", "model_version"),
    ),
    (
        ["check-export", "--native", "P"],
        ["check-export", "P", "--native"],
        ("native",),
    ),
]


@pytest.mark.parametrize(
    "first, last, fields", OPTIONS_ANYWHERE, ids=lambda v: v[0] if isinstance(v, list) else ""
)
def test_options_go_before_between_or_after_positionals(first, last, fields):
    """Every command with positionals takes its options anywhere among them."""
    parser = build_parser()
    assert {f: getattr(parser.parse_args(first), f) for f in fields} == {
        f: getattr(parser.parse_args(last), f) for f in fields
    }


def test_double_dash_still_ends_the_options():
    args = build_parser().parse_args(["translate", "RUN", "--beam-width", "2", "--", "-5 °C"])
    assert (args.run_dir, args.texts, args.beam_width) == ("RUN", ["-5 °C"], 2)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["translate", "RUN", "text", "--no-such-option"])


def test_the_client_and_the_export_module_take_options_anywhere():
    from keras_attention.cli import build_parser as export_parser
    from keras_attention_client.cli import build_parser as client_parser

    client = client_parser().parse_args(
        ["translate", "--server", "h:1", "a", "--beam-width", "3", "b"]
    )
    assert (client.texts, client.beam_width) == (["a", "b"], 3)
    exported = export_parser().parse_args(["export", "--export-dir", "B", "RUN"])
    assert (exported.run_dir, exported.export_dir) == (["RUN"], "B")


@pytest.mark.parametrize(
    "flags, signature",
    [
        ([], "serving_default"),
        (["--signature", "beam_search"], "beam_search"),
        (["--beam", "3"], "search"),
        (["--signature", "beam_search", "--n-best", "2", "--beam", "2"], "search"),
        (["--sample", "--seed", "1"], "sample"),
    ],
)
def test_plot_titles_name_the_signature_the_client_calls(flags, signature):
    """`translate --server`'s plot title names the signature the client's own routing
    rule (`decoding_request`) sends the request to."""
    from keras_attention.cli.translate_command import decoding_name

    args = build_parser().parse_args(["translate", "--server", "localhost:1", *flags, "x"])
    assert decoding_name(args).endswith(f", {signature} signature")
