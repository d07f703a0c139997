"""Writes the bundled corpus's earlier test split as files, for runs compared with it.

Before training read its corpus as a stream, `keras-attention train` split the
bundled corpus in memory with `split_corpus`'s defaults (2 % of the distinct
English sources for validation and 2 % for test, groups shuffled with seed 0);
the default's earlier figures (2,337 test sources) were scored on that split.
This script writes the same split as three TSV files, so that the default recipe
of today trains and scores on it with

    python benchmarks/earlier_split.py --out earlier-split
    keras-attention train --data earlier-split/train.tsv \\
        --validation-data earlier-split/validation.tsv \\
        --test-data earlier-split/test.tsv --out runs/earlier-split
    keras-attention evaluate runs/earlier-split --no-replace-unknown

(`--no-replace-unknown`: the earlier figures were scored without unknown-word
replacement).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import harness

harness.quiet_tensorflow()

from keras_attention.data import load_corpus, split_corpus  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--out", type=Path, default=Path("earlier-split"))
    args = parser.parse_args(argv)
    harness.print_machine_header()
    splits = split_corpus(load_corpus().pairs)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in ("train", "validation", "test"):
        pairs = getattr(splits, name)
        path = args.out / f"{name}.tsv"
        path.write_text("".join(f"{source}\t{target}\n" for source, target in pairs), "utf-8")
        print(f"{path}: {len(pairs):,} pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
