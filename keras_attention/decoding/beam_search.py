"""`BeamSearch`: keep the `beam_width` best hypotheses, rank by GNMT score."""

from __future__ import annotations

import copy
import math
import numbers
from typing import Any

import keras
import tensorflow as tf

from keras_attention.decoding.decode_result import DecodeResult
from keras_attention.decoding.decoding_strategy import (
    DecodingStrategy,
    check_bool,
    check_int,
    write_column,
)
from keras_attention.decoding.lexical_constraints import (
    constrained_step,
    initial_search,
    prepare_constraints,
)
from keras_attention.decoding.renamed_options import accepts_old_max_steps
from keras_attention.decoding.tfa_beam_options import TfaBeamOptions
from keras_attention.decoding_defaults import DEFAULT_BEAM_WIDTH, DEFAULT_MAX_OUTPUT_LENGTH
from keras_attention_client.wire.decoding_options import DEFAULT_LENGTH_PENALTY


@keras.saving.register_keras_serializable(package="keras_attention")
class BeamSearch(TfaBeamOptions, DecodingStrategy):
    """Beam search with the GNMT length penalty, in pure TensorFlow.

    Each sentence keeps `beam_width` hypotheses; a finished hypothesis stays in
    its beam (as in OpenNMT-tf and `tf.contrib.seq2seq`) and competes with the
    running ones through its length-normalized score. Hypotheses are ranked by

        score / lp,    lp = ((5 + len) / 6) ** length_penalty

    where `score` is the sum of token log-probabilities and `len` is the number
    of tokens that contributed to it: the emitted tokens *including* the end
    token (`lengths + 1` for a finished hypothesis, `max_steps` for one that
    never ended). The same `len` is used at every step and for the final
    choice. `length_penalty=0` ranks by raw log-probability.

    The search is `DecodingStrategy`'s one `tf.while_loop` with
    `maximum_iterations`, this class supplying its hooks; the token
    history and the row of each step's ancestor are carried in fixed
    `(batch, beam, max_steps)` buffers and gathered with the surviving
    hypotheses every step (no `GatherTree`, no custom ops); each step's
    attention goes into a `TensorArray` as computed and the best hypothesis'
    rows are picked through its ancestor rows at the end. It runs eagerly, in
    `tf.function`, with `jit_compile=True` and in a SavedModel served by
    TensorFlow Serving.

    A finished hypothesis occupies one of the `beam_width` slots; if
    `beam_width` running candidates outrank it, it drops out of the beam (as
    in OpenNMT-tf). With enough beams to hold every hypothesis the search is
    exact.

    At step `t` (0-based):

    1. `next_fn(t, tokens, state)` on all `batch * beam_width` rows gives
       float32 log-probs `(batch, beam, vocab)`. Rows are batch-major: rows
       `b * beam_width ... b * beam_width + beam_width - 1` belong to sentence
       `b`. At `t = 0` only the first hypothesis of each sentence is live.
    2. A finished hypothesis has a single continuation, `pad_id`, at cost 0.
    3. Candidates `score + log_prob` are normalized by `lp(len + 1)` (or
       `lp(len)` for finished ones) and the `beam_width` best of the
       `beam_width * vocab` candidates are kept.
    4. Every state leaf is reordered with `tf.gather` by the kept
       hypotheses' parents; a kept candidate whose token is `end_id` is
       finished.
    5. The loop stops when every hypothesis of every sentence is finished, or
       after `max_steps` steps. The best-ranked hypothesis is returned, or
       with `n_best` the `n_best` best-ranked ones, best first.

    With `beam_width=1` this is exactly `GreedySearch`. `beam_width`,
    `length_penalty`, `n_best` and `max_steps` may also be passed per call,
    as Python values or scalar tensors (`call_options`): a graph built with
    tensors serves every beam width, the beam axis being dynamic inside the
    `tf.while_loop`.

    Args:
        beam_width: int >= 1, hypotheses kept per sentence. Defaults to 4.
        length_penalty: float >= 0, the GNMT `alpha`. Defaults to
            `DEFAULT_LENGTH_PENALTY`.
        n_best: int in `[1, beam_width]` or `None`, how many hypotheses to
            return per sentence; `None` returns the best one without the
            n-best axis. Defaults to `None`.
        max_steps: int >= 1, the most decoding steps (counting the step that
            emits the end token). Defaults to 50.
        end_id: int >= 0, the id that ends a sentence. Defaults to 3.
        pad_id: int >= 0, the id written after a sentence has ended. Defaults
            to 0.
        drop_finished: bool, whether the rows of a sentence whose hypotheses
            have all finished leave the loop, so that `next_fn` computes only
            the sentences still running (`GreedySearch`'s argument; the
            results are the same). Defaults to False.

    Call arguments:
        next_fn: `next_fn(step, token_ids, state) -> (logits, new_state,
            attention)` on `batch_size * beam_width` rows: `token_ids`
            `(batch_size * beam_width,)`, `logits`
            `(batch_size * beam_width, vocab_size)`, `attention`
            `(batch_size * beam_width, Tv)` (or `None`), `new_state` shaped like
            `state`.
        initial_state: a nest of tensors, every leaf of shape
            `(batch_size, ...)`; each leaf is tiled to
            `(batch_size * beam_width, ...)` (`tf.repeat` on axis 0).
        start_ids: int tensor of shape `(batch_size,)`, the ids fed at step 0.

    Returns:
        A `DecodeResult` for the best hypothesis of each sentence: `tokens`
        `(batch_size, T)`, `scores` `(batch_size,)` (raw log-probability),
        `lengths` `(batch_size,)` and `attention` `(batch_size, T, Tv)`, where
        `T <= max_steps` is the number of steps run. With `n_best`, every
        field has an n-best axis after the batch axis: `tokens`
        `(batch_size, n_best, T)`, `scores` and `lengths`
        `(batch_size, n_best)`, `attention` `(batch_size, n_best, T, Tv)`.
        A hypothesis that never lived (more beams than candidates) has score
        `-inf`.

    Example:

    >>> # P(first token): 2 -> 0.5, 4 -> 0.4, end -> 0.1; after 2 nothing is
    >>> # likely, after 4 the end token is (0.9). Greedy takes 2; beam finds 4.
    >>> table = tf.math.log([
    ...     [0.01, 0.01, 0.49, 0.09, 0.40],   # after the start token (0)
    ...     [0.2, 0.2, 0.2, 0.2, 0.2],
    ...     [0.01, 0.01, 0.34, 0.30, 0.34],   # after 2
    ...     [0.2, 0.2, 0.2, 0.2, 0.2],
    ...     [0.01, 0.01, 0.04, 0.90, 0.04],   # after 4
    ... ])
    >>> def next_fn(step, token_ids, state):
    ...     return tf.gather(table, token_ids), state, tf.ones([tf.shape(token_ids)[0], 1])
    >>> beam = BeamSearch(beam_width=2, length_penalty=0.0, max_steps=3)
    >>> beam(next_fn, (), tf.constant([0])).tokens[:, :1].numpy().tolist()
    [[4]]
    """

    call_options = ("max_steps", "beam_width", "length_penalty", "n_best")

    constraints: tf.Tensor | None = None
    """The call's lexical constraints (`__call__`'s `constraints`), or `None`."""

    # TensorFlow Addons' options (`tiled_state`, `tfa_scoring`,
    # `coverage_penalty`, `record_steps`, ...) come from `TfaBeamOptions`.

    @accepts_old_max_steps
    def __init__(
        self,
        beam_width: int = DEFAULT_BEAM_WIDTH,
        length_penalty: float = DEFAULT_LENGTH_PENALTY,
        max_steps: int = DEFAULT_MAX_OUTPUT_LENGTH,
        end_id: int = 3,
        pad_id: int = 0,
        n_best: int | None = None,
        drop_finished: bool = False,
    ):
        super().__init__(max_steps=max_steps, end_id=end_id, pad_id=pad_id)
        self.drop_finished = check_bool("drop_finished", drop_finished)
        self.beam_width = check_int("beam_width", beam_width, minimum=1)
        if (
            not isinstance(length_penalty, numbers.Real)
            or isinstance(length_penalty, bool)
            or not math.isfinite(length_penalty)
            or length_penalty < 0
        ):
            raise ValueError(
                "`length_penalty` must be a finite number >= 0. "
                f"Received: length_penalty={length_penalty!r}"
            )
        self.length_penalty = float(length_penalty)
        if n_best is not None:
            n_best = check_int("n_best", n_best, minimum=1)
            if n_best > self.beam_width:
                raise ValueError(
                    "`n_best` must be <= beam_width (the search keeps beam_width hypotheses). "
                    f"Received: n_best={n_best}, beam_width={self.beam_width}"
                )
        self.n_best = n_best

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update({"beam_width": self.beam_width, "length_penalty": self.length_penalty})
        if self.n_best is not None:
            config["n_best"] = self.n_best
        return config

    def __call__(self, next_fn, initial_state, start_ids, constraints=None, **options):
        """Runs the search; see the class docstring.

        `constraints`, int ids `(batch_size, C, L)` padded with `pad_id`, or
        `None` (the default): phrases each sentence's output must contain,
        guaranteed by dynamic beam allocation
        (`keras_attention.decoding.lexical_constraints`). A sentence whose
        phrases are all padding decodes exactly as without constraints.
        """
        if constraints is None:
            return super().__call__(next_fn, initial_state, start_ids, **options)
        strategy = self.with_options(**options) if options else copy.copy(self)
        strategy.constraints = prepare_constraints(constraints, self.pad_id)
        return super(BeamSearch, strategy).__call__(next_fn, initial_state, start_ids)

    def normalize(self, scores: tf.Tensor, lengths: tf.Tensor) -> tf.Tensor:
        """Length-normalized scores: `scores / ((5 + lengths) / 6) ** length_penalty`.

        Args:
            scores: float32 tensor, sums of log-probabilities.
            lengths: int tensor broadcastable to `scores`, the number of tokens
                scored, including the end token when there is one.

        Returns:
            float32 tensor shaped like `scores`.
        """
        penalty = tf.pow((5.0 + tf.cast(lengths, tf.float32)) / 6.0, self.length_penalty)
        return scores / penalty

    def initialize(self, initial_state, start_ids):
        batch_size = tf.shape(start_ids)[0]
        beam_width, max_steps = self.beam_width, self.max_steps
        state = initial_state
        if not self.tiled_state:
            state = tf.nest.map_structure(lambda x: tf.repeat(x, beam_width, axis=0), state)
        # Only the first copy of each sentence is live at step 0.
        first_live = tf.where(tf.range(beam_width) > 0, -math.inf, 0.0)
        # TFA's scoring also counts the other copies finished.
        first_finished = tf.logical_and(tf.range(beam_width) > 0, self.tfa_scoring)
        search = {
            "log_probs": tf.tile(first_live[tf.newaxis], [batch_size, 1]),
            "lengths": tf.zeros([batch_size, beam_width], tf.int32),
            "finished": tf.tile(first_finished[tf.newaxis], [batch_size, 1]),
            "tokens": tf.fill([batch_size, beam_width, max_steps], tf.constant(self.pad_id)),
            # Each emitted token's log-probability (the end token's included).
            "token_scores": tf.zeros([batch_size, beam_width, max_steps], tf.float32),
            # The beam (of its sentence) of each step's ancestor.
            "ancestry": tf.zeros([batch_size, beam_width, max_steps], tf.int32),
        }
        if self.constraints is not None:
            search.update(initial_search(self.constraints, beam_width))
        if self.coverage_penalty:
            search["coverage"] = self._initial_coverage(batch_size, beam_width)
        return tf.repeat(start_ids, beam_width), state, search

    def step(self, step, log_probs, state, attention, search):
        if self.constraints is not None:
            return constrained_step(self, step, log_probs, state, attention, search)
        beam_width = self.beam_width
        pad = tf.constant(self.pad_id, tf.int32)
        finished = search["finished"]
        vocab_size = tf.shape(log_probs)[-1]
        step_log_probs = tf.reshape(log_probs, [-1, beam_width, vocab_size])
        # A finished hypothesis continues only with pad, at no cost.
        pad_only = tf.where(tf.equal(tf.range(vocab_size), pad), 0.0, self._never())
        step_log_probs = tf.where(finished[..., tf.newaxis], pad_only, step_log_probs)
        totals = search["log_probs"][..., tf.newaxis] + step_log_probs  # (batch, beam, vocab)
        running = tf.logical_not(finished)
        candidate_lengths = search["lengths"] + tf.cast(running, tf.int32)
        ranked_lengths = self._ranked_lengths(candidate_lengths, running, vocab_size, self.end_id)
        ranked = self.normalize(totals, ranked_lengths)
        if self.coverage_penalty:
            coverage, penalty = self._coverage(attention, search)
            ranked += penalty[..., tf.newaxis]
        kept_scores, top = tf.math.top_k(
            tf.reshape(ranked, [-1, beam_width * vocab_size]), beam_width
        )
        parents = top // vocab_size  # (batch, beam)
        ids = top % vocab_size
        kept_log_probs = tf.gather(
            tf.reshape(totals, [-1, beam_width * vocab_size]), top, batch_dims=1
        )
        kept_step_log_probs = tf.gather(
            tf.reshape(step_log_probs, [-1, beam_width * vocab_size]), top, batch_dims=1
        )
        parent_finished = tf.gather(finished, parents, batch_dims=1)
        ended = tf.logical_and(tf.logical_not(parent_finished), tf.equal(ids, self.end_id))
        stopped = tf.logical_or(parent_finished, ended)
        # A -inf hypothesis (more beams than live candidates) is dead: count it finished.
        dead = tf.equal(kept_log_probs, -math.inf)

        # Row of the first hypothesis of each sentence in the flat (batch * beam) layout.
        row_offsets = tf.range(tf.shape(parents)[0])[:, tf.newaxis] * beam_width
        parent_rows = parents + row_offsets  # (batch, beam)
        flat_parent_rows = tf.reshape(parent_rows, [-1])
        state = tf.nest.map_structure(lambda x: tf.gather(x, flat_parent_rows), state)
        tokens = tf.gather(search["tokens"], parents, batch_dims=1)
        ancestry = tf.gather(search["ancestry"], parents, batch_dims=1)
        token_scores = tf.gather(search["token_scores"], parents, batch_dims=1)
        search = {
            "log_probs": kept_log_probs,
            "lengths": tf.gather(candidate_lengths, parents, batch_dims=1),
            "finished": tf.logical_or(stopped, dead),
            "tokens": write_column(tokens, step, tf.where(stopped, pad, ids)),
            "token_scores": write_column(
                token_scores, step, tf.where(parent_finished, 0.0, kept_step_log_probs)
            ),
            "ancestry": write_column(ancestry, step, parents),
        }
        if self.coverage_penalty:
            search["coverage"] = tf.gather(coverage, parents, batch_dims=1)
        records = self._step_records(attention, ids, parents, ranked, kept_scores)
        next_ids = tf.reshape(tf.where(parent_finished, pad, ids), [-1])
        # Attention is recorded in the order of this step's rows; `ancestry`
        # finds the best hypothesis' rows in `finalize`.
        return next_ids, state, search, records

    def _ancestor_rows(self, search):
        """`ancestry` as rows of the recorded attention (batch * beam layout)."""
        sentences = tf.range(tf.shape(search["ancestry"])[0])
        return search["ancestry"] + sentences[:, tf.newaxis, tf.newaxis] * self.beam_width

    def finalize(self, steps, search, attention):
        if self.record_steps:
            attention = attention["attention"]
        if self.n_best is not None:
            return self._finalize_n_best(steps, search, attention)
        max_steps = self.max_steps
        # top_k sorts the kept hypotheses by the ranking score, so the best is first.
        scores = search["log_probs"][:, 0]
        # `lengths` counts the end token; DecodeResult.lengths does not.
        best_lengths = search["lengths"][:, 0] - tf.cast(search["finished"][:, 0], tf.int32)
        # attention: (max_steps, batch * beam, Tv); pick, at every step, the
        # row of the best hypothesis' ancestor. Everything stays max_steps
        # long until the final slice (XLA needs static shapes in between).
        best_rows = tf.transpose(self._ancestor_rows(search)[:, 0, :])  # (max_steps, batch)
        best_attention = tf.gather(attention, best_rows, batch_dims=1)
        best_attention = tf.transpose(best_attention, [1, 0, 2])  # (batch, max_steps, Tv)
        emitted = tf.range(max_steps)[tf.newaxis, :] < best_lengths[:, tf.newaxis]
        best_attention = tf.where(emitted[..., tf.newaxis], best_attention, 0.0)
        return DecodeResult(
            tokens=search["tokens"][:, 0, :steps],
            scores=scores,
            lengths=best_lengths,
            attention=best_attention[:, :steps],
            token_scores=search["token_scores"][:, 0, :steps],
        )

    def _finalize_n_best(self, steps, search, attention):
        """`finalize` for the `n_best` best hypotheses: an n-best axis after the batch axis."""
        max_steps, n_best = self.max_steps, self.n_best
        batch_size = tf.shape(search["log_probs"])[0]
        scores = search["log_probs"][:, :n_best]
        lengths = search["lengths"][:, :n_best] - tf.cast(search["finished"][:, :n_best], tf.int32)
        # The ancestors' rows of each kept hypothesis: (max_steps, batch * n_best).
        rows = tf.transpose(tf.reshape(self._ancestor_rows(search)[:, :n_best, :], [-1, max_steps]))
        kept_attention = tf.gather(attention, rows, batch_dims=1)  # (max_steps, batch * n, Tv)
        kept_attention = tf.reshape(
            tf.transpose(kept_attention, [1, 0, 2]),
            [batch_size, n_best, max_steps, tf.shape(attention)[-1]],
        )
        emitted = tf.range(max_steps) < lengths[..., tf.newaxis]  # (batch, n, max_steps)
        kept_attention = tf.where(emitted[..., tf.newaxis], kept_attention, 0.0)
        return DecodeResult(
            tokens=search["tokens"][:, :n_best, :steps],
            scores=scores,
            lengths=lengths,
            attention=kept_attention[:, :, :steps],
            token_scores=search["token_scores"][:, :n_best, :steps],
        )
