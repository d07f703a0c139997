"""The vocabulary shortlist's defaults, without TensorFlow (for the command line's flags)."""

from __future__ import annotations

DEFAULT_FREQUENT = 300
"""The most frequent target ids that are always candidates, unless told otherwise."""

MEASURES = ("lmi", "dice")
"""How `VocabularyShortlist.build` may rank a source id's target ids; the first is the default."""

AUTO_K = 100
"""Target ids per source id of the shortlist `auto` gives a large target vocabulary."""

AUTO_MIN_TARGET_VOCABULARY = 10_000
"""The smallest target vocabulary `auto` gives a shortlist (why: docs/research/model-notes.md)."""


def auto_shortlist_size(target_vocabulary_size: int, jit_compile: bool = False) -> int | None:
    """`k` of the shortlist an export with `shortlist="auto"` gets: `AUTO_K` for a
    target vocabulary of at least `AUTO_MIN_TARGET_VOCABULARY` ids, else `None` (no
    shortlist: a small vocabulary costs little to score whole). `None` with
    `jit_compile`, which a shortlist cannot be combined with."""
    if jit_compile or target_vocabulary_size < AUTO_MIN_TARGET_VOCABULARY:
        return None
    return AUTO_K
