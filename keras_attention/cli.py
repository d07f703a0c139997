"""The `keras-attention` command line.

Thin by design: each subcommand parses its arguments and calls library
functions that tests can call directly. TensorFlow is imported only inside the
subcommands, so `keras-attention --help` is instant.
"""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="keras-attention",
        description=(
            "Attention-based sequence-to-sequence models with Keras 3: "
            "train, evaluate, translate, plot, export for TensorFlow Serving, serve."
        ),
    )
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
