"""The decoding loop that drops the rows of finished sentences (`drop_finished=True`).

`DecodingStrategy.__call__` runs it instead of its whole-batch loop when a
strategy sets `drop_finished` (never under XLA, which needs fixed shapes). It
runs the same hooks, `step` and `finalize`, on the rows of the sentences
still running, and gives the results of the whole-batch loop.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from keras_attention.decoding.decode_result import DecodeResult
from keras_attention.decoding.next_fn import NextFn, call_next_fn, relaxed_shape


def drop_finished_loop(
    strategy: Any, next_fn: NextFn, token_ids: tf.Tensor, state: Any, search: dict[str, tf.Tensor]
) -> DecodeResult:
    """`DecodingStrategy.__call__`'s loop, computing only the rows of the sentences
    still running (`drop_finished=True`).

    A sentence is one row of `search` (the leading dimension of its
    leaves) and `k` consecutive rows of `token_ids` and `state` (1 for
    greedy search, the beam width for beam search). The loop carries
    `sentences`, the batch positions of the sentences in it, in order,
    and only their rows of everything else, so `step` runs as in the
    whole-batch loop, on fewer rows. An inner loop steps on the same rows
    until at least `drop_min_rows` rows (or every sentence) have finished
    (every `"finished"` flag of the sentence's row set); then the outer
    loop writes the search rows into `results`, notes the step the
    finished sentences leave at, and drops them; it stops when none is
    left. A step adds a count of the finished sentences and nothing else,
    so a batch of one costs about what it did.

    The attention recorded at step `t` has the rows of the sentences in
    the loop at `t`, in batch order; after the loop, from the steps the
    sentences left at, one scatter puts every row at its batch position
    (zero after a sentence left). A finished sentence's search variables
    no longer change and its attention is not used (`step` zeroes it, or
    `finalize` masks it past the sentence's length), so the results are
    those of the whole-batch loop.

    Args:
        strategy: the `DecodingStrategy` whose hooks run: its `step` and
            `finalize`, and its `step_limit`, `max_steps` and
            `drop_min_rows`.
        next_fn: the model's next-step function
            (`keras_attention.decoding.next_fn`).
        token_ids: int32 `(rows,)`, the ids fed at step 0 (`initialize`'s).
        state: the model state, every leaf `(rows, ...)`.
        search: the strategy's loop variables, every leaf `(sentences, ...)`,
            with the bool `"finished"`.

    Returns:
        `strategy.finalize(steps, search, attention)`: the `DecodeResult` of
        the whole batch, attention `(max_steps, rows, Tv)`.
    """
    num_sentences = tf.shape(search["finished"])[0]
    num_rows = tf.shape(token_ids)[0]
    rows_per_sentence = num_rows // tf.maximum(num_sentences, 1)

    def rows_of(sentences):
        """The rows `(len(sentences) * k,)` of `sentences` `(n,)`."""
        rows = sentences[:, tf.newaxis] * rows_per_sentence + tf.range(rows_per_sentence)
        return tf.reshape(rows, [-1])

    def write(results, sentences, search):
        return {
            key: tf.tensor_scatter_nd_update(value, sentences[:, tf.newaxis], search[key])
            for key, value in results.items()
        }

    max_steps = tf.convert_to_tensor(strategy.step_limit, tf.int32)

    def sentences_finished(search, count):
        """Whether each of `count` sentences has finished: `(count,)` bool."""
        return tf.reduce_all(tf.reshape(search["finished"], [count, -1]), axis=1)

    def step_body(step, token_ids, state, search, attention, _, count):
        log_probs, state, step_attention = call_next_fn(next_fn, step, token_ids, state)
        token_ids, state, search, step_attention = strategy.step(
            step, log_probs, state, step_attention, search
        )
        finished = tf.reduce_sum(tf.cast(sentences_finished(search, count), tf.int32))
        attention = attention.write(step, step_attention)
        return step + 1, token_ids, state, search, attention, finished, count

    def steps_until_some_finish(step, sentences, token_ids, state, search, attention):
        """The inner loop: steps on the same rows until every sentence or enough
        rows (`drop_min_rows`) have finished, or the steps run out; always one
        step, so an empty batch still has one."""
        count = tf.shape(sentences)[0]
        first = step
        enough = tf.maximum(strategy.drop_min_rows // tf.maximum(rows_per_sentence, 1), 1)

        def cond(step, token_ids, state, search, attention, finished, count):
            go_on = tf.logical_and(finished < count, finished < enough)
            return tf.logical_and(step < max_steps, tf.logical_or(step == first, go_on))

        loop_vars = (step, token_ids, state, search, attention, tf.constant(0), count)
        relaxed = tf.nest.map_structure(relaxed_shape, (token_ids, state, search))
        invariants = (tf.TensorShape([]), *relaxed, tf.TensorShape(None))
        invariants += (tf.TensorShape([]), tf.TensorShape([]))
        outputs = tf.while_loop(cond, step_body, loop_vars, shape_invariants=invariants)
        return outputs[:5]

    def segment(step, running, written):
        """Steps until enough sentences finish, then their rows leave the loop.

        `running` is `(sentences, token_ids, state, search)`, the rows still in
        the loop; `written`, `(results, left_at, attention)`, what the loop
        keeps of the sentences that left it and every step's attention."""
        sentences, token_ids, state, search = running
        results, left_at, attention = written
        step, token_ids, state, search, attention = steps_until_some_finish(
            step, sentences, token_ids, state, search, attention
        )
        finished = sentences_finished(search, tf.shape(sentences)[0])
        keep = tf.cast(tf.where(tf.logical_not(finished))[:, 0], tf.int32)
        gone = tf.boolean_mask(sentences, finished)
        rows = rows_of(keep)
        running = (
            tf.gather(sentences, keep),
            tf.gather(token_ids, rows),
            tf.nest.map_structure(lambda x: tf.gather(x, rows), state),
            tf.nest.map_structure(lambda x: tf.gather(x, keep), search),
        )
        written = (
            write(results, sentences, search),
            tf.tensor_scatter_nd_update(
                left_at, gone[:, tf.newaxis], tf.fill(tf.shape(gone), step)
            ),
            attention,
        )
        return step, running, written

    def cond(step, running, written):
        sentences = running[0]
        return tf.logical_and(
            step < max_steps, tf.logical_or(tf.equal(step, 0), tf.size(sentences) > 0)
        )

    running = (tf.range(num_sentences), token_ids, state, search)
    written = (
        search,
        tf.fill([num_sentences], tf.constant(strategy.max_steps, tf.int32)),
        tf.TensorArray(
            tf.float32, size=0, dynamic_size=True, infer_shape=False, element_shape=[None, None]
        ),
    )
    relaxed = tf.nest.map_structure(relaxed_shape, (token_ids, state, search))
    shape_invariants = (
        tf.TensorShape([]),
        (tf.TensorShape([None]), *relaxed),
        (relaxed[2], tf.TensorShape([None]), tf.TensorShape(None)),
    )
    steps, running, written = tf.while_loop(
        cond,
        segment,
        (tf.constant(0, tf.int32), running, written),
        shape_invariants=shape_invariants,
    )
    sentences, _, _, search = running
    results, left_at, attention = written
    results = write(results, sentences, search)  # the sentences max_steps stopped
    # Step t recorded the rows of the sentences still running at t, in batch order.
    running = tf.range(steps)[:, tf.newaxis] < left_at[tf.newaxis, :]  # (steps, sentences)
    step_and_sentence = tf.cast(tf.where(running), tf.int32)
    rows = rows_of(step_and_sentence[:, 1])
    at_step = tf.repeat(step_and_sentence[:, 0], rows_per_sentence)
    recorded = attention.concat()
    attention = tf.scatter_nd(
        tf.stack([at_step, rows], axis=1),
        recorded,
        [strategy.max_steps, num_rows, tf.shape(recorded)[1]],
    )
    return strategy.finalize(steps, results, attention)
