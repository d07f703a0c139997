"""A synthetic translation task whose word alignments are known, to measure attention.

Digit strings are "translated" into French number words in a reordered way: with
`order="reverse"`, "3 7 1" -> "un sept trois", so target word t comes from source
digit n - 1 - t (the diagonal is not the answer). A model whose attention learned the
alignment puts its largest weight at target step t on that source position.
"""

from __future__ import annotations

import dataclasses

import numpy as np

FRENCH_DIGITS = ("zéro", "un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf")
PAD, START, END = 0, 1, 2
FIRST_DIGIT = 3  # digit d has the id d + 3 on both sides; 13 ids in all
VOCABULARY_SIZE = FIRST_DIGIT + 10
ORDERS = ("reverse", "monotonic")


@dataclasses.dataclass(frozen=True)
class AlignmentTask:
    """Token ids of the task, ready for `Seq2Seq.fit`.

    Attributes:
        source_ids: int32 `(count, max_length)`, 0-padded digit ids.
        target_in: int32 `(count, max_length + 1)`, `[START]` then the words.
        target_out: int32 `(count, max_length + 1)`, the words then `[END]`.
        alignment: int32 `(count, max_length)`: the source position of target word t
            (-1 past the sentence).
        lengths: int32 `(count,)`, words per sentence.
    """

    source_ids: np.ndarray
    target_in: np.ndarray
    target_out: np.ndarray
    alignment: np.ndarray
    lengths: np.ndarray

    def texts(self) -> list[tuple[str, str]]:
        """The pairs as text (`"3 7 1"`, `"un sept trois"`)."""
        pairs = []
        for source, target, n in zip(self.source_ids, self.target_out, self.lengths, strict=True):
            digits = " ".join(str(i - FIRST_DIGIT) for i in source[:n])
            words = " ".join(FRENCH_DIGITS[i - FIRST_DIGIT] for i in target[:n])
            pairs.append((digits, words))
        return pairs


def make_alignment_task(
    count: int, seed: int = 0, order: str = "reverse", min_length: int = 3, max_length: int = 9
) -> AlignmentTask:
    """`count` random sentences of `min_length..max_length` digits.

    Raises:
        ValueError: for an unknown `order`, a non-positive `count` or bad lengths.
    """
    if order not in ORDERS:
        raise ValueError(f"`order` must be one of {ORDERS}. Received: order={order!r}")
    if count < 1:
        raise ValueError(f"`count` must be a positive integer. Received: count={count}")
    if not 1 <= min_length <= max_length:
        raise ValueError(
            "Need 1 <= min_length <= max_length. "
            f"Received: min_length={min_length}, max_length={max_length}"
        )
    rng = np.random.default_rng(seed)
    source = np.zeros((count, max_length), "int32")
    target_in = np.zeros((count, max_length + 1), "int32")
    target_out = np.zeros((count, max_length + 1), "int32")
    alignment = np.full((count, max_length), -1, "int32")
    lengths = rng.integers(min_length, max_length + 1, size=count).astype("int32")
    for i, n in enumerate(lengths):
        digits = rng.integers(0, 10, size=n) + FIRST_DIGIT
        positions = np.arange(n)[::-1] if order == "reverse" else np.arange(n)
        source[i, :n] = digits
        target_in[i, : n + 1] = [START, *digits[positions]]
        target_out[i, : n + 1] = [*digits[positions], END]
        alignment[i, :n] = positions
    return AlignmentTask(source, target_in, target_out, alignment, lengths)


def alignment_accuracy(attention, task: AlignmentTask, tolerance: int = 0) -> float:
    """Share of target words whose attention argmax is their aligned source position.

    Args:
        attention: `(count, Tt, Ts)` weights for the task's `target_in` (teacher forcing),
            e.g. from `Seq2Seq.call_with_attention`; `Tt >= max_length`.
        task: the task the attention was computed on.
        tolerance: how many positions the argmax may be off (0: exactly the aligned
            position). A bidirectional encoder's annotation of a neighbouring word also
            carries the word (it read it one step before), so an attention one position
            off can be a consistent alignment: `tolerance=1` counts it.

    Raises:
        ValueError: for a negative `tolerance` or `attention` of the wrong shape.
    """
    if isinstance(tolerance, bool) or not isinstance(tolerance, int) or tolerance < 0:
        raise ValueError(f"`tolerance` must be an int >= 0. Received: tolerance={tolerance!r}")
    return float((np.abs(_argmax_offsets(attention, task)) <= tolerance).mean())


def alignment_offsets(attention, task: AlignmentTask) -> dict[int, float]:
    """How far the attention argmax is from the aligned source position, as shares.

    `{offset: share}` over the task's target words, `offset = argmax - aligned`,
    largest share first: `{0: 1.0}` is a perfect alignment, `{1: 0.9, 0: 0.1}` an
    alignment one position to the right.

    Raises:
        ValueError: for `attention` of the wrong shape (as `alignment_accuracy`).
    """
    offsets, counts = np.unique(_argmax_offsets(attention, task), return_counts=True)
    order = np.argsort(-counts, kind="stable")
    return {int(offsets[i]): float(counts[i] / counts.sum()) for i in order}


def _argmax_offsets(attention, task: AlignmentTask) -> np.ndarray:
    """`argmax - aligned position` of every target word of the task (padding left out)."""
    attention = np.asarray(attention)
    count, length = task.alignment.shape
    if attention.ndim != 3 or attention.shape[0] != count or attention.shape[1] < length:
        raise ValueError(
            f"`attention` must have shape (count={count}, Tt>={length}, Ts) for this task. "
            f"Received: shape={attention.shape}"
        )
    argmax = attention.argmax(-1)[:, :length]
    real = task.alignment >= 0
    return argmax[real] - task.alignment[real]
