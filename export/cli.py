"""The flags and handlers of `keras-attention export` and `keras-attention check-export`.

`keras_attention.cli.build_parser` adds these subcommands to the one
`keras-attention` parser. Only light modules are imported here (the flags'
choices and defaults come from `keras_attention.precision.POLICIES`,
`weight_choices.WEIGHTS` and `export_settings.COMMAND_SETTINGS`); the heavy
work is imported inside the handlers.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from keras_attention.auto import AUTO
from keras_attention.export.argument_types import (
    beam_width_of_beam_search,
    non_negative_float,
    non_negative_int,
    positive_int,
    shortlist_size,
)
from keras_attention.export.export_settings import COMMAND_SETTINGS, ExportSettings
from keras_attention.export.signature_options import DEFAULT_MAX_BEAM_WIDTH
from keras_attention.export.weight_choices import WEIGHTS
from keras_attention.precision import POLICIES
from keras_attention_client.litert_contract import WEIGHTS as LITERT_WEIGHTS

FORMATS = ("savedmodel", "litert")
"""`--format`: a SavedModel for TF Serving, or LiteRT (`.tflite`) models for devices."""

EXPORT_ERROR = 2
CHECK_FAILED = 1


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `keras-attention export RUN_DIR [RUN_DIR ...] --export-dir BASE ...`."""
    parser.add_argument(
        "run_dir",
        metavar="RUN_DIR",
        nargs="+",
        help="a trained run directory; several with the same vocabularies export their "
        "ensemble: one SavedModel whose decoding averages the models' log-probabilities at "
        "every step (docs/improve-and-adapt.md#ensembles; --shortlist auto is then none)",
    )
    parser.add_argument(
        "--export-dir",
        required=True,
        metavar="BASE",
        help="the model's base directory (TF Serving's --model_base_path); "
        "the export is written to BASE/<version>/ (with --format litert: the new or empty "
        "directory the .tflite models and text files are written to)",
    )
    parser.add_argument(
        "--format",
        dest="export_format",
        choices=FORMATS,
        default=FORMATS[0],
        help="savedmodel: a versioned SavedModel for TF Serving; litert: one LiteRT (.tflite) "
        "model per decoding mode (greedy, beam with --beam-width), token ids in and out, the "
        "decoding loop inside, builtin ops only, computing in float32, with the text files "
        "LiteRTTranslator reads (--precision, --shortlist and the signature flags do not apply) "
        "(default: savedmodel)",
    )
    parser.add_argument(
        "--model-version",
        dest="model_version",
        type=positive_int,
        default=None,
        metavar="N",
        help="version number; an existing version is never overwritten "
        "(default: the highest existing version + 1, or 1)",
    )
    signatures = COMMAND_SETTINGS.signatures
    parser.add_argument(
        "--beam-width",
        "--beam",  # the alias translate and evaluate also accept
        dest="beam_width",
        type=beam_width_of_beam_search,
        default=signatures.beam_width,
        help="the beam_search signature's beam width (fixed in its graph), >= 2 "
        f"(default: {signatures.beam_width})",
    )
    parser.add_argument(
        "--max-beam-width",
        dest="max_beam_width",
        type=positive_int,
        default=signatures.max_beam_width,
        help="the largest beam_width input a search request may give, >= --beam-width "
        f"(default: {DEFAULT_MAX_BEAM_WIDTH}, or --beam-width if larger)",
    )
    parser.add_argument(
        "--length-penalty",
        type=non_negative_float,
        default=signatures.length_penalty,
        help="GNMT length penalty alpha of beam_search, and the default length_penalty input "
        f"of search (default: {signatures.length_penalty})",
    )
    parser.add_argument(
        "--max-output-length",
        type=positive_int,
        default=COMMAND_SETTINGS.max_output_length,
        help="most tokens of a translation, the largest max_output_length input "
        "(default: the run's max_output_length)",
    )
    parser.add_argument(
        "--replace-unknown",
        action=argparse.BooleanOptionalAction,
        default=COMMAND_SETTINGS.replace_unknown,
        help="the signatures replace each [UNK] the model emits by the source word it "
        "attended to most, so that names and numbers outside the vocabulary come through "
        "(with --format litert: LiteRTTranslator does, as the manifest records); "
        "--no-replace-unknown keeps [UNK] (default: on for word vocabularies; subwords have "
        "no [UNK])",
    )
    parser.add_argument(
        "--no-decoding-inputs",
        dest="decoding_inputs",
        action="store_false",
        help="leave out the search, sample and steered_beam_search signatures (their decoding "
        "inputs), as older exports; serving_default and beam_search are text-only either way",
    )
    parser.add_argument(
        "--jit-compile",
        action="store_true",
        help="compile the decoding loops with XLA (TF Serving on CPU then needs "
        "--xla_cpu_compilation_enabled=true)",
    )
    parser.add_argument(
        "--precision",
        choices=(AUTO, *POLICIES),
        default=COMMAND_SETTINGS.precision,
        help="dtype policy the signatures compute in; auto = mixed_bfloat16 on a GPU or a CPU "
        "with native bfloat16 (AVX512_BF16, AMX), float32 elsewhere "
        f"(default: {COMMAND_SETTINGS.precision})",
    )
    parser.add_argument(
        "--weights",
        choices=(AUTO, *dict.fromkeys([*WEIGHTS, *LITERT_WEIGHTS])),
        default=COMMAND_SETTINGS.weights,
        help="how the variables are stored: float32 as trained; bfloat16 (half the size; read "
        "as they are when the signatures compute in bfloat16, cast to float32 otherwise); "
        "int8: per-channel weight-only quantization of the weight matrices, float32 scales, "
        "dequantized in the graph (about a quarter of the size); auto: bfloat16 when the "
        "signatures compute in bfloat16 (--precision), else float32; with --format litert: "
        "float32, float16 (stored in float16, computed in float32) or int8 (as for "
        "SavedModels: stored int8, computed in float32), auto = float32 "
        f"(default: {COMMAND_SETTINGS.weights})",
    )
    parser.add_argument(
        "--shortlist",
        metavar="K",
        type=shortlist_size,
        default=COMMAND_SETTINGS.shortlist,
        help="decode over a vocabulary shortlist: for each source token, the K target tokens "
        "that go with it most (local mutual information) in the run's training split, plus the "
        "--shortlist-frequent most frequent target tokens; scores are then log-probabilities "
        "over the shortlist; none: the whole vocabulary; auto: K=100 for a target vocabulary "
        "of 10000 tokens or more (8000 when the signatures compute in float32; not with "
        "--jit-compile), else none; with --format litert "
        "auto is none (a shortlist there is for speed: docs/on-device.md) "
        f"(default: {COMMAND_SETTINGS.shortlist})",
    )
    parser.add_argument(
        "--shortlist-frequent",
        metavar="M",
        type=non_negative_int,
        default=COMMAND_SETTINGS.shortlist_frequent,
        help="the most frequent target tokens every --shortlist keeps "
        f"(default: {COMMAND_SETTINGS.shortlist_frequent})",
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


def export_settings(args: argparse.Namespace) -> ExportSettings:
    """The `ExportSettings` of `add_export_arguments`' flags."""
    names = {field.name for field in dataclasses.fields(ExportSettings)} - {"signatures"}
    signatures = dataclasses.fields(COMMAND_SETTINGS.signatures)
    return ExportSettings.of(
        None,
        **{name: getattr(args, name) for name in names},
        **{field.name: getattr(args, field.name) for field in signatures},
    )


def run_export(args: argparse.Namespace) -> int:
    """Exports; prints the new version's path. Returns 0, or 2 on an error."""
    from keras_attention.export.export_checker import ExportChecker
    from keras_attention.export.native_check import NativeCheckError, native_libraries
    from keras_attention.export.translator_exporter import export_translator

    if args.export_format == "litert":
        if len(args.run_dir) > 1:
            print(
                "keras-attention export: error: --format litert exports one run; an ensemble "
                f"of {len(args.run_dir)} runs exports as a SavedModel (--format savedmodel)",
                file=sys.stderr,
            )
            return EXPORT_ERROR
        return run_litert_export(args)
    if args.weights not in (AUTO, *WEIGHTS):
        print(
            f"keras-attention export: error: --weights {args.weights} is for --format litert; "
            f"a SavedModel takes one of {(AUTO, *WEIGHTS)}",
            file=sys.stderr,
        )
        return EXPORT_ERROR
    try:
        exported = export_translator(
            args.run_dir, args.export_dir, args.model_version, export_settings(args)
        )
    except (FileExistsError, FileNotFoundError, ValueError) as error:
        print(f"keras-attention export: error: {error}", file=sys.stderr)
        return EXPORT_ERROR
    print(f"Exported version {exported.version} to {exported.path}")
    signatures = ", ".join(exported.manifest.signatures)
    print(f"Signatures: {signatures}")
    if exported.manifest.ensemble:
        print(
            f"Ensemble of {len(exported.manifest.ensemble)} models: the mean of their "
            "log-probabilities at every decoding step"
        )
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
    if args.check:
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


def run_litert_export(args: argparse.Namespace) -> int:
    """`export --format litert`: writes the models; checks them unless `--no-check`."""
    from keras_attention.export.litert.checker import LiteRTChecker
    from keras_attention.export.litert.exporter import LiteRTExporter

    weights = "float32" if args.weights == AUTO else args.weights
    if weights not in LITERT_WEIGHTS:
        print(
            f"keras-attention export: error: --format litert stores weights as one of "
            f"{LITERT_WEIGHTS}. Received: --weights {args.weights}",
            file=sys.stderr,
        )
        return EXPORT_ERROR
    # `auto` is the whole vocabulary here: a shortlist is for speed, at the cost of its
    # table's bytes (docs/on-device.md).
    shortlist = None if args.shortlist in (None, AUTO) else args.shortlist
    try:
        exporter = LiteRTExporter.from_run(
            args.run_dir[0],
            max_output_length=args.max_output_length,
            replace_unknown=args.replace_unknown,
            beam_width=args.beam_width,
            length_penalty=args.length_penalty,
            weights=weights,
            shortlist=shortlist,
            shortlist_frequent=args.shortlist_frequent,
        )
        manifest = exporter.export(args.export_dir)
    except (FileExistsError, FileNotFoundError, ValueError) as error:
        print(f"keras-attention export: error: {error}", file=sys.stderr)
        return EXPORT_ERROR
    print(f"Exported LiteRT models to {args.export_dir} (weights {weights})")
    for model in manifest["models"].values():
        print(
            f"  {model['file']}: {model['bytes'] / 1e6:.1f} MB, "
            f"{len(model['ops']['builtin'])} builtin op kinds, {len(model['ops']['custom'])} custom"
        )
    if args.check:
        report = LiteRTChecker(vocabulary_shortlist=exporter.vocabulary_shortlist).check(
            args.export_dir
        )
        if not report.ok:
            print(report.format(), file=sys.stderr)
            print("keras-attention export: error: the export fails check-export", file=sys.stderr)
            return EXPORT_ERROR
        compared = "; ".join(
            f"{mode} {c['identical']}/{c['sentences']} token-identical"
            for mode, c in report.comparisons.items()
        )
        print(f"check-export: OK (builtin ops only; {compared or 'not compared'})")
    return 0


def add_check_export_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `keras-attention check-export BASE/<version>`."""
    parser.add_argument(
        "path",
        metavar="EXPORT_DIR",
        help="an exported version directory (BASE/<version>), or a LiteRT export directory",
    )
    parser.add_argument(
        "--saved-model",
        metavar="VERSION_DIR",
        default=None,
        help="for a LiteRT export: the SavedModel version directory whose serving_default and "
        "beam_search signatures its warmup translations are compared with, on TF Serving's "
        "Session path (default: the run's model in float32, when its directory is there)",
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
    from pathlib import Path

    from keras_attention.export.allowed_ops import AllowedOps
    from keras_attention.export.export_checker import ExportChecker
    from keras_attention_client.litert_contract import MANIFEST_FILE

    if (Path(args.path) / MANIFEST_FILE).is_file():
        from keras_attention.export.litert.checker import LiteRTChecker

        report = LiteRTChecker(saved_model=args.saved_model).check(args.path)
        print(report.format())
        if not report.ok:
            print(
                f"keras-attention check-export: {args.path} fails: " + "; ".join(report.errors),
                file=sys.stderr,
            )
            return CHECK_FAILED
        return 0
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
