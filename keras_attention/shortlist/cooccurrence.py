"""A shortlist's table, counted from sentence pairs: co-occurrence, ranked by LMI or Dice."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

from keras_attention.shortlist.defaults import MEASURES
from keras_attention.text.vocabulary import PAD_ID

logger = logging.getLogger(__name__)

_MERGE_EVERY = 20_000  # sentence pairs between two merges of the co-occurrence counts


class CooccurrenceTable(NamedTuple):
    """What `cooccurrence_table` counts: a `VocabularyShortlist`'s arrays."""

    table: np.ndarray  # int32 (source_vocabulary_size, k), padded with the padding id
    frequent_ids: np.ndarray  # (m,) the most frequent target ids, sorted
    pairs: int  # the number of sentence pairs counted


def cooccurrence_table(
    pairs: Iterable[tuple[Sequence[int], Sequence[int]]],
    source_vocabulary_size: int,
    target_vocabulary_size: int,
    k: int,
    frequent: int,
    special_ids: Sequence[int],
    measure: str,
) -> CooccurrenceTable:
    """The table and frequent ids of `VocabularyShortlist.build` (its steps 1-3).

    Row `s` holds the `k` target ids with the highest LMI (`"lmi"`) or Dice
    coefficient (`"dice"`) with `s`, ties to the lower id, padded with the
    padding id. The co-occurrence counts are kept sparse, as sorted
    `s * V + t` keys merged every `_MERGE_EVERY` pairs, so a large corpus
    streams through.

    Args:
        pairs: `(source_ids, target_ids)` of each sentence pair (ints).
        source_vocabulary_size: int, the number of source ids.
        target_vocabulary_size: int, `V`, the number of target ids.
        k: int in `[1, V]`, target ids per source id.
        frequent: int >= 0, the most frequent target ids kept (all of them
            when the vocabulary has fewer).
        special_ids: the reserved target ids, padding first.
        measure: one of `MEASURES`.

    Returns:
        A `CooccurrenceTable`.

    Raises:
        ValueError: a bad size, `k`, `frequent` or `measure`, no pairs, or
            an id out of range.
    """
    check_int("source_vocabulary_size", source_vocabulary_size, 1)
    check_int("target_vocabulary_size", target_vocabulary_size, 1)
    check_shortlist_size(k, frequent, target_vocabulary_size)
    if measure not in MEASURES:
        raise ValueError(f"`measure` must be one of {MEASURES}. Received: measure={measure!r}")
    special_ids = tuple(int(i) for i in special_ids)
    pad = special_ids[0]
    source_size, target_size = source_vocabulary_size, target_vocabulary_size
    is_special = np.zeros(target_size, bool)
    is_special[list(special_ids)] = True
    source_counts = np.zeros(source_size, np.int64)
    target_counts = np.zeros(target_size, np.int64)
    occurrences = np.zeros(target_size, np.int64)
    keys, counts = np.zeros(0, np.int64), np.zeros(0, np.int64)
    pending: list[np.ndarray] = []
    seen: list[np.ndarray] = []
    count = 0
    for source_ids, target_ids in pairs:
        source = np.asarray(source_ids, np.int64).reshape(-1)
        target = np.asarray(target_ids, np.int64).reshape(-1)
        _check_range("source", source, source_size)
        _check_range("target", target, target_size)
        count += 1
        seen.append(target)
        source = np.unique(source[source != PAD_ID])
        target = np.unique(target)
        target = target[~is_special[target]]
        source_counts[source] += 1
        target_counts[target] += 1
        pending.append((source[:, np.newaxis] * target_size + target).reshape(-1))
        if len(pending) == _MERGE_EVERY:
            keys, counts = _merge(keys, counts, pending)
            occurrences += np.bincount(np.concatenate(seen), minlength=target_size)
            pending, seen = [], []
    if count == 0:
        raise ValueError("`pairs` is empty: a shortlist needs sentence pairs to count.")
    keys, counts = _merge(keys, counts, pending)
    if seen:
        occurrences += np.bincount(np.concatenate(seen), minlength=target_size)
    sources, targets = keys // target_size, keys % target_size
    expected = source_counts[sources] * target_counts[targets] / count  # if independent
    if measure == "lmi":
        score = counts * np.log(counts / expected)
    else:
        score = 2.0 * counts / (source_counts[sources] + target_counts[targets])
    order = np.lexsort((targets, -score, sources))  # by source, best first, lower id on ties
    sources, targets = sources[order], targets[order]
    starts = np.searchsorted(sources, np.arange(source_size))
    rank = np.arange(sources.size) - starts[sources]
    kept = rank < k
    table = np.full((source_size, k), pad, np.int32)
    table[sources[kept], rank[kept]] = targets[kept]
    occurrences[is_special] = -1
    by_frequency = np.lexsort((np.arange(target_size), -occurrences))
    frequent_ids = np.sort(by_frequency[: min(frequent, int((~is_special).sum()))])
    logger.info(
        "Vocabulary shortlist: %d pairs, %d source ids x %d targets, %d frequent",
        count,
        source_size,
        k,
        frequent_ids.size,
    )
    return CooccurrenceTable(table, frequent_ids, count)


def check_shortlist_size(k, frequent, target_vocabulary_size: int) -> None:
    """Raises `ValueError` unless `1 <= k <= V` (the target vocabulary size) and
    `frequent >= 0`."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k:
        raise ValueError(f"The shortlist's `k` must be an integer >= 1. Received: k={k!r}")
    if k > target_vocabulary_size:
        raise ValueError(
            f"The shortlist's `k` must be at most the target vocabulary size, "
            f"{target_vocabulary_size}. Received: k={k!r}"
        )
    if isinstance(frequent, bool) or not isinstance(frequent, (int, np.integer)) or frequent < 0:
        raise ValueError(
            f"The shortlist's `frequent` must be an integer >= 0. Received: frequent={frequent!r}"
        )


def check_int(name: str, value, minimum: int) -> None:
    """Raises `ValueError` unless `value` is an integer (not a bool) >= `minimum`."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}. Received: {name}={value!r}")


def _check_range(side: str, ids: np.ndarray, size: int) -> None:
    if ids.size and (ids.min() < 0 or ids.max() >= size):
        raise ValueError(f"A {side} id is outside [0, {size}): {int(ids.min())}..{int(ids.max())}")


def _merge(keys: np.ndarray, counts: np.ndarray, pending: list[np.ndarray]):
    """`(keys, counts)` with every key of `pending` counted once more."""
    if not pending:
        return keys, counts
    merged, inverse = np.unique(np.concatenate([keys, *pending]), return_inverse=True)
    weights = np.concatenate([counts, np.ones(sum(p.size for p in pending), np.int64)])
    return merged, np.bincount(inverse, weights=weights, minlength=merged.size).astype(np.int64)
