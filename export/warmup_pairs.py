"""The (source, reference translation) pairs an export's warmup requests are built from."""

from __future__ import annotations

from pathlib import Path

DEFAULT_WARMUP_PAIRS: tuple[tuple[str, str], ...] = (
    ("Hello.", "Bonjour."),
    ("How are you?", "Comment allez-vous ?"),
    ("I don't know what to do.", "Je ne sais pas quoi faire."),
    ("", ""),
)
"""Warmup sentences when the training run has no test split to take them from."""

WARMUP_SENTENCES = 8
"""At most this many (source, reference) pairs of the run's test split are used for warmup."""


def run_warmup_pairs(run) -> list[tuple[str, str]] | None:
    """The first `WARMUP_SENTENCES` pairs of a `RunDirectory`'s test split (else of its
    validation split) and an empty pair, or `None` when neither has any."""
    pairs = read_pairs(run.test_split, WARMUP_SENTENCES) or read_pairs(
        run.validation_split, WARMUP_SENTENCES
    )
    return pairs + [("", "")] if pairs else None


def read_pairs(path: Path, limit: int) -> list[tuple[str, str]]:
    """The first `limit` pairs with distinct sources of a `source<TAB>target` file."""
    if not path.is_file():
        return []
    pairs, seen = [], set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 2 and parts[0] not in seen:
                seen.add(parts[0])
                pairs.append((parts[0], parts[1]))
                if len(pairs) == limit:
                    break
    return pairs
