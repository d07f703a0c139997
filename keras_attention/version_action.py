"""`keras-attention --version`."""

from __future__ import annotations

import argparse
import sys

from keras_attention import installation


class VersionAction(argparse.Action):
    """Prints the installed version and exits 0; warns on stderr about a shared package.

    The line on stdout and the warnings are `installation.version_report()`'s:
    another distribution that also provides `keras_attention` (the unrelated
    `keras-attention`), or a `keras_attention/__init__.py` that is not this
    distribution's.

    Example:

    ```
    parser.add_argument("--version", action=VersionAction, help="...")
    ```
    """

    def __init__(
        self,
        option_strings: list[str],
        dest: str = argparse.SUPPRESS,
        default: object = argparse.SUPPRESS,
        help: str | None = None,
    ) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        line, problems = installation.version_report()
        print(line)
        for problem in problems:
            print(f"{parser.prog}: warning: {problem}", file=sys.stderr)
        parser.exit(0)
