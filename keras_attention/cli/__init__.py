"""The `keras-attention` command line.

Thin by design: each subcommand parses its arguments and calls library
functions that tests can call directly. TensorFlow is imported only inside the
subcommands, so `keras-attention --help` is instant.

- `parser`: `build_parser`, the one parser of every subcommand;
- `run_commands`: the handlers of `train`, `adapt`, `status`, `evaluate`, `average`, `plot`;
- `translate_command`: the handler of `translate`.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys

from keras_attention import distribution, tensorflow_logging
from keras_attention.cli.parser import build_parser
from keras_attention.cli.run_commands import config_from_args

__all__ = ["build_parser", "config_from_args", "main"]


def _needs_tensorflow(args: argparse.Namespace) -> bool:
    if args.command == "status":
        return False
    return not (args.command == "translate" and args.server)


class _ProgressOnStdout(logging.Handler):
    """Prints a progress record's message on the current `sys.stdout`."""

    def emit(self, record: logging.LogRecord) -> None:
        print(record.getMessage(), file=sys.stdout, flush=True)


@contextlib.contextmanager
def _progress_on_stdout(enabled: bool):
    """Prints the preparation's progress lines (`keras_attention.progress`) while in effect."""
    if not enabled:
        yield
        return
    logger = logging.getLogger("keras_attention.progress")
    handler, saved = _ProgressOnStdout(), (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.level, logger.propagate = saved


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
        with _progress_on_stdout(args.command in ("train", "adapt") and not verbose):
            return args.handler(args)
    except (ValueError, FileNotFoundError, distribution.DistributedTrainingError) as error:
        print(f"keras-attention {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"keras-attention {args.command}: interrupted", file=sys.stderr)
        return 130
