"""`GreedySearch`: pick the most probable token at every step."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from keras_attention.decoding.decode_result import DecodeResult
from keras_attention.decoding.decoding_strategy import (
    DecodingStrategy,
    NextFn,
    call_next_fn,
    prepare_start_ids,
    relaxed_shape,
    write_column,
)


@keras.saving.register_keras_serializable(package="keras_attention")
class GreedySearch(DecodingStrategy):
    """Greedy decoding: the most probable token at every step.

    The whole search is one `tf.while_loop` (with `maximum_iterations`), so it
    runs eagerly, in `tf.function`, with `jit_compile=True`, and in a SavedModel
    served by TensorFlow Serving.

    At step `t` (0-based), for every sentence:

    1. `log_probs = log_softmax(logits)` in float32, from
       `next_fn(t, previous_tokens, state)`.
    2. `token = argmax(log_probs)` (ties go to the lowest id).
    3. If the sentence was still running, `score += log_probs[token]`; if
       `token == end_id` the sentence is finished. A finished sentence emits
       `pad_id` (fed back as its next input), its score and length stop
       changing, and its attention rows are zero.
    4. The loop stops when every sentence is finished or after `max_length`
       steps.

    Args:
        max_length: int >= 1, the most decoding steps (counting the step that
            emits the end token). Defaults to 50.
        end_id: int >= 0, the id that ends a sentence. Defaults to 3.
        pad_id: int >= 0, the id written after a sentence has ended. Defaults
            to 0.

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
        `(batch_size, T, Tv)`, where `T <= max_length` is the number of steps
        run.

    Example:

    >>> table = tf.math.log([[0.1, 0.1, 0.6, 0.2], [0.1, 0.1, 0.1, 0.7],
    ...                      [0.1, 0.1, 0.1, 0.7], [0.1, 0.1, 0.1, 0.7]])
    >>> def next_fn(step, token_ids, state):
    ...     return tf.gather(table, token_ids), state, tf.ones([tf.shape(token_ids)[0], 1])
    >>> result = GreedySearch(max_length=5, end_id=3)(next_fn, (), tf.constant([0]))
    >>> result.tokens.numpy().tolist(), result.lengths.numpy().tolist()
    ([[2, 0]], [1])

    Two steps ran (the second emitted the end token), so `tokens` has two
    columns; the end token itself is replaced by `pad_id`.
    """

    def __call__(self, next_fn: NextFn, initial_state: Any, start_ids: Any) -> DecodeResult:
        start_ids = prepare_start_ids(start_ids)
        batch_size = tf.shape(start_ids)[0]
        max_length = self.max_length
        pad = tf.constant(self.pad_id, tf.int32)
        end = tf.constant(self.end_id, tf.int32)

        def body(step, token_ids, state, tokens, scores, lengths, finished, attention):
            log_probs, new_state, step_attention = call_next_fn(next_fn, step, token_ids, state)
            top_log_probs, top_ids = tf.math.top_k(log_probs, k=1)
            ids = top_ids[:, 0]
            ended = tf.logical_and(tf.logical_not(finished), tf.equal(ids, end))
            done = tf.logical_or(finished, ended)
            scores = scores + tf.where(finished, 0.0, top_log_probs[:, 0])
            lengths = lengths + tf.cast(tf.logical_not(done), tf.int32)
            tokens = write_column(tokens, step, tf.where(done, pad, ids))
            attention = attention.write(step, tf.where(done[:, tf.newaxis], 0.0, step_attention))
            # The end token is fed back once; after that, pad.
            next_ids = tf.where(finished, pad, ids)
            return step + 1, next_ids, new_state, tokens, scores, lengths, done, attention

        def cond(step, token_ids, state, tokens, scores, lengths, finished, attention):
            # Always one step, so an empty batch still has a step to stack.
            return tf.logical_or(tf.equal(step, 0), tf.logical_not(tf.reduce_all(finished)))

        loop_vars = (
            tf.constant(0, tf.int32),
            start_ids,
            initial_state,
            tf.fill([batch_size, max_length], pad),
            tf.zeros([batch_size], tf.float32),
            tf.zeros([batch_size], tf.int32),
            tf.zeros([batch_size], tf.bool),
            tf.TensorArray(tf.float32, size=max_length),
        )
        shape_invariants = (
            tf.TensorShape([]),
            tf.TensorShape([None]),
            tf.nest.map_structure(lambda x: relaxed_shape(tf.convert_to_tensor(x)), initial_state),
            tf.TensorShape([None, max_length]),
            tf.TensorShape([None]),
            tf.TensorShape([None]),
            tf.TensorShape([None]),
            tf.TensorShape(None),
        )
        steps, _, _, tokens, scores, lengths, _, attention = tf.while_loop(
            cond,
            body,
            loop_vars,
            shape_invariants=shape_invariants,
            maximum_iterations=max_length,
        )
        # (max_length, batch, Tv) -> (batch, steps, Tv); unwritten steps are dropped.
        attention = tf.transpose(attention.stack()[:steps], [1, 0, 2])
        return DecodeResult(
            tokens=tokens[:, :steps], scores=scores, lengths=lengths, attention=attention
        )
