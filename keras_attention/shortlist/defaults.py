"""The vocabulary shortlist's defaults, without TensorFlow (for the command line's flags)."""

from __future__ import annotations

DEFAULT_FREQUENT = 300
"""The most frequent target ids that are always candidates, unless told otherwise."""

MEASURES = ("lmi", "dice")
"""How `VocabularyShortlist.build` may rank a source id's target ids; the first is the default."""

AUTO_K = 100
"""Target ids per source id of the shortlist `auto` gives a large target vocabulary."""

AUTO_MIN_TARGET_VOCABULARY = 10_000
"""The smallest target vocabulary `auto` gives a shortlist when the signatures compute in
bfloat16 or float16 (why: docs/research/model-notes.md)."""

AUTO_MIN_TARGET_VOCABULARY_FLOAT32 = 8_000
"""The same when they compute in float32, where scoring the whole vocabulary reads twice
the bytes of weights a step (why: docs/benchmarks.md, "Where a decoding step's time goes")."""


def auto_shortlist_size(
    target_vocabulary_size: int, jit_compile: bool = False, *, compute_dtype: str
) -> int | None:
    """`k` of the shortlist an export with `shortlist="auto"` gets: `AUTO_K` for a
    target vocabulary of at least `AUTO_MIN_TARGET_VOCABULARY` ids
    (`AUTO_MIN_TARGET_VOCABULARY_FLOAT32` when `compute_dtype` is `"float32"`), else
    `None` (no shortlist: a small vocabulary costs little to score whole). `None` with
    `jit_compile`, which a shortlist cannot be combined with."""
    smallest = (
        AUTO_MIN_TARGET_VOCABULARY_FLOAT32
        if compute_dtype == "float32"
        else AUTO_MIN_TARGET_VOCABULARY
    )
    if jit_compile or target_vocabulary_size < smallest:
        return None
    return AUTO_K
