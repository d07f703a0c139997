"""`DatasetOptions`: how `make_dataset` batches, orders and limits the pairs it is given."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

LONG_PAIRS = ("drop", "truncate")
"""What `make_dataset` may do with pairs over the length limits."""


def _positive_int_or_none(name: str, value) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"`{name}` must be a positive int or None. Received: {name}={value!r}")


@dataclasses.dataclass(frozen=True)
class DatasetOptions:
    """How `make_dataset` turns sentence pairs into training batches.

    Args:
        batch_size: int, sentences per batch (with `tokens_per_batch`, the
            most sentences per batch).
        shuffle: bool, whether to shuffle (use `False` for evaluation).
        seed: int, the shuffle seed.
        bucket_boundaries: increasing sequence lengths that separate the
            length buckets; `None` uses `DEFAULT_BUCKET_BOUNDARIES` below the
            length limit; an empty sequence turns bucketing off (plain padded
            batches in data order).
        max_length: int or `None`: at most this many ids per side (`None`:
            each vectorizer's own `max_length`).
        tokens_per_batch: int or `None`; when set, a bucket whose sequences
            are at most `L` long gets `min(batch_size, tokens_per_batch // L)`
            sentences per batch (at least 1).
        long_pairs: `"drop"` or `"truncate"`, what to do with pairs over the
            limits.
        max_length_ratio: float or `None`: drop pairs whose longer side has
            more than this many times the tokens of the shorter (misaligned
            lines of a crawled corpus); `None` keeps every ratio.
        cache: bool, whether to cache the vectorized pairs in memory.
        repeat: bool, whether to make an endless, deterministic stream of
            passes over the pairs.

    Raises:
        ValueError: a value out of its range (named in the message).

    >>> DatasetOptions(batch_size=64, shuffle=False).long_pairs
    'drop'
    >>> DatasetOptions(batch_size=0)
    Traceback (most recent call last):
    ...
    ValueError: `batch_size` must be a positive int. Received: batch_size=0
    """

    batch_size: int
    shuffle: bool = True
    seed: int = 0
    bucket_boundaries: Sequence[int] | None = None
    max_length: int | None = None
    tokens_per_batch: int | None = None
    long_pairs: str = "drop"
    max_length_ratio: float | None = None
    cache: bool = True
    repeat: bool = False

    def __post_init__(self):
        size = self.batch_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"`batch_size` must be a positive int. Received: batch_size={size!r}")
        _positive_int_or_none("max_length", self.max_length)
        _positive_int_or_none("tokens_per_batch", self.tokens_per_batch)
        ratio = self.max_length_ratio
        if ratio is not None and (
            isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not ratio >= 1
        ):
            raise ValueError(
                f"`max_length_ratio` must be a number >= 1 or None. Received: max_length_ratio={ratio!r}"
            )
        if self.long_pairs not in LONG_PAIRS:
            raise ValueError(
                "`long_pairs` must be 'drop' or 'truncate'. "
                f"Received: long_pairs={self.long_pairs!r}"
            )
        if self.bucket_boundaries is not None:
            boundaries = [int(b) for b in self.bucket_boundaries]
            if any(b < 1 for b in boundaries) or boundaries != sorted(set(boundaries)):
                raise ValueError(
                    "`bucket_boundaries` must be strictly increasing positive ints. "
                    f"Received: bucket_boundaries={self.bucket_boundaries!r}"
                )
            object.__setattr__(self, "bucket_boundaries", tuple(boundaries))
