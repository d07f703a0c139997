"""The beam search helpers of TFA's seq2seq in plain TensorFlow ops (no custom op):
`tile_batch`, `gather_tree`, `gather_tree_from_array`."""

import tensorflow as tf

from keras_attention.seq2seq.backend_support import require_tensorflow


def _tile_batch(t, multiplier):
    t = tf.convert_to_tensor(t, name="t")
    if t.shape.ndims is None or t.shape.ndims < 1:
        raise ValueError(f"t must have statically known rank. Received: shape={t.shape}")
    shape = tf.shape(t)
    tiling = [1] * (t.shape.ndims + 1)
    tiling[1] = multiplier
    tiled = tf.tile(tf.expand_dims(t, 1), tiling)
    tiled = tf.reshape(tiled, tf.concat(([shape[0] * multiplier], shape[1:]), 0))
    static_batch = t.shape[0] * multiplier if t.shape[0] is not None else None
    tiled.set_shape(tf.TensorShape([static_batch]).concatenate(t.shape[1:]))
    return tiled


def tile_batch(t, multiplier, name=None):
    """Repeats each batch entry `multiplier` times in place: `[a, b]` becomes
    `[a, a, a, b, b, b]` for 3 (unlike `tf.tile`), the layout beam search expects.

    Args:
        t: A tensor `(batch_size, ...)` or a nested structure of them.
        multiplier: Python integer, e.g. the beam width.
        name: Optional name scope.

    Returns:
        The structure of `t` with tensors `(batch_size * multiplier, ...)`.
    """
    require_tensorflow("tile_batch", "TensorFlow's shape functions")
    with tf.name_scope(name or "tile_batch"):
        return tf.nest.map_structure(lambda t_: _tile_batch(t_, multiplier), t)


def gather_tree(step_ids, parent_ids, max_sequence_lengths, end_token):
    """Follows the parent pointers back from the last step: the full beams.

    Steps past an entry's `max_sequence_lengths` become `end_token`, as does every
    step after a beam's first `end_token`. A parent id outside `[0, beam_width)`
    within the length raises `InvalidArgumentError`.

    Args:
        step_ids: `(max_time, batch_size, beam_width)` ids chosen at each step.
        parent_ids: `(max_time, batch_size, beam_width)` the beam each came from.
        max_sequence_lengths: `(batch_size,)` the lengths decoded.
        end_token: Scalar, the end token.

    Returns:
        `(max_time, batch_size, beam_width)` int32 ids of each final beam.
    """
    require_tensorflow("gather_tree", "tf.while_loop")
    step_ids, parent_ids, max_sequence_lengths, end_token = (
        tf.cast(tf.convert_to_tensor(x), tf.int32)
        for x in (step_ids, parent_ids, max_sequence_lengths, end_token)
    )
    input_shape = tf.shape(parent_ids)
    max_time, beam_width = input_shape[0], input_shape[2]
    max_sequence_lengths = tf.math.minimum(max_sequence_lengths, max_time)
    mask = tf.expand_dims(tf.transpose(tf.sequence_mask(max_sequence_lengths, maxlen=max_time)), -1)
    end_tokens = tf.fill(input_shape, end_token)
    step_ids = tf.where(mask, step_ids, end_tokens)
    parent_ids = tf.where(mask, parent_ids, tf.zeros_like(parent_ids))
    assertion = tf.debugging.Assert(
        tf.math.reduce_all(tf.math.logical_and(parent_ids >= 0, parent_ids < beam_width)),
        ["All parent ids must be positive and less than beam_width"],
    )
    with tf.control_dependencies([assertion]):
        reversed_ids = tf.reverse_sequence(step_ids, max_sequence_lengths, seq_axis=0, batch_axis=1)
        reversed_parents = tf.reverse_sequence(
            parent_ids, max_sequence_lengths, seq_axis=0, batch_axis=1
        )

    # Plain tensors in the loop (no `TensorArray`): LiteRT's converter turns it into
    # builtin ops for any batch size. Each step rewrites the whole (T, B, K) buffer with
    # `tf.where`: T^2 B K element writes in all, once per call.
    steps = tf.range(max_time)[:, tf.newaxis, tf.newaxis]

    def body(t, parent, output_ids):
        ids = tf.gather(reversed_ids[t], parent, batch_dims=1)
        parent = tf.gather(reversed_parents[t], parent, batch_dims=1)
        return t + 1, parent, tf.where(tf.equal(steps, t), ids[tf.newaxis], output_ids)

    output_ids = tf.where(tf.equal(steps, 0), reversed_ids[0][tf.newaxis], end_tokens)
    _, _, output_ids = tf.while_loop(
        lambda t, *_: t < max_time, body, (tf.constant(1), reversed_parents[0], output_ids)
    )
    output_ids = tf.reverse_sequence(output_ids, max_sequence_lengths, seq_axis=0, batch_axis=1)
    # Everything after a beam's first end token is the end token.
    in_bound = tf.equal(tf.math.cumsum(tf.cast(tf.equal(output_ids, end_token), tf.int32)), 0)
    return tf.where(in_bound, output_ids, end_tokens)


def gather_tree_from_array(t, parent_ids, sequence_length):
    """Reorders `t`, written step by step during beam search, into the final beams.

    Args:
        t: `(max_time, batch_size, beam_width, ...)` or
            `(max_time, batch_size * beam_width, ...)`.
        parent_ids: `(max_time, batch_size, beam_width)`.
        sequence_length: `(batch_size, beam_width)` the beams' lengths.

    Returns:
        `t` reordered along the beams, same shape; steps past a beam's length keep
        their place.
    """
    require_tensorflow("gather_tree_from_array", "tf.while_loop")
    max_time = parent_ids.shape[0] or tf.shape(parent_ids)[0]
    batch_size = parent_ids.shape[1] or tf.shape(parent_ids)[1]
    beam_width = parent_ids.shape[2] or tf.shape(parent_ids)[2]
    beam_ids = tf.tile(tf.reshape(tf.range(beam_width), [1, 1, -1]), [max_time, batch_size, 1])
    max_sequence_lengths = tf.cast(tf.reduce_max(sequence_length, axis=1), tf.int32)
    sorted_beam_ids = gather_tree(
        beam_ids, parent_ids, max_sequence_lengths, end_token=beam_width + 1
    )
    in_bound = tf.transpose(tf.sequence_mask(sequence_length, maxlen=max_time), perm=[2, 0, 1])
    sorted_beam_ids = tf.where(in_bound, sorted_beam_ids, beam_ids)
    gather_from = tf.reshape(t, [max_time, batch_size, beam_width, -1])
    ordered = tf.gather(gather_from, sorted_beam_ids, axis=2, batch_dims=2)
    return tf.reshape(ordered, tf.shape(t))
