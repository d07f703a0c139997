"""`TfaBeamOptions`: TensorFlow Addons' beam search options, for `BeamSearch`.

TFA's `BeamSearchDecoder` differs from `BeamSearch`'s default search in a few
ways: the initial state arrives already tiled, an ending candidate is ranked
without its end token, a finished hypothesis may be scored with a coverage
penalty, and every step's kept ids, parents and scores are recorded. All of
them are off by default; `keras_attention.seq2seq.BeamSearchDecoder` sets them
on its strategy. They are attributes, not constructor arguments, and not part
of the config.
"""

from __future__ import annotations

import math
from typing import Any

import tensorflow as tf


class TfaBeamOptions:
    """TFA's beam search options and the parts of a step that read them.

    A mixin of `BeamSearch` (which calls `_initial_coverage`, `_never`,
    `_ranked_lengths`, `_coverage` and `_step_records` from its hooks).
    """

    tiled_state: bool = False
    """Whether `initial_state` already has `batch_size * beam_width` rows, a
    sentence's beams on consecutive rows (as `seq2seq.tile_batch` lays them
    out). False: `initialize` repeats every leaf `beam_width` times."""

    tfa_scoring: bool = False
    """TFA's ranking: a candidate that emits `end_id` is ranked by the length
    without its end token (the kept `lengths` still count it), a finished
    hypothesis' continuations other than `pad_id` cost the float32 minimum
    instead of `-inf`, and the beams after the first start finished. With
    `pad_id = end_id` a finished hypothesis repeats the end token, as TFA's."""

    coverage_penalty: float = 0.0
    """TFA's coverage penalty weight `beta`: a finished hypothesis' candidates
    gain `beta * sum_i log(min(a_i, 1))` over the source positions `i` of the
    attention `a` it accumulated while running (positions it never attended
    count as 1). Needs `initial_coverage`."""

    initial_coverage: tf.Tensor | None = None
    """With `coverage_penalty`: the attention accumulated before step 0,
    `(batch_size * beam_width, Tv)` (TFA: the initial state's alignments)."""

    record_steps: bool = False
    """Whether every step also records the kept ids, their parent beams and
    their ranking scores `(batch, beam)` in that step's beam order (TFA's
    `BeamSearchDecoderOutput`); the records are then a dict with the keys
    `attention`, `ids`, `parents` and `scores` (not with `drop_finished` or
    `constraints`)."""

    record_all_scores: bool = False
    """With `record_steps`: `scores` holds the ranking score of every
    candidate, `(batch, beam, vocab)` (TFA's `output_all_scores`)."""

    def record_dtypes(self) -> Any:
        if not self.record_steps:
            return tf.float32
        return {"attention": tf.float32, "ids": tf.int32, "parents": tf.int32, "scores": tf.float32}

    def _initial_coverage(self, batch_size: tf.Tensor, beam_width: Any) -> tf.Tensor:
        """The search's `coverage` `(batch, beam, Tv)` before step 0."""
        if self.initial_coverage is None:
            raise ValueError("`coverage_penalty` needs `initial_coverage`.")
        coverage = tf.cast(self.initial_coverage, tf.float32)
        return tf.reshape(coverage, [batch_size, beam_width, -1])

    def _never(self) -> tf.Tensor:
        """The cost of a finished hypothesis' continuations other than `pad_id`."""
        return tf.constant(tf.float32.min if self.tfa_scoring else -math.inf)

    def _ranked_lengths(
        self, candidate_lengths: tf.Tensor, running: tf.Tensor, vocab_size: tf.Tensor, end_id: int
    ) -> tf.Tensor:
        """The lengths candidates `(batch, beam, vocab)` are ranked by: with
        `tfa_scoring`, an ending candidate's without its end token."""
        ranked_lengths = candidate_lengths[..., tf.newaxis]
        if self.tfa_scoring:
            ends = tf.equal(tf.range(vocab_size), end_id)
            ranked_lengths -= tf.cast(tf.logical_and(running[..., tf.newaxis], ends), tf.int32)
        return ranked_lengths

    def _coverage(self, attention: tf.Tensor, search: dict[str, tf.Tensor]):
        """TFA's coverage: each hypothesis' accumulated attention (this step's
        counted while it runs), and `coverage_penalty * sum_i log(min(a_i, 1))`
        for the finished hypotheses (0 for the running ones)."""
        finished = search["finished"]
        step_attention = tf.reshape(attention, tf.concat([tf.shape(finished), [-1]], axis=0))
        running = tf.cast(tf.logical_not(finished), tf.float32)[..., tf.newaxis]
        coverage = search["coverage"] + step_attention * running
        covered = tf.where(tf.equal(coverage, 0.0), 1.0, coverage)
        penalty = tf.reduce_sum(tf.math.log(tf.minimum(covered, 1.0)), axis=-1)
        return coverage, self.coverage_penalty * penalty * tf.cast(finished, tf.float32)

    def _step_records(self, attention, ids, parents, ranked, kept_scores) -> Any:
        """What a step records: its attention, or with `record_steps` the dict
        that `record_dtypes` describes."""
        if not self.record_steps:
            return attention
        return {
            "attention": attention,
            "ids": ids,
            "parents": parents,
            "scores": ranked if self.record_all_scores else kept_scores,
        }
