"""`keras-attention export` and `keras-attention check-export`.

`keras_attention.cli` wires these subcommands to the functions below, with a
lazy import inside its handlers; `main()` runs them standalone
(`python -m keras_attention.export.cli export RUN_DIR --export-dir BASE`).
"""

from __future__ import annotations

import argparse
import logging
import sys

EXPORT_ERROR = 2
CHECK_FAILED = 1


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1. Received: {text}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0. Received: {text}")
    return value


def _shortlist_size(text: str) -> int | str | None:
    """`--shortlist`: `auto`, `none`, or an integer >= 1."""
    if text.lower() in ("auto", "none"):
        return None if text.lower() == "none" else "auto"
    try:
        return _positive_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be 'auto', 'none' or an integer >= 1. Received: {text}"
        ) from None


def _beam_width(text: str) -> int:
    value = int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(
            f"must be an integer >= 2 (greedy search is serving_default). Received: {text}"
        )
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0. Received: {text}")
    return value


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `keras-attention export RUN_DIR --export-dir BASE ...`."""
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a trained run directory")
    parser.add_argument(
        "--export-dir",
        required=True,
        metavar="BASE",
        help="the model's base directory (TF Serving's --model_base_path); "
        "the export is written to BASE/<version>/",
    )
    parser.add_argument(
        "--version",
        type=_positive_int,
        default=None,
        help="version number (default: the highest existing version + 1, or 1); "
        "an existing version is never overwritten",
    )
    parser.add_argument(
        "--beam-width",
        "--beam",  # the alias translate and evaluate also accept
        dest="beam_width",
        type=_beam_width,
        default=4,
        help="the beam_search signature's beam width (fixed in its graph), >= 2 (default: 4)",
    )
    parser.add_argument(
        "--max-beam-width",
        dest="max_beam_width",
        type=_positive_int,
        default=None,
        help="the largest beam_width input a search request may give, >= --beam-width "
        "(default: 16, or --beam-width if larger)",
    )
    parser.add_argument(
        "--length-penalty",
        type=_non_negative_float,
        default=0.6,
        help="GNMT length penalty alpha of beam_search, and the default length_penalty input "
        "of search (default: 0.6)",
    )
    parser.add_argument(
        "--max-output-length",
        type=_positive_int,
        default=None,
        help="most tokens of a translation, the largest max_output_length input "
        "(default: the run's max_output_length)",
    )
    parser.add_argument(
        "--no-decoding-inputs",
        dest="decoding_inputs",
        action="store_false",
        help="leave out the search and sample signatures (their scalar decoding inputs), as "
        "older exports; serving_default and beam_search are text-only either way",
    )
    parser.add_argument(
        "--jit-compile",
        action="store_true",
        help="compile the decoding loops with XLA (TF Serving on CPU then needs "
        "--xla_cpu_compilation_enabled=true)",
    )
    parser.add_argument(
        "--precision",
        choices=("auto", "float32", "mixed_bfloat16", "mixed_float16"),
        default="auto",
        help="dtype policy the signatures compute in; auto = mixed_bfloat16 on a GPU or a CPU "
        "with native bfloat16 (AVX512_BF16, AMX), float32 elsewhere (default: auto)",
    )
    parser.add_argument(
        "--weights",
        choices=("auto", "float32", "bfloat16", "int8"),
        default="auto",
        help="how the variables are stored: float32 as trained; bfloat16 (half the size; read "
        "as they are when the signatures compute in bfloat16, cast to float32 otherwise); "
        "int8: per-channel weight-only quantization of the weight matrices, float32 scales, "
        "dequantized in the graph (about a quarter of the size); auto: bfloat16 when the "
        "signatures compute in bfloat16 (--precision), else float32 (default: auto)",
    )
    parser.add_argument(
        "--shortlist",
        metavar="K",
        type=_shortlist_size,
        default="auto",
        help="decode over a vocabulary shortlist: for each source token, the K target tokens "
        "that go with it most (local mutual information) in the run's training split, plus the "
        "--shortlist-frequent most frequent target tokens; scores are then log-probabilities "
        "over the shortlist; none: the whole vocabulary; auto: K=100 for a target vocabulary "
        "of 10000 tokens or more (not with --jit-compile), else none (default: auto)",
    )
    parser.add_argument(
        "--shortlist-frequent",
        metavar="M",
        type=_non_negative_int,
        default=300,
        help="the most frequent target tokens every --shortlist keeps (default: 300)",
    )
    parser.add_argument(
        "--no-score-signature",
        dest="score_signature",
        action="store_false",
        help="leave out the score_translation signature",
    )
    parser.add_argument(
        "--no-check",
        dest="check",
        action="store_false",
        help="skip running check-export (with --native) on the new version",
    )


def run_export(args: argparse.Namespace) -> int:
    """Exports; prints the new version's path. Returns 0, or 2 on an error."""
    from keras_attention.export.export_checker import ExportChecker
    from keras_attention.export.native_check import NativeCheckError, native_libraries
    from keras_attention.export.translator_exporter import export_translator

    try:
        exported = export_translator(
            args.run_dir,
            args.export_dir,
            version=args.version,
            beam_width=args.beam_width,
            length_penalty=args.length_penalty,
            max_output_length=args.max_output_length,
            jit_compile=args.jit_compile,
            score_signature=args.score_signature,
            max_beam_width=getattr(args, "max_beam_width", None),
            decoding_inputs=getattr(args, "decoding_inputs", True),
            precision=getattr(args, "precision", "auto"),
            weights=getattr(args, "weights", "auto"),
            shortlist=getattr(args, "shortlist", None),
            shortlist_frequent=getattr(args, "shortlist_frequent", 300),
        )
    except (FileExistsError, FileNotFoundError, ValueError) as error:
        print(f"keras-attention export: error: {error}", file=sys.stderr)
        return EXPORT_ERROR
    print(f"Exported version {exported.version} to {exported.path}")
    signatures = ", ".join(exported.manifest.signatures)
    print(f"Signatures: {signatures}")
    weights = exported.manifest.weights
    auto = "auto, " if weights["requested"] == "auto" else ""
    print(
        f"Precision: {exported.manifest.precision}; weights: {weights['weights']} "
        f"({auto}read in {weights['value_dtype']}, {weights['bytes'] / 1e6:.1f} MB)"
    )
    shortlist = exported.manifest.shortlist
    if shortlist is not None:
        print(
            f"Vocabulary shortlist: {shortlist['k']} target tokens per source token "
            f"({shortlist['measure']}, from {shortlist['pairs']} training pairs) "
            f"+ {shortlist['frequent']} most frequent"
        )
    if getattr(args, "check", True):
        # The C API check is part of the default check where the wheel ships the C API.
        try:
            native_libraries()
            native = True
        except NativeCheckError as error:
            print(f"check-export: skipping the C API run: {error}", file=sys.stderr)
            native = False
        report = ExportChecker(native=native).check(exported.path)
        if not report.ok:
            print(report.format(), file=sys.stderr)
            print(
                "keras-attention export: error: the new version fails check-export",
                file=sys.stderr,
            )
            return EXPORT_ERROR
        on_c_api = (
            ", the same outputs on TensorFlow's C API (TF_LoadSessionFromSavedModel)"
            if report.native
            else ""
        )
        print(
            f"check-export: OK ({len(report.ops)} op types allowed, "
            f"{len(report.warmup)} warmup requests replayed{on_c_api})"
        )
    return 0


def add_check_export_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `keras-attention check-export BASE/<version>`."""
    parser.add_argument(
        "path", metavar="EXPORT_DIR", help="an exported version directory (BASE/<version>)"
    )
    parser.add_argument(
        "--allowed-ops",
        metavar="FILE",
        default=None,
        help="check against the op names in FILE (one per line), e.g. your TF Serving "
        "build's, instead of core TensorFlow + tensorflow-text as registered here",
    )
    parser.add_argument(
        "--no-warmup",
        dest="replay_warmup",
        action="store_false",
        help="do not replay the warmup requests",
    )
    parser.add_argument(
        "--native",
        action="store_true",
        help="also load the version with TensorFlow's C API (TF_LoadSessionFromSavedModel, "
        "the C++ loader TF Serving uses) in a process without Python TensorFlow, and check "
        "that every warmup request gives the same outputs there",
    )


def run_check_export(args: argparse.Namespace) -> int:
    """Prints the check report. Returns 0 when the export passes, 1 when it fails."""
    from keras_attention.export.allowed_ops import AllowedOps
    from keras_attention.export.export_checker import ExportChecker

    try:
        allowed = AllowedOps.from_file(args.allowed_ops) if args.allowed_ops else None
    except (OSError, ValueError) as error:
        print(f"keras-attention check-export: error: {error}", file=sys.stderr)
        return EXPORT_ERROR
    if args.native and not args.replay_warmup:
        print(
            "keras-attention check-export: error: --native needs the warmup requests "
            "(drop --no-warmup)",
            file=sys.stderr,
        )
        return EXPORT_ERROR
    report = ExportChecker(
        allowed_ops=allowed, replay_warmup=args.replay_warmup, native=args.native
    ).check(args.path)
    print(report.format())
    if not report.ok:
        print(
            f"keras-attention check-export: {args.path} is not a servable export: "
            + "; ".join(report.errors),
            file=sys.stderr,
        )
        return CHECK_FAILED
    return 0


def build_parser() -> argparse.ArgumentParser:
    from keras_attention_client.cli import IntermixedArgumentParser

    parser = argparse.ArgumentParser(
        prog="python -m keras_attention.export.cli",
        description="Export trained translators for TensorFlow Serving and check exports.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=IntermixedArgumentParser
    )
    export = commands.add_parser(
        "export",
        help="write a versioned SavedModel for TensorFlow Serving",
        description="Write RUN_DIR's model as BASE/<version>/ with the signatures "
        "serving_default (greedy), beam_search, sample and score_translation, warmup requests "
        "and a manifest; atomically (staged in BASE/.tmp-export-*, then renamed).",
    )
    add_export_arguments(export)
    export.set_defaults(handler=run_export)
    check = commands.add_parser(
        "check-export",
        help="check that TensorFlow Serving can load and run an export",
        description="Load EXPORT_DIR as TF Serving does (tag 'serve', TF1 Session), print "
        "its signatures, list its ops (failing on any outside core TensorFlow + "
        "tensorflow-text) and replay its warmup requests.",
    )
    add_check_export_arguments(check)
    check.set_defaults(handler=run_check_export)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
