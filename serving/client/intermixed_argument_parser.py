"""`IntermixedArgumentParser`: a command's parser that takes its options anywhere among its
positional arguments (both command lines build their commands with it)."""

from __future__ import annotations

import argparse


class IntermixedArgumentParser(argparse.ArgumentParser):
    """A command's parser whose options may come before, between and after its positional
    arguments (`translate --beam-width 4 RUN "text"`, `translate RUN --beam-width 4
    "text"`); `--` still ends the options (a text that starts with `-`).

    argparse's own `parse_args` stops filling a `nargs="*"` positional at the first
    option; `parse_known_intermixed_args` does not, but refuses parsers with commands of
    their own, so this class is the parser of each command (`add_subparsers(
    parser_class=IntermixedArgumentParser)`), not of the program.
    """

    _intermixing = False

    def parse_known_args(self, args=None, namespace=None):
        # parse_known_intermixed_args calls parse_known_args itself (twice).
        if self._intermixing or self._subparsers is not None:
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False
