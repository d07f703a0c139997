"""The decoding flags, one per `DecodingOptions` field, and the options they give.

The one definition of `--beam-width` (alias `--beam`), `--n-best`,
`--length-penalty`, `--max-output-length` and the sampling flags (`--sample`,
`--temperature`, `--top-k`, `--top-p`, `--seed`): `keras-attention-client
translate` and `keras-attention translate` (and `evaluate`'s beam flags) add them
from here, and `decoding_options(args)` turns them into a `DecodingOptions`.
Standard library and the wire contract only, so `--help` stays instant.
"""

from __future__ import annotations

import argparse

from keras_attention_client.wire.decoding_options import DecodingOptions, conflicts

REMOTE_BEAM_HELP = (
    "beam width (--beam is the same flag): calls the search signature with beam_width N "
    "(at most the export's max_beam_width; 1 = greedy) (default: 1, a greedy request to "
    "serving_default)"
)
"""`--beam-width`'s help over the wire: the `search` signature's `beam_width` input."""


class _BeamWidthAction(argparse.Action):
    """Stores `--beam-width N` / `--beam N` in `args.beam_width`, and the spelling used in
    `args.beam_option` (None: not given, so the command's default applies)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.beam_option = option_string


def add_beam_width_argument(parser: argparse.ArgumentParser, default: int, help_text: str) -> None:
    """`--beam-width N` (alias `--beam`, read as `args.beam_width`): one spelling for every command
    (the Python API's `beam_width`), the short one kept as an alias."""
    parser.add_argument(
        "--beam-width",
        "--beam",
        dest="beam_width",
        metavar="N",
        type=int,
        default=default,
        action=_BeamWidthAction,
        help=help_text,
    )
    parser.set_defaults(beam_option=None)  # the spelling given, if any


def add_length_penalty_argument(
    parser: argparse.ArgumentParser, default: float | None, help_text: str
) -> None:
    """`--length-penalty A` (read as `args.length_penalty`); `help_text` names its default."""
    parser.add_argument(
        "--length-penalty",
        dest="length_penalty",
        type=float,
        default=default,
        help=help_text,
    )


def add_search_arguments(
    parser: argparse.ArgumentParser, *, beam_help: str = REMOTE_BEAM_HELP
) -> None:
    """`--beam-width N` (alias `--beam`, read as `args.beam_width`), `--n-best`, `--length-penalty`,
    `--max-output-length`: the search fields of `DecodingOptions` (with
    `add_sampling_arguments`, one flag per field).

    A flag not given leaves its field `None`, so `decoding_options` gives
    only what was asked for and the decoder (a `Translator`, or the export
    over the wire) applies `DecodingOptions.DEFAULTS` or its own.
    """
    defaults = DecodingOptions.DEFAULTS
    add_beam_width_argument(parser, defaults["beam_width"], beam_help)
    parser.add_argument(
        "--n-best",
        dest="n_best",
        type=int,
        default=None,
        metavar="N",
        help="print the N best translations of each sentence (beam search; N <= --beam-width): "
        "N lines per sentence with --format text, an 'n_best' list with json (default: 1)",
    )
    add_length_penalty_argument(
        parser,
        None,
        "GNMT length penalty alpha of beam search, >= 0 "
        f"(default: {defaults['length_penalty']}, or the export's)",
    )
    parser.add_argument(
        "--max-output-length",
        dest="max_output_length",
        type=int,
        default=None,
        metavar="N",
        help="most tokens of a translation (default: the run's or export's; an export "
        "accepts at most its own)",
    )


def add_sampling_arguments(parser: argparse.ArgumentParser) -> None:
    """The `sampling` group: `--sample`, `--temperature`, `--top-k`, `--top-p`, `--seed`."""
    defaults = DecodingOptions.DEFAULTS
    sampling = parser.add_argument_group(
        "sampling", "draw each translation at random instead of searching"
    )
    sampling.add_argument(
        "--sample", action="store_true", help="sample from the model's distribution"
    )
    sampling.add_argument(
        "--temperature",
        type=float,
        default=None,
        help="with --sample: > 0; below 1 sharpens, above 1 flattens "
        f"(default: {defaults['temperature']})",
    )
    sampling.add_argument(
        "--top-k",
        dest="top_k",
        type=int,
        default=None,
        help="with --sample: draw from the K most probable tokens only (default: all)",
    )
    sampling.add_argument(
        "--top-p",
        dest="top_p",
        type=float,
        default=None,
        help="with --sample: draw from the most probable tokens whose probabilities sum to "
        "P, in (0, 1] (default: 1, no cut)",
    )
    sampling.add_argument(
        "--seed",
        type=int,
        default=None,
        help="with --sample: seed for repeatable output; batch i uses seed + i (default: a new "
        "draw each time)",
    )


_FLAGS = {"beam_width": "--beam-width", "n_best": "--n-best", "length_penalty": "--length-penalty"}


def decoding_options(args: argparse.Namespace) -> DecodingOptions:
    """The `DecodingOptions` the decoding flags (`add_search_arguments`,
    `add_sampling_arguments`) give.

    Only the flags given are set (`--beam-width`/`--beam` when given).
    `--sample` with any beam option, or a sampling option without `--sample`,
    is a `ValueError` naming the flags.
    """
    given_beam = args.beam_option is not None
    fields = {
        "beam_width": args.beam_width if given_beam else None,
        "n_best": args.n_best,
        "length_penalty": args.length_penalty,
        "max_output_length": args.max_output_length,
        "temperature": args.temperature,
        "top_k": args.top_k,
        "top_p": args.top_p,
        "seed": args.seed,
    }
    beam, sampling = conflicts(args.sample, fields)
    if sampling:
        flags = ", ".join(f"--{name.replace('_', '-')}" for name in sampling)
        raise ValueError(f"{flags} only go with --sample")
    if beam:
        flags = ", ".join(
            _FLAGS[name] if name == "length_penalty" else f"{_FLAGS[name]} {fields[name]}"
            for name in beam
        )
        raise ValueError(f"--sample cannot be combined with beam search ({flags})")
    return DecodingOptions(sample=args.sample, **fields)


def remote_decoding_options(args: argparse.Namespace) -> DecodingOptions:
    """`decoding_options` as sent over the wire.

    With none of `--beam-width` (or its alias `--beam`), `--n-best`,
    `--length-penalty`, `--max-output-length` given, the request stays a
    `text`-only one to `serving_default` (or the `--signature` given) that
    every export and a batching server take; any of them sends the `search`
    signature's inputs, so `--beam N` means the same width locally and over
    the wire.
    """
    return decoding_options(args)
