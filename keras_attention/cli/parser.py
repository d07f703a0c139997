"""The `keras-attention` parser: every subcommand, its flags and its handler.

The train flags are `TrainConfig`'s fields, the decoding flags the client's
(`keras_attention_client.decoding_flags`), the export and serve flags those of
`keras_attention.export.cli` and `keras_attention.serving.server.cli`: one
parser, built from the library's own definitions.
"""

from __future__ import annotations

import argparse
import dataclasses
import typing

from keras_attention import distribution
from keras_attention.auto import AUTO
from keras_attention.cli.run_commands import (
    run_adapt,
    run_average,
    run_evaluate,
    run_plot,
    run_status,
    run_train,
)
from keras_attention.cli.translate_command import run_translate
from keras_attention.decoding_defaults import DEFAULT_BEAM_WIDTH
from keras_attention.runs.train_config import CHOICES, TrainConfig

VERBOSE_HELP = (
    "log progress details and keep TensorFlow's own logs and warnings "
    "(also: KERAS_ATTENTION_VERBOSE=1)"
)


def add_evaluate_arguments(
    parser: argparse.ArgumentParser, beam_width: int, beam_help: str
) -> None:
    """`evaluate`'s `--beam-width N` (alias `--beam`), `--length-penalty A`, `--batch-size N`:
    the client's definitions of these flags, with `beam_width` as `--beam-width`'s default
    and `DecodingOptions.DEFAULTS`' length penalty as `--length-penalty`'s."""
    from keras_attention_client.cli import add_batch_size_argument
    from keras_attention_client.decoding_flags import (
        add_beam_width_argument,
        add_length_penalty_argument,
    )
    from keras_attention_client.wire.decoding_options import DecodingOptions

    add_beam_width_argument(parser, beam_width, beam_help)
    length_penalty = DecodingOptions.DEFAULTS["length_penalty"]
    add_length_penalty_argument(
        parser, length_penalty, f"GNMT length penalty alpha (default: {length_penalty})"
    )
    add_batch_size_argument(parser, "sentences per batch")


def _optional(parse):
    def parse_optional(text: str):
        return None if text.lower() == "none" else parse(text)

    parse_optional.__name__ = parse.__name__
    return parse_optional


def _int_or_auto(text: str) -> int | str:
    """`auto`, or an int (`none` is `_optional`'s)."""
    if text.lower() == AUTO:
        return AUTO
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an int, 'auto' or 'none'; got {text!r}"
        ) from None


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per `TrainConfig` field, e.g. `--batch-size`, `--no-tie-embeddings`.

    A flag's help is its field's description (`metadata["help"]`), naming the
    default once (a help text that already says "default" keeps its own
    wording); fields with a fixed set of values list them as argparse choices.
    """
    hints = typing.get_type_hints(TrainConfig)
    for field in dataclasses.fields(TrainConfig):
        flag = "--" + field.name.replace("_", "-")
        hint = hints[field.name]
        help_text = field.metadata["help"]
        if "default" not in help_text:
            default = "none" if field.default is None else field.default
            if hint is bool:
                default = "on" if field.default else "off"
            help_text += f" (default: {default})"
        help_text = help_text.replace("%", "%%")
        if hint is bool or typing.get_args(hint) == (bool, type(None)):
            parser.add_argument(flag, action=_BooleanFlag, default=field.default, help=help_text)
            continue
        args = typing.get_args(hint)
        base = next((a for a in args if a is not type(None)), hint)
        if typing.get_origin(base) is list:  # one or more values, repeatable
            parser.add_argument(
                flag, nargs="+", action="extend", metavar="SPEC", default=None, help=help_text
            )
            continue
        if set(args) >= {int, str}:  # an int or `auto` (the vocabulary sizes)
            base = _int_or_auto
        parse = _optional(base) if type(None) in args else base
        parser.add_argument(
            flag, type=parse, default=field.default, choices=CHOICES.get(field.name), help=help_text
        )


def add_adapt_arguments(parser: argparse.ArgumentParser) -> None:
    """`adapt`'s RUN, `--data`, `--out`, `--mix-original`, `--new-words`, its schedule
    (`--time-budget-minutes`, `--epochs`) and the training options it may change, each
    RUN's unless given (`run_commands.ADAPT_OVERRIDES`); the defaults are
    `keras_attention.runs.run_adaptation`'s."""
    from keras_attention.runs.run_adaptation import (
        DEFAULT_NEW_WORDS,
        LEARNING_RATE_SHARE,
        MIX_ORIGINAL,
        TIME_BUDGET_MINUTES,
    )

    parser.add_argument("run_dir", metavar="RUN", help="the trained run directory to continue")
    parser.add_argument(
        "--data",
        nargs="+",
        action="extend",
        metavar="SPEC",
        required=True,
        help="the new corpus: one or more SPECs, as train --data takes them",
    )
    parser.add_argument(
        "--out", required=True, help="the adapted run's directory: a new one, or the one to resume"
    )
    parser.add_argument(
        "--mix-original",
        type=float,
        default=MIX_ORIGINAL,
        metavar="W",
        help="the share of training pairs drawn from RUN's training corpora, streamed beside "
        "the new corpus to limit forgetting: 0 = none, below 1 (default: %(default)s)",
    )
    parser.add_argument(
        "--new-words",
        type=int,
        default=DEFAULT_NEW_WORDS,
        metavar="N",
        help="the most words each word vocabulary gains: the new corpus's most frequent ones "
        "(seen at least twice) that RUN lacks; subword runs keep their models "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--time-budget-minutes",
        type=_optional(float),
        default=TIME_BUDGET_MINUTES,
        help="stop after this many minutes, the schedule planned to end there ('none' = no "
        "limit) (default: %(default)s)",
    )
    parser.add_argument(
        "--epochs",
        type=_int_or_auto,
        default=AUTO,
        help="epochs to train; auto: as many as fit the time budget (default: %(default)s)",
    )
    parser.add_argument(
        "--learning-rate",
        type=float,
        help=f"the peak learning rate (default: {LEARNING_RATE_SHARE:g} x RUN's)",
    )
    same = "as train's (default: RUN's)"
    for flag, kind in (
        ("--steps-per-epoch", int),
        ("--batch-size", int),
        ("--label-smoothing", float),
        ("--ema-momentum", float),
        ("--keep-epoch-weights", int),
    ):
        parser.add_argument(flag, type=kind, help=same)
    parser.add_argument("--ema", action=_BooleanFlag, default=None, help=same)
    parser.add_argument("--precision", choices=CHOICES["precision"], help=same)


class _BooleanFlag(argparse.BooleanOptionalAction):
    """`--flag` / `--no-flag`, without argparse adding a second "(default: ...)"."""

    def __init__(self, *args, help=None, **kwargs):  # noqa: A002 - argparse's keyword
        super().__init__(*args, **kwargs)
        self.help = help


def build_parser() -> argparse.ArgumentParser:
    # Both modules import only the standard library at module level; the
    # heavy work is imported inside their handlers.
    from keras_attention.export import cli as export_cli
    from keras_attention.serving.server import cli as server_cli
    from keras_attention.version_action import VersionAction
    from keras_attention_client import cli as client_cli
    from keras_attention_client.intermixed_argument_parser import IntermixedArgumentParser

    parser = argparse.ArgumentParser(
        prog="keras-attention",
        description=(
            "Attention-based sequence-to-sequence models with Keras 3: "
            "train, evaluate, translate, plot, export for TensorFlow Serving, serve."
        ),
    )
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    parser.add_argument(
        "--version",
        action=VersionAction,
        help="print the installed version and exit; warns if another distribution "
        "also installs the keras_attention package",
    )
    # Every command takes -v/--verbose (SUPPRESS: unset, it keeps the top-level value) and
    # --version too.
    verbose = argparse.ArgumentParser(add_help=False)
    verbose.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP
    )
    verbose.add_argument(
        "--version", action=VersionAction, help="print the installed version and exit"
    )
    commands = _Commands(
        # Each command's options may come before, between and after its positionals.
        parser.add_subparsers(
            dest="command", metavar="COMMAND", parser_class=IntermixedArgumentParser
        ),
        parents=[verbose],
    )

    train = commands.add_parser(
        "train",
        help="train a translator (resumes when re-run on the same --out)",
        description="Train a Seq2Seq translator with model.fit. Re-running the same command "
        "after an interruption resumes from the last completed epoch.",
    )
    add_train_arguments(train)
    distribution.add_distribute_arguments(train)
    train.set_defaults(handler=run_train)

    adapt = commands.add_parser(
        "adapt",
        help="continue a trained run on a new corpus, its vocabularies extended (resumes when "
        "re-run on the same --out)",
        description="Continue the trained run RUN on the corpus --data, into the new run "
        "directory --out: word vocabularies keep RUN's ids and gain the new corpus's frequent "
        "words (their rows start as the mean of the old words'), subword runs keep RUN's "
        "SentencePiece models; every other row starts as RUN's. A short budgeted schedule "
        "at a lower learning rate by default; the adapted run is an ordinary run "
        "(evaluate, translate, export). Re-running the same command resumes it.",
    )
    add_adapt_arguments(adapt)
    adapt.set_defaults(handler=run_adapt)

    status = commands.add_parser(
        "status",
        help="a run's state, epochs, best val_loss, evaluation and size",
        description="Show a run directory's state (training, interrupted, completed, failed), "
        "epochs done of planned, best validation loss, its last evaluation and whether that "
        "is current (made of the model the directory holds), and its size on disk.",
    )
    status.add_argument("run_dir", metavar="RUN_DIR", help="a run directory")
    status.add_argument("--json", action="store_true", help="print the status as JSON")
    status.set_defaults(handler=run_status)

    evaluate = commands.add_parser(
        "evaluate",
        help="sacreBLEU and chrF of greedy and beam search on the run's test split",
        description="Translate the run's held-out test split (greedy and beam search) and "
        "score the detokenized, cased output with sacreBLEU (13a) and chrF against all "
        "reference translations of each source; BLEU by source length. Writes metrics.json.",
    )
    evaluate.add_argument(
        "run_dir",
        metavar="RUN_DIR",
        nargs="+",
        help="a trained run directory; several: their ensemble (the same vocabularies), "
        "scored on the first one's test split",
    )
    add_evaluate_arguments(
        evaluate,
        beam_width=DEFAULT_BEAM_WIDTH,
        beam_help=f"beam width (default: {DEFAULT_BEAM_WIDTH}; 1 = greedy only)",
    )
    evaluate.add_argument(
        "--max-sentences", type=int, default=None, help="evaluate only the first N test sources"
    )
    evaluate.add_argument(
        "--replace-unknown",
        action=_BooleanFlag,
        default=None,
        help="score the output with each [UNK] the model emits replaced by the source word it "
        "attended to most, as translate prints it; --no-replace-unknown scores the [UNK] as "
        "evaluations before this default did (default: on for word vocabularies; subwords "
        "have no [UNK])",
    )
    evaluate.add_argument(
        "--test-data",
        metavar="SPEC",
        default=None,
        help="score this test corpus (a SPEC as train's --test-data) instead of the run's test "
        "split, e.g. an adapted run on ORIGINAL/splits/test.tsv; written to metrics.json's "
        "test_data_evaluations, not its evaluation (default: the run's test split)",
    )
    evaluate.set_defaults(handler=run_evaluate)

    average = commands.add_parser(
        "average",
        help="a run whose model is the mean of a run's last N epoch weights",
        description="Average the weights of the last N epochs a run kept (train it with "
        "--keep-epoch-weights N or more) into a new run directory, which evaluates, translates, "
        "plots and exports like any run.",
    )
    average.add_argument("run_dir", metavar="RUN_DIR", help="a trained run directory")
    average.add_argument(
        "--last",
        type=int,
        required=True,
        metavar="N",
        help="how many of the last kept epochs to average (at least 1)",
    )
    average.add_argument(
        "--out",
        metavar="RUN_OUT",
        default=None,
        help="the new run directory, which must not exist (default: RUN_DIR-lastN beside it)",
    )
    average.set_defaults(handler=run_average)

    translate = commands.add_parser(
        "translate",
        help="translate text with a trained run (or a TF Serving endpoint with --server)",
        description="Translate TEXT arguments, else the lines of --file, else the lines of stdin; "
        "one translation per line on stdout.",
    )
    translate.add_argument(
        "run_dir", metavar="RUN_DIR", nargs="?", help="a trained run directory (omit with --server)"
    )
    translate.add_argument("texts", metavar="TEXT", nargs="*", help="sentences to translate")
    # The flags keras-attention-client translate takes too, with the same defaults; with
    # --server they are the export's decoding inputs.
    client_cli.add_translate_arguments(
        translate,
        beam_help="beam width (--beam is the same flag); with --server, the search "
        "signature's beam_width input (at most the export's max_beam_width) (default: 1 = greedy)",
    )
    translate.add_argument(
        "--show-attention",
        action="store_true",
        help="print a compact alignment under each translation (or save heatmaps with --attention-dir)",
    )
    translate.add_argument(
        "--attention-dir", help="with --show-attention: save heatmap PNGs here instead"
    )
    translate.add_argument(
        "--replace-unknown",
        action=_BooleanFlag,
        default=None,
        help="replace each [UNK] the model emits by the source word it attended to most, so "
        "that names and numbers outside the vocabulary come through; --no-replace-unknown "
        "keeps [UNK] (an export decides this with its own --replace-unknown) "
        "(default: on for word vocabularies; subwords have no [UNK])",
    )
    translate.set_defaults(handler=run_translate)

    export = commands.add_parser(
        "export",
        help="write a versioned SavedModel for TensorFlow Serving",
        description="Export a trained run (or the ensemble of several) as BASE/<version>/ (next integer by default, written "
        "atomically, never overwritten) with serving_default (greedy), beam_search, search, "
        "sample and score_translation signatures, warmup requests and a manifest; then check it.",
    )
    export_cli.add_export_arguments(export)
    export.set_defaults(handler=export_cli.run_export)

    check = commands.add_parser(
        "check-export",
        help="load an export the way TF Serving does and check its ops and signatures",
        description="Load BASE/<version> in a TF1 Session with tag 'serve' (as TF Serving "
        "does), print its signatures, replay its warmup requests, and fail on any op outside "
        "core TensorFlow and tensorflow-text.",
    )
    export_cli.add_check_export_arguments(check)
    check.set_defaults(handler=export_cli.run_check_export)

    serve = commands.add_parser(
        "serve",
        help="serve exports over TF Serving's gRPC (and REST) API, locally",
        description="A local model server speaking TensorFlow Serving's gRPC and REST APIs, "
        "with tensorflow_model_server's flags and config files (python -m keras_attention.serving is the same).",
    )
    server_cli.add_serve_arguments(serve)
    serve.set_defaults(handler=server_cli.run_serve)

    plot = commands.add_parser(
        "plot",
        help="attention heatmaps, BLEU by sentence length across runs, training curves",
        description="Write PNG plots: attention heatmaps for --sentence (default: a few test "
        "sentences) with the first run, BLEU vs source length for all evaluated runs on one "
        "chart, and each run's training curves.",
    )
    plot.add_argument("run_dirs", metavar="RUN_DIR", nargs="+", help="trained run directories")
    plot.add_argument(
        "--sentence", action="append", help="sentence to plot attention for (repeatable)"
    )
    plot.add_argument("--out", help="output directory (default: RUN_DIR/plots of the first run)")
    plot.set_defaults(handler=run_plot)
    return parser


class _Commands:
    """`add_subparsers()`'s action, adding shared `parents` to every command."""

    def __init__(self, action, parents):
        self.action = action
        self.parents = parents

    def add_parser(self, name: str, **kwargs) -> argparse.ArgumentParser:
        return self.action.add_parser(name, parents=self.parents, **kwargs)
