"""Splitting a parallel corpus into train / validation / test without leakage."""

from __future__ import annotations

import dataclasses
import logging
import math
import random
from collections.abc import Iterable

logger = logging.getLogger(__name__)

Pair = tuple[str, str]


@dataclasses.dataclass
class CorpusSplits:
    """Train, validation and test pairs; no source sentence is in two of them.

    Each split is a list of `(source, target)` pairs in which every
    translation of a source sentence is kept (a source with three
    translations gives three pairs, next to each other). Use
    `group_references(splits.test)` to get each source with all its
    reference translations for multi-reference BLEU.
    """

    train: list[Pair]
    validation: list[Pair]
    test: list[Pair]

    def references(self, split: str) -> list[tuple[str, list[str]]]:
        """`group_references` of the split named `"train"`, `"validation"` or `"test"`."""
        if split not in ("train", "validation", "test"):
            raise ValueError(
                f"`split` must be 'train', 'validation' or 'test'. Received: split={split!r}"
            )
        return group_references(getattr(self, split))


def group_references(pairs: Iterable[Pair]) -> list[tuple[str, list[str]]]:
    """Groups pairs by source sentence, for multi-reference evaluation.

    Args:
        pairs: `(source, target)` pairs.

    Returns:
        A list of `(source, [target, ...])`: each distinct source once, in the
        order of its first pair, with its targets in pair order.

    Example:

    >>> group_references([("Hi.", "Salut."), ("Run!", "Cours !"), ("Hi.", "Bonjour.")])
    [('Hi.', ['Salut.', 'Bonjour.']), ('Run!', ['Cours !'])]
    """
    groups: dict[str, list[str]] = {}
    for source, target in pairs:
        groups.setdefault(source, []).append(target)
    return list(groups.items())


def _check_fraction(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(f"`{name}` must be a number in [0, 1). Received: {name}={value!r}")
    return float(value)


def _group_count(fraction: float, groups: int) -> int:
    """How many source groups a split of `fraction` gets: at least one when asked for any."""
    if fraction == 0:
        return 0
    return max(1, math.floor(fraction * groups + 0.5))


def split_corpus(
    pairs: Iterable[Pair],
    validation_fraction: float = 0.02,
    test_fraction: float = 0.02,
    seed: int = 0,
    max_pairs: int | None = None,
) -> CorpusSplits:
    """Shuffles and splits sentence pairs by unique source sentence.

    The computation:

    1. Pairs are grouped by source sentence (each group holds every
       translation of that sentence).
    2. The groups are shuffled with `random.Random(seed)` (the bundled file is
       sorted by length, so a split without shuffling would test on the
       longest sentences only).
    3. With `max_pairs`, groups are taken in that shuffled order until
       `max_pairs` pairs are reached (the last group taken may give only some
       of its translations, so there are exactly `max_pairs` pairs).
    4. The first `test_fraction` of the groups (rounded, at least one when the
       fraction is above 0) make the test split, the next
       `validation_fraction` the validation split, the rest the training
       split. Fractions count source sentences, not pairs.

    The same pairs and seed always give the same splits.

    Args:
        pairs: `(source, target)` pairs, such as `load_corpus().pairs`.
        validation_fraction: float in [0, 1), share of source sentences held
            out for validation.
        test_fraction: float in [0, 1), share held out for testing.
        seed: int, the shuffling seed.
        max_pairs: int or `None`, the number of pairs to sample before
            splitting.

    Returns:
        A `CorpusSplits`.

    Raises:
        ValueError: for bad fractions or `max_pairs`, or when there are too
            few distinct source sentences to give every requested split one
            and keep one for training.

    Example:

    >>> pairs = [(f"s{i}", f"t{i}") for i in range(100)]
    >>> splits = split_corpus(pairs, validation_fraction=0.1, test_fraction=0.1)
    >>> len(splits.train), len(splits.validation), len(splits.test)
    (80, 10, 10)
    """
    validation_fraction = _check_fraction("validation_fraction", validation_fraction)
    test_fraction = _check_fraction("test_fraction", test_fraction)
    if validation_fraction + test_fraction >= 1:
        raise ValueError(
            "`validation_fraction + test_fraction` must be below 1 to leave training data. "
            f"Received: validation_fraction={validation_fraction}, test_fraction={test_fraction}"
        )
    if max_pairs is not None and (
        isinstance(max_pairs, bool) or not isinstance(max_pairs, int) or max_pairs < 1
    ):
        raise ValueError(
            f"`max_pairs` must be a positive int or None. Received: max_pairs={max_pairs!r}"
        )

    groups = group_references(pairs)
    random.Random(seed).shuffle(groups)
    if max_pairs is not None:
        sampled, total = [], 0
        for source, targets in groups:
            if total >= max_pairs:
                break
            targets = targets[: max_pairs - total]
            sampled.append((source, targets))
            total += len(targets)
        groups = sampled

    n_test = _group_count(test_fraction, len(groups))
    n_validation = _group_count(validation_fraction, len(groups))
    if n_test + n_validation >= len(groups):
        raise ValueError(
            f"{len(groups)} distinct source sentences are too few for validation_fraction="
            f"{validation_fraction} and test_fraction={test_fraction}: each split asked for "
            "needs at least one and training needs at least one."
        )

    def expand(chunk):
        return [(source, target) for source, targets in chunk for target in targets]

    splits = CorpusSplits(
        train=expand(groups[n_test + n_validation :]),
        validation=expand(groups[n_test : n_test + n_validation]),
        test=expand(groups[:n_test]),
    )
    logger.info(
        "Split %d source sentences into train/validation/test = %d/%d/%d pairs",
        len(groups),
        len(splits.train),
        len(splits.validation),
        len(splits.test),
    )
    return splits
