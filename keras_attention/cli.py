"""The `keras-attention` command line.

Thin by design: each subcommand parses its arguments and calls library
functions that tests can call directly. TensorFlow is imported only inside the
subcommands, so `keras-attention --help` is instant.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
import typing

from keras_attention import distribution, tensorflow_logging
from keras_attention.runs.train_config import AUTO, CHOICES, FIELD_HELP, TrainConfig

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

    Each help line names the default once (a help text that already says
    "default" keeps its own wording); fields with a fixed set of values list
    them as argparse choices.
    """
    hints = typing.get_type_hints(TrainConfig)
    for field in dataclasses.fields(TrainConfig):
        flag = "--" + field.name.replace("_", "-")
        hint = hints[field.name]
        help_text = FIELD_HELP[field.name]
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
        if set(args) >= {int, str}:  # an int or `auto` (the vocabulary sizes)
            base = _int_or_auto
        parse = _optional(base) if type(None) in args else base
        parser.add_argument(
            flag, type=parse, default=field.default, choices=CHOICES.get(field.name), help=help_text
        )


class _BooleanFlag(argparse.BooleanOptionalAction):
    """`--flag` / `--no-flag`, without argparse adding a second "(default: ...)"."""

    def __init__(self, *args, help=None, **kwargs):  # noqa: A002 - argparse's keyword
        super().__init__(*args, **kwargs)
        self.help = help


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    return TrainConfig(**{f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig)})


def run_train(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    # The strategy first: it must exist before any other TensorFlow op.
    strategy = distribution.distribution_from_args(args)
    from keras_attention.training.interrupt_on_signal import TrainingInterrupted
    from keras_attention.training.trainer import train

    def print_choice(name: str, choice) -> None:
        print(f"{name.capitalize()}: {choice.describe()}", flush=True)

    try:
        summary = train(config, distribute=strategy, on_choice=print_choice)
    except TrainingInterrupted as interrupted:
        if sys.stdout.isatty():
            print(file=sys.stdout)  # end Keras' progress bar line
        when = (
            f"after epoch {interrupted.epochs_done}"
            if interrupted.epochs_done
            else "before the first epoch ended"
        )
        print(
            f"keras-attention train: interrupted {when}; run the same command to resume",
            file=sys.stderr,
        )
        return interrupted.exit_code
    if summary.get("already_completed"):
        epochs = summary["epochs_run"]
        print(
            f"keras-attention train: {args.out} already completed ({epochs} "
            f"epoch{'s' if epochs != 1 else ''}); nothing to do"
        )
        return 0
    best = summary["best_val_loss"]
    print(
        f"Trained {summary['epochs_run']} epochs in {summary['seconds']:.0f} s; "
        f"best val_loss {'n/a' if best is None else f'{best:.3f}'}; run directory: {args.out}"
    )
    return 0


def run_status(args: argparse.Namespace) -> int:
    from keras_attention.runs import run_state

    status = run_state.run_status(args.run_dir)
    if args.json:
        print(json.dumps(status, indent=2, sort_keys=True))
    else:
        print(run_state.format_status(status))
    return 0


def warn_if_partial(run_dir: str, command: str) -> None:
    """Says on stderr when RUN_DIR's training has not completed (the model is partial)."""
    from keras_attention.runs import run_state

    status = run_state.run_status(run_dir)
    if status["state"] != run_state.COMPLETED:
        resume = (
            " (run the same train command to finish it)" if status["state"] != "training" else ""
        )
        print(
            f"keras-attention {command}: warning: {run_dir} is {status['state']} after epoch "
            f"{status['epochs_done']} of {status['epochs_planned']}; using the partial "
            f"model{resume}",
            file=sys.stderr,
        )


def run_evaluate(args: argparse.Namespace) -> int:
    from keras_attention.evaluation.run_evaluation import evaluate_run
    from keras_attention_client.wire.decoding_options import DecodingOptions

    warn_if_partial(args.run_dir, "evaluate")
    evaluation = evaluate_run(
        args.run_dir,
        DecodingOptions(beam_width=args.beam, length_penalty=args.length_penalty),
        batch_size=args.batch_size,
        max_sentences=args.max_sentences,
        progress=True,
    )
    print(f"{evaluation['sentences']} test sentences (all references of each source)")
    for name in ("greedy", "beam"):
        if name in evaluation:
            result = evaluation[name]
            print(f"{name:>6}: BLEU {result['bleu']:.2f}  chrF {result['chrf']:.2f}")
            for bucket in result["bleu_by_length"]:
                print(
                    f"        source {bucket['bucket']:>6} words: BLEU {bucket['bleu']:6.2f} "
                    f"({bucket['count']} sentences)"
                )
    signatures = evaluation["greedy"]
    print(f"sacreBLEU signature: {signatures['bleu_signature']}")
    print(f"chrF signature:      {signatures['chrf_signature']}")
    return 0


def read_texts(args: argparse.Namespace) -> list[str]:
    """Texts from the command line, else from --file, else from stdin (one per line)."""
    texts = list(args.texts)
    if args.server and args.run_dir:
        # With --server there is no RUN_DIR: the first positional is a sentence.
        texts.insert(0, args.run_dir)
    if texts:
        return texts
    if args.file:
        with open(args.file, encoding="utf-8") as f:
            return [line.rstrip("\n") for line in f]
    if sys.stdin.isatty():
        print(
            "keras-attention translate: reading sentences from stdin, one per line "
            "(end with Ctrl-D; or pass TEXT arguments or --file)",
            file=sys.stderr,
        )
    return [line.rstrip("\n") for line in sys.stdin]


def translate_remotely(args: argparse.Namespace, texts: list[str]) -> list:
    """Translations from a TF Serving endpoint, as dicts like `translate_all`'s (a list of
    dicts per text with `--n-best` above 1)."""
    from keras_attention_client.cli import remote_translations

    def as_dict(t) -> dict:
        return {
            "translation": t.text,
            "score": t.score,
            "length": t.length,
            "tokens": list(t.tokens),
            "source_tokens": list(t.source_tokens),
            "attention": t.attention,
        }

    return [
        [as_dict(t) for t in result] if isinstance(result, list) else as_dict(result)
        for result in remote_translations(args, texts)
    ]


def run_translate(args: argparse.Namespace) -> int:
    if not args.server and not args.run_dir:
        raise ValueError("translate needs RUN_DIR (a trained run) or --server HOST:PORT")
    from keras_attention_client.decoding_flags import decoding_options

    options = decoding_options(args)  # checks the flags before any text is read
    texts = read_texts(args)
    if args.server:
        from keras_attention_client.wire.errors import ServingError

        try:
            results = translate_remotely(args, texts)
        except ServingError as error:
            print(f"keras-attention translate: server error: {error}", file=sys.stderr)
            return 1
    else:
        from keras_attention.inference.trained_run import load_translator

        warn_if_partial(args.run_dir, "translate")
        translator = load_translator(args.run_dir, max_output_length=args.max_output_length)
        results = translator.translate_all(
            texts,
            options,
            batch_size=args.batch_size,
            progress=len(texts) > args.batch_size and sys.stderr.isatty(),
        )
    for index, (text, result) in enumerate(zip(texts, results, strict=True)):
        listed = isinstance(result, list)
        if args.output_format == "json":
            if listed:
                record = {"source": text, "n_best": [_json_result(r) for r in result]}
            else:
                record = {"source": text, **_json_result(result)}
            print(json.dumps(record, ensure_ascii=False))
        else:
            for one in result if listed else [result]:
                print(one["translation"])
        if args.show_attention:
            show_attention(args, index, result[0] if listed else result)
    return 0


def _json_result(result: dict) -> dict:
    return {
        **{k: v for k, v in result.items() if k != "attention"},
        "attention": [[round(float(w), 4) for w in row] for row in result["attention"]],
    }


def decoding_name(args: argparse.Namespace) -> str:
    """Which decoding `translate` used, for plot titles."""
    from keras_attention_client.decoding_flags import decoding_options, remote_decoding_options

    options = decoding_options(args)
    if options.sample:
        top_k = f", top-k {options.top_k}" if options.top_k is not None else ""
        top_p = f", top-p {options.top_p:g}" if options.top_p is not None else ""
        name = f"random sampling, temperature {options.value('temperature'):g}{top_k}{top_p}"
    else:
        width = options.value("beam_width")
        name = f"beam search, width {width}" if width > 1 else "greedy decoding"
    if args.server:
        signature = (
            "sample"
            if options.sample
            else "search"
            if remote_decoding_options(args).given()
            else args.signature_name or ("beam_search" if args.beam > 1 else "serving_default")
        )
        return f"{name}, {signature} signature"
    return name


def show_attention(args: argparse.Namespace, index: int, result: dict) -> None:
    from keras_attention.plotting import format_alignment, plot_attention

    if args.attention_dir:
        from pathlib import Path

        path = Path(args.attention_dir) / f"attention_{index:04d}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        plot_attention(
            result["attention"],
            result["source_tokens"],
            result["tokens"],
            path,
            title=result["translation"],
            decoding=decoding_name(args),
        )
        print(f"  attention heatmap: {path}", file=sys.stderr)
    else:
        print(format_alignment(result["attention"], result["source_tokens"], result["tokens"]))


def run_plot(args: argparse.Namespace) -> int:
    from keras_attention.plotting.run_plots import plot_runs

    for path in plot_runs(args.run_dirs, sentences=args.sentence, out=args.out):
        print(path)
    return 0


def build_parser() -> argparse.ArgumentParser:
    # Both modules import only the standard library at module level; the
    # heavy work is imported inside their handlers.
    from keras_attention.export import cli as export_cli
    from keras_attention.serving.server import cli as server_cli
    from keras_attention.version_action import VersionAction
    from keras_attention_client import cli as client_cli

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
    # Every command takes -v/--verbose too (SUPPRESS: unset, it keeps the top-level value).
    verbose = argparse.ArgumentParser(add_help=False)
    verbose.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP
    )
    commands = _Commands(
        # Each command's options may come before, between and after its positionals.
        parser.add_subparsers(
            dest="command", metavar="COMMAND", parser_class=client_cli.IntermixedArgumentParser
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

    status = commands.add_parser(
        "status",
        help="a run's state, epochs, best val_loss, evaluation and size",
        description="Show a run directory's state (training, interrupted, completed, failed), "
        "epochs done of planned, best validation loss, its last evaluation and whether that "
        "is current (made of the model there now), and its size on disk.",
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
    evaluate.add_argument("run_dir", metavar="RUN_DIR", help="a trained run directory")
    add_evaluate_arguments(
        evaluate, beam_width=4, beam_help="beam width (default: 4; 1 = greedy only)"
    )
    evaluate.add_argument(
        "--max-sentences", type=int, default=None, help="evaluate only the first N test sources"
    )
    evaluate.set_defaults(handler=run_evaluate)

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
        beam_help="beam width (default: 1 = greedy); with --server, --beam-width N calls the "
        "search signature with beam_width N (at most the export's max_beam_width) and --beam N "
        "(N > 1) alone calls beam_search, whose width is fixed at export",
    )
    translate.add_argument(
        "--show-attention",
        action="store_true",
        help="print a compact alignment under each translation (or save heatmaps with --attention-dir)",
    )
    translate.add_argument(
        "--attention-dir", help="with --show-attention: save heatmap PNGs here instead"
    )
    translate.set_defaults(handler=run_translate)

    export = commands.add_parser(
        "export",
        help="write a versioned SavedModel for TensorFlow Serving",
        description="Export a trained run as BASE/<version>/ (next integer by default, written "
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


def _needs_tensorflow(args: argparse.Namespace) -> bool:
    if args.command == "status":
        return False
    return not (args.command == "translate" and args.server)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    verbose = args.verbose or tensorflow_logging.verbose_from_environment()
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    tensorflow_logging.configure(verbose)
    try:
        if _needs_tensorflow(args):
            tensorflow_logging.import_tensorflow(verbose)
        return args.handler(args)
    except (ValueError, FileNotFoundError, distribution.DistributedTrainingError) as error:
        print(f"keras-attention {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"keras-attention {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
