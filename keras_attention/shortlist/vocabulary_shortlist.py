"""`VocabularyShortlist`: the target ids a translation may use, chosen from its source ids."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

import numpy as np
import tensorflow as tf

from keras_attention.shortlist.cooccurrence import check_int, cooccurrence_table
from keras_attention.shortlist.defaults import DEFAULT_FREQUENT, MEASURES
from keras_attention.text.vocabulary import END_ID, PAD_ID, START_ID, UNK_ID

SPECIAL_IDS = (PAD_ID, UNK_ID, START_ID, END_ID)


class VocabularyShortlist:
    """A vocabulary shortlist (Marian's lexical shortlist, CTranslate2's vocabulary map).

    For a batch of source sentences, the decoder scores only the candidate
    target ids instead of the whole target vocabulary: the union of the
    table's rows for every source id of the batch, the `frequent_ids`, and
    the ids `0 .. max(special_ids)`, sorted. Each sentence may emit only its
    own candidates among them (`allowed`), so that its translation does not
    depend on what it was batched with. Those first ids keep their own
    positions (`candidates[i] == i`), so the start, end and padding ids
    mean the same among candidates as in the vocabulary.

    `build` makes the table from `N` sentence pairs: row `s` holds the `k`
    target ids `t` with the highest local mutual information (the count
    times the pointwise mutual information)

        lmi(s, t) = c(s, t) log(N c(s, t) / (c(s) c(t)))

    where `c(s, t)` counts the pairs whose source holds `s` and whose target
    holds `t`, and `c(s)`, `c(t)` the pairs holding each (ties go to the
    lower id); or, with `measure="dice"`, the highest Dice coefficient
    `2 c(s, t) / (c(s) + c(t))`. Either way a target word seen in most
    sentences scores low unless it goes with `s` more than with the others,
    so frequent words do not crowd out a word's translations; they come in
    through `frequent_ids` instead.

    Args:
        table: int array `(source_vocabulary_size, k)`, row `s` the target
            ids of source id `s`, padded with `special_ids[0]` (padding).
        frequent_ids: int array `(m,)`, target ids that are always
            candidates (`m` may be 0).
        target_vocabulary_size: int, the number of target ids.
        special_ids: the reserved target ids (padding first); every id up
            to the largest is always a candidate. Defaults to padding,
            `[UNK]`, `[START]`, `[END]` (0, 1, 2, 3).
        measure: str, how the table was ranked (recorded). Defaults to
            `"lmi"`.
        pairs: int or `None`, the number of sentence pairs it was built
            from (recorded).

    Example:

    >>> pairs = [([4, 5], [6, 7]), ([4], [6]), ([5], [7, 8])]
    >>> shortlist = VocabularyShortlist.build(pairs, 6, 9, k=1, frequent=1)
    >>> shortlist.table.tolist()
    [[0], [0], [0], [0], [6], [7]]
    >>> shortlist.candidates(tf.constant([[4, 5, 0]])).numpy().tolist()
    [0, 1, 2, 3, 6, 7]
    """

    def __init__(
        self,
        table,
        frequent_ids,
        target_vocabulary_size: int,
        special_ids: Sequence[int] = SPECIAL_IDS,
        measure: str = MEASURES[0],
        pairs: int | None = None,
    ):
        table = np.asarray(table)
        frequent_ids = np.asarray(frequent_ids).reshape(-1)
        check_int("target_vocabulary_size", target_vocabulary_size, 1)
        special_ids = tuple(int(i) for i in special_ids)
        if not special_ids or min(special_ids) < 0 or max(special_ids) >= target_vocabulary_size:
            raise ValueError(
                f"`special_ids` must be ids in [0, {target_vocabulary_size}). "
                f"Received: special_ids={special_ids}"
            )
        if table.ndim != 2 or table.shape[0] < 1 or table.shape[1] < 1:
            raise ValueError(
                "`table` must have shape (source_vocabulary_size, k), both >= 1. "
                f"Received: shape={table.shape}"
            )
        for name, ids in (("table", table), ("frequent_ids", frequent_ids)):
            if ids.size and (
                not np.issubdtype(ids.dtype, np.integer)
                or ids.min() < 0
                or ids.max() >= target_vocabulary_size
            ):
                raise ValueError(
                    f"`{name}` must hold target ids in [0, {target_vocabulary_size}). "
                    f"Received: dtype {ids.dtype}, range [{ids.min()}, {ids.max()}]"
                )
        self.table = table.astype(np.int32)
        self.frequent_ids = frequent_ids.astype(np.int32)
        self.target_vocabulary_size = int(target_vocabulary_size)
        self.special_ids = special_ids
        self.measure = str(measure)
        self.pairs = pairs
        always = np.union1d(np.arange(max(special_ids) + 1), self.frequent_ids)
        with tf.init_scope():  # variables, not graph constants: an export stores them once
            self._table = tf.Variable(self.table, trainable=False, name="shortlist_table")
            self._always = tf.Variable(
                always.astype(np.int32), trainable=False, name="shortlist_always"
            )

    @property
    def source_vocabulary_size(self) -> int:
        return int(self.table.shape[0])

    @property
    def k(self) -> int:
        """Target ids per source id."""
        return int(self.table.shape[1])

    @property
    def variables(self) -> list[tf.Variable]:
        """The table and the always-candidate ids, as an export tracks them."""
        return [self._table, self._always]

    def candidates(self, source_ids, extra_ids=None) -> tf.Tensor:
        """The sorted candidate target ids of a batch.

        Args:
            source_ids: int `(batch_size, T_in)`, padded with 0 (any shape
                of source ids works: every id counts).
            extra_ids: `None`, or int target ids of any shape that must be
                candidates too (e.g. forced prefixes' ids).

        Returns:
            int32 `(C,)`: the union of `table[source_ids]`, `frequent_ids`,
            `0 .. max(special_ids)` and `extra_ids`, sorted, each once.
        """
        ids = tf.reshape(tf.cast(source_ids, tf.int32), [-1])
        chosen = tf.concat([tf.reshape(self.rows(ids), [-1]), self._always], 0)
        if extra_ids is not None:
            chosen = tf.concat([chosen, tf.reshape(tf.cast(extra_ids, tf.int32), [-1])], 0)
        # Marks, then `Where`: the ids in order, each once, with core ops only.
        counts = tf.scatter_nd(
            chosen[:, tf.newaxis], tf.ones_like(chosen), [self.target_vocabulary_size]
        )
        return tf.cast(tf.reshape(tf.where(counts > 0), [-1]), tf.int32)

    def rows(self, source_ids) -> tf.Tensor:
        """The table's rows of `source_ids` (int32, with a last axis of `k`)."""
        return tf.gather(self._table, source_ids)

    def allowed(self, source_ids, candidates) -> tf.Tensor:
        """Which of a batch's `candidates` are each sentence's own candidates.

        A sentence's own candidates are `table[s]` for each of its source ids
        `s` other than padding (0), `frequent_ids` and `0 .. max(special_ids)`:
        what `candidates` gives for that sentence alone. Restricting each row
        to them makes a translation independent of its batch-mates, while
        the batch's union (`candidates`) stays the slice the decoder computes.

        Args:
            source_ids: int `(batch_size, T_in)`, padded with 0.
            candidates: int32 `(C,)`, `candidates(source_ids)`.

        Returns:
            bool `(batch_size, C)`.

        Example:

        >>> shortlist = VocabularyShortlist([[0], [0], [0], [0], [6], [7]], [], 9)
        >>> ids = tf.constant([[4, 5], [5, 0]])
        >>> shortlist.allowed(ids, shortlist.candidates(ids)).numpy().astype(int).tolist()
        [[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 1]]
        """
        source_ids = tf.cast(source_ids, tf.int32)
        pad = tf.constant(self.special_ids[0], tf.int32)
        rows = self.rows(source_ids)  # (batch, T_in, k)
        rows = tf.where(tf.equal(source_ids, PAD_ID)[..., tf.newaxis], pad, rows)
        batch_size = tf.shape(source_ids)[0]
        rows = tf.reshape(rows, [batch_size, -1])
        sentence = tf.broadcast_to(tf.range(batch_size)[:, tf.newaxis], tf.shape(rows))
        marks = tf.scatter_nd(
            tf.reshape(tf.stack([sentence, rows], axis=-1), [-1, 2]),
            tf.ones([tf.size(rows)], tf.int32),
            [batch_size, self.target_vocabulary_size],
        )
        always = tf.scatter_nd(
            self._always[:, tf.newaxis],
            tf.ones_like(self._always),
            [self.target_vocabulary_size],
        )
        own = tf.gather(marks, candidates, axis=1) > 0
        return tf.logical_or(own, (tf.gather(always, candidates) > 0)[tf.newaxis, :])

    def describe(self) -> dict:
        """What the export manifest records about the shortlist."""
        return {
            "k": self.k,
            "frequent": int(self.frequent_ids.size),
            "measure": self.measure,
            "pairs": self.pairs,
            "special_ids": list(self.special_ids),
            "table_shape": [self.source_vocabulary_size, self.k],
            "table_bytes": int(self.table.nbytes),
        }

    @classmethod
    def build(
        cls,
        pairs: Iterable[tuple[Sequence[int], Sequence[int]]],
        source_vocabulary_size: int,
        target_vocabulary_size: int,
        k: int,
        frequent: int = DEFAULT_FREQUENT,
        special_ids: Sequence[int] = SPECIAL_IDS,
        measure: str = MEASURES[0],
    ) -> VocabularyShortlist:
        """The shortlist of `k` target ids per source id, by co-occurrence in `pairs`.

        1. Each of the `N` pairs counts once for each distinct source id and
           each distinct target id in it (special ids are not counted as
           targets, padding not as a source), and once for each (source id,
           target id) combination: `c(s)`, `c(t)`, `c(s, t)`.
        2. Row `s` of the table: the `k` targets with the highest
           `c(s, t) log(N c(s, t) / (c(s) c(t)))` (`"lmi"`) or
           `2 c(s, t) / (c(s) + c(t))` (`"dice"`) among those that co-occur
           with `s`, ties to the lower id, padded with the padding id when
           fewer co-occur with `s`.
        3. `frequent_ids`: the `frequent` target ids seen most often (every
           occurrence counts), ties to the lower id.

        (`cooccurrence.cooccurrence_table` counts them.)

        Args:
            pairs: `(source_ids, target_ids)` of each sentence pair (ints).
            source_vocabulary_size: int, the number of source ids.
            target_vocabulary_size: int, the number of target ids.
            k: int in `[1, target_vocabulary_size]`, target ids per source
                id.
            frequent: int >= 0, the most frequent target ids always kept
                (all of them when the vocabulary has fewer). Defaults to
                `DEFAULT_FREQUENT`.
            special_ids: the reserved target ids, padding first.
            measure: one of `MEASURES`, `"lmi"` (the default; the comparison
                with Dice: docs/benchmarks.md) or `"dice"`.

        Raises:
            ValueError: a bad `k`, `frequent` or `measure`, no pairs, or an
                id out of range.
        """
        special_ids = tuple(int(i) for i in special_ids)
        counted = cooccurrence_table(
            pairs, source_vocabulary_size, target_vocabulary_size, k, frequent, special_ids, measure
        )
        return cls(
            counted.table,
            counted.frequent_ids,
            target_vocabulary_size,
            special_ids,
            measure,
            pairs=counted.pairs,
        )

    @classmethod
    def from_run(
        cls,
        run_dir: str | os.PathLike,
        k: int,
        frequent: int = DEFAULT_FREQUENT,
        measure: str = MEASURES[0],
    ) -> VocabularyShortlist:
        """`build` on the training split of a trained run, as the run tokenized it.

        The run's corpus is split again with its config (`sample_splits`: the
        same seed and fractions give the same training pairs), tokenized by
        the run's vectorizers and filtered as training filters it
        (`make_dataset` with the run's `max_length`: pairs with an empty
        side or over the length limit are left out); `run_pairs.run_pairs`
        reads them.

        Raises:
            FileNotFoundError: the run or its corpus is missing.
            ValueError: a bad `k` or `frequent`.
        """
        from keras_attention.shortlist.run_pairs import run_pairs

        run = run_pairs(run_dir)
        return cls.build(
            run.pairs,
            run.source_vocabulary_size,
            run.target_vocabulary_size,
            k,
            frequent,
            special_ids=run.special_ids,
            measure=measure,
        )
