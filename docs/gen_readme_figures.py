"""Renders the measured figures in README.md from the results files under benchmarks/results/.

    python docs/gen_readme_figures.py           # rewrite the figures in README.md
    python docs/gen_readme_figures.py --check   # exit 1 if a figure in README.md is stale

GitHub shows the README as it is committed, so its figures cannot be filled in
at build time as the site's are (docs/hooks/figures.py). Each one sits between
two HTML comments instead, the first holding the same call a docs page would use:

    <!-- figure("default_run", "runs.native_bf16_8_epochs.evaluation.beam.bleu", ".2f") -->47.41<!-- /figure -->
    <!-- provenance() -->
    | figures | command | code | date | CPU | precision |
    ...
    <!-- /provenance -->

and this script rewrites the text between them from the results file. A figure
changes in the README only through its results file; tests/docs/test_figures.py
fails while the committed README differs from what this script writes.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
README = REPOSITORY / "README.md"
COMMAND = "python docs/gen_readme_figures.py"


def _figures_module():
    """docs/hooks/figures.py, which MkDocs loads by path as a hook (not a package)."""
    path = Path(__file__).resolve().parent / "hooks" / "figures.py"
    spec = importlib.util.spec_from_file_location("docs_figures", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


figures = _figures_module()


def render(text: str | None = None) -> str:
    """README.md's text with every figure between its markers rendered again."""
    text = README.read_text(encoding="utf-8") if text is None else text
    return figures.render_markers(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Render README.md's figures from benchmarks/results/*.json."
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if README.md differs; write nothing"
    )
    args = parser.parse_args(argv)
    committed = README.read_text(encoding="utf-8")
    rendered = render(committed)
    if args.check:
        if rendered != committed:
            print(
                f"README.md's figures differ from benchmarks/results: run `{COMMAND}`",
                file=sys.stderr,
            )
            return 1
        return 0
    if rendered != committed:
        README.write_text(rendered, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
