"""`GreedySearch`: pick the most probable token at every step."""

from __future__ import annotations

import keras
import tensorflow as tf

from keras_attention.decoding.decode_result import DecodeResult
from keras_attention.decoding.decoding_strategy import DecodingStrategy, check_bool, write_column
from keras_attention.decoding.renamed_options import accepts_old_max_steps
from keras_attention.decoding_defaults import DEFAULT_MAX_OUTPUT_LENGTH


@keras.saving.register_keras_serializable(package="keras_attention")
class GreedySearch(DecodingStrategy):
    """Greedy decoding: the most probable token at every step.

    The search is `DecodingStrategy`'s one `tf.while_loop` (with
    `maximum_iterations`), so it runs eagerly, in `tf.function`, with
    `jit_compile=True`, and in a SavedModel served by TensorFlow Serving.

    At step `t` (0-based), for every sentence:

    1. `log_probs = log_softmax(logits)` in float32, from
       `next_fn(t, previous_tokens, state)`.
    2. `token = argmax(log_probs)` (ties go to the lowest id).
    3. If the sentence was still running, `score += log_probs[token]` (and
       `log_probs[token]` is recorded as the token's score); if
       `token == end_id` the sentence is finished. A finished sentence emits
       `pad_id` (fed back as its next input), its score and length stop
       changing, and its attention rows are zero.
    4. The loop stops when every sentence is finished or after `max_steps`
       steps.

    Args:
        max_steps: int >= 1, the most decoding steps (counting the step that
            emits the end token). Defaults to 50.
        end_id: int >= 0, the id that ends a sentence. Defaults to 3.
        pad_id: int >= 0, the id written after a sentence has ended. Defaults
            to 0.
        drop_finished: bool, whether a finished sentence's row leaves the
            loop, so that `next_fn` computes only the sentences still running
            (its batch shrinks from step to step; see `drop_min_rows`). The
            results are the same (speed: docs/benchmarks.md#finished-rows).
            Needs a `next_fn` that finds everything
            belonging to a row in `token_ids` and `state`, not by the row's
            position (`Translator.step_function`'s does). Under XLA
            (`jit_compile=True`) every row stays, as XLA needs static shapes.
            Defaults to False.

    Call arguments:
        next_fn: `next_fn(step, token_ids, state) -> (logits, new_state,
            attention)` with `token_ids` of shape `(batch_size,)`, `logits` of
            shape `(batch_size, vocab_size)`, `attention` of shape
            `(batch_size, Tv)` (or `None`), and `new_state` shaped like `state`.
        initial_state: a nest of tensors, every leaf of shape
            `(batch_size, ...)`.
        start_ids: int tensor of shape `(batch_size,)`, the ids fed at step 0.

    Returns:
        A `DecodeResult` with `tokens` `(batch_size, T)`, `scores`
        `(batch_size,)`, `lengths` `(batch_size,)` and `attention`
        `(batch_size, T, Tv)`, where `T <= max_steps` is the number of steps
        run.

    Example:

    >>> table = tf.math.log([[0.1, 0.1, 0.6, 0.2], [0.1, 0.1, 0.1, 0.7],
    ...                      [0.1, 0.1, 0.1, 0.7], [0.1, 0.1, 0.1, 0.7]])
    >>> def next_fn(step, token_ids, state):
    ...     return tf.gather(table, token_ids), state, tf.ones([tf.shape(token_ids)[0], 1])
    >>> result = GreedySearch(max_steps=5, end_id=3)(next_fn, (), tf.constant([0]))
    >>> result.tokens.numpy().tolist(), result.lengths.numpy().tolist()
    ([[2, 0]], [1])

    Two steps ran (the second emitted the end token), so `tokens` has two
    columns; the end token itself is replaced by `pad_id`.
    """

    @accepts_old_max_steps
    def __init__(
        self,
        max_steps: int = DEFAULT_MAX_OUTPUT_LENGTH,
        end_id: int = 3,
        pad_id: int = 0,
        drop_finished: bool = False,
    ):
        super().__init__(max_steps=max_steps, end_id=end_id, pad_id=pad_id)
        self.drop_finished = check_bool("drop_finished", drop_finished)

    def initialize(self, initial_state, start_ids):
        batch_size = tf.shape(start_ids)[0]
        search = {
            "tokens": tf.fill([batch_size, self.max_steps], tf.constant(self.pad_id, tf.int32)),
            "scores": tf.zeros([batch_size], tf.float32),
            "token_scores": tf.zeros([batch_size, self.max_steps], tf.float32),
            "lengths": tf.zeros([batch_size], tf.int32),
            "finished": tf.zeros([batch_size], tf.bool),
        }
        return start_ids, initial_state, search

    def select(self, step: tf.Tensor, log_probs: tf.Tensor, search: dict) -> tf.Tensor:
        """The next ids `(batch_size,)` from float32 log-probs `(batch_size, vocab_size)`.

        Greedy search takes the most probable one (ties go to the lowest id);
        `RandomSampling` overrides this to draw one.
        """
        return tf.math.top_k(log_probs, k=1).indices[:, 0]

    def step(self, step, log_probs, state, attention, search):
        pad = tf.constant(self.pad_id, tf.int32)
        finished = search["finished"]
        ids = self.select(step, log_probs, search)
        token_log_probs = tf.gather(log_probs, ids, batch_dims=1)
        ended = tf.logical_and(tf.logical_not(finished), tf.equal(ids, self.end_id))
        done = tf.logical_or(finished, ended)
        search = dict(
            search,
            tokens=write_column(search["tokens"], step, tf.where(done, pad, ids)),
            scores=search["scores"] + tf.where(finished, 0.0, token_log_probs),
            token_scores=write_column(
                search["token_scores"], step, tf.where(finished, 0.0, token_log_probs)
            ),
            lengths=search["lengths"] + tf.cast(tf.logical_not(done), tf.int32),
            finished=done,
        )
        attention = tf.where(done[:, tf.newaxis], 0.0, attention)
        # The end token is fed back once; after that, pad.
        return tf.where(finished, pad, ids), state, search, attention

    def finalize(self, steps, search, attention):
        # (max_steps, batch, Tv) -> (batch, steps, Tv); unwritten steps are dropped.
        attention = tf.transpose(attention[:steps], [1, 0, 2])
        return DecodeResult(
            tokens=search["tokens"][:, :steps],
            scores=search["scores"],
            lengths=search["lengths"],
            attention=attention,
            token_scores=search["token_scores"][:, :steps],
        )
