"""`encode_with_buffers`: the model's encoder as a loop over fixed buffers (for LiteRT)."""

from __future__ import annotations

import keras
import tensorflow as tf

from keras_attention.models.cell_step import cell_step, cell_weights, input_projection
from keras_attention.models.weight_slices import embedding_lookup


def encode_with_buffers(encoder, source_ids: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """What `encoder(source_ids)` returns at inference, with no `TensorArray`.

    LiteRT's converter turns a `TensorArray` into builtin ops only when its
    element shape is fully static, which a batch of any size is not; Keras'
    RNN layers keep their steps in `TensorArray`s. This runs the same cells
    (`cell_step`, Keras' `GRUCell`/`LSTMCell` math) in one `tf.while_loop` per
    layer whose loop variables are plain tensors:

    1. `x = Embedding(source_ids)` (through the current `WeightSlices` scope).
    2. For each layer, the input projection `x W + b` of every step and
       direction in one matmul before the loop.
    3. At step `t` the forward cell reads position `t` and the backward cell
       position `T - 1 - t` (Keras' `go_backwards` on the padded sequence); on
       a padded position a cell's state is carried over and its output is 0,
       as Keras' masked RNNs do. Each output goes into a `(B, T, units)`
       buffer with a masked `tf.where` (every shape fixed in the loop).
    4. The annotations are the directions' outputs concatenated; the summary
       their final (hidden) states concatenated.

    Args:
        encoder: a built `keras_attention.models.encoder.Encoder`.
        source_ids: int32 `(batch_size, T)`, 0 = padding.

    Returns:
        `(annotations, summary)` as `Encoder.call`: `(batch_size, T,
        output_dim)` and `(batch_size, output_dim)`, in the encoder's compute
        dtype.
    """
    dtype = encoder.compute_dtype
    mask = tf.not_equal(source_ids, 0)
    x = tf.cast(embedding_lookup(encoder.embedding, source_ids), dtype)
    states = []
    for rnn in encoder.rnns:
        layers = [rnn.forward_layer, rnn.backward_layer] if encoder.bidirectional else [rnn]
        x, states = _run_layer([layer.cell for layer in layers], x, mask, dtype)
    summary = tf.concat(states, axis=-1)
    return x, summary


def _run_layer(cells, x, mask, dtype):
    """One (bidirectional) layer: `(outputs (B, T, D units), [final h per direction])`."""
    input_dim = x.shape[-1]
    weights = [cell_weights(cell, input_dim, 0, split=True) for cell in cells]
    # (B, T, gates) per direction, before the loop.
    projected = [input_projection(x, w, dtype) for w in weights]
    batch_size, steps = tf.shape(x)[0], tf.shape(x)[1]
    units = cells[0].units
    is_lstm = isinstance(cells[0], keras.layers.LSTMCell)
    zeros = tf.zeros([batch_size, units], dtype)
    initial = tuple([zeros, zeros] if is_lstm else [zeros] for _ in cells)
    buffers = tuple(tf.zeros([batch_size, steps, units], dtype) for _ in cells)
    positions = tf.range(steps)

    def body(t, rnn_states, buffers):
        new_states, new_buffers = [], []
        for d, cell in enumerate(cells):
            position = t if d == 0 else steps - 1 - t
            real = tf.gather(mask, position, axis=1)[:, tf.newaxis]  # (B, 1)
            step_input = tf.gather(projected[d], position, axis=1)
            h, cell_states = cell_step(
                cell, step_input, None, list(rnn_states[d]), weights[d], dtype
            )
            cell_states = [
                tf.where(real, new, old)
                for new, old in zip(cell_states, rnn_states[d], strict=True)
            ]
            output = tf.where(real, h, tf.zeros_like(h))
            at = tf.equal(positions, position)[tf.newaxis, :, tf.newaxis]
            new_buffers.append(tf.where(at, output[:, tf.newaxis, :], buffers[d]))
            new_states.append(cell_states)
        return t + 1, tuple(new_states), tuple(new_buffers)

    _, final_states, buffers = tf.while_loop(
        lambda t, *_: t < steps,
        body,
        (tf.constant(0), initial, buffers),
        maximum_iterations=steps,
    )
    outputs = tf.concat(list(buffers), axis=-1)
    return outputs, [s[0] for s in final_states]
