"""One step of Keras' `GRUCell` or `LSTMCell`, by hand, with its weights split or whole.

A decoder's cell is Keras' `GRUCell` or `LSTMCell` (its weights saved as
usual), stepped here so that the embedding's part of its input projection,
`e W_e + b`, can run once for all steps before the training loop: the cell's
input is `[e; x]` with `x` what the decoder feeds it (a context vector, the
fed-back `h~`, or nothing), so `[e; x] W = e W_e + x W_x`. Decoding, one step
at a time, keeps `W` whole (a slice of it at every step is a copy under XLA).
The math is that of the cell's `call` (`implementation=2`, `reset_after=True`
for the GRU); the weights are cast to the compute dtype inside the step, as
Keras' autocasting does, so the gradients of a loop's steps add up in float32.
"""

from typing import NamedTuple

import keras
import tensorflow as tf


class CellWeights(NamedTuple):
    """A cell's weights as `cell_step` uses them (`cell_weights`)."""

    kernel: tf.Tensor  # W, or W_e when split
    extra_kernel: tf.Tensor | None  # W_x when split (and the cell has an input x)
    recurrent_kernel: tf.Tensor
    input_bias: tf.Tensor
    recurrent_bias: tf.Tensor | None  # the GRU's (reset_after)
    split: bool


def _is_gru(cell) -> bool:
    return isinstance(cell, keras.layers.GRUCell)


def cell_weights(cell, embedding_dim: int, extra: int, split: bool) -> CellWeights:
    """The float32 weights of `cell`, a `GRUCell` or `LSTMCell` whose input is `[e; x]`.

    Args:
        cell: the cell (built here, for an input of `embedding_dim + extra`,
            if it is not yet).
        embedding_dim: int, the size of `e`.
        extra: int, the size of `x` (0 when the input is `e` alone).
        split: bool, whether `kernel` is `W_e` (the embeddings' rows) and
            `extra_kernel` `W_x`; otherwise `kernel` is the whole `W`.

    Returns:
        `CellWeights(kernel, extra_kernel, recurrent_kernel, input_bias,
        recurrent_bias, split)`; the GRU's bias `(2, 3 units)` split into its
        input and recurrent rows, `recurrent_bias` `None` for an LSTM.
    """
    if not cell.built:
        cell.build((None, embedding_dim + extra))
    kernel = keras.ops.convert_to_tensor(cell.kernel)
    extra_kernel = None
    if split and extra:
        kernel, extra_kernel = kernel[:embedding_dim], kernel[embedding_dim:]
    bias = keras.ops.convert_to_tensor(cell.bias)
    # The GRU's bias is (2, 3 units): input and recurrent (reset_after).
    input_bias, recurrent_bias = (bias[0], bias[1]) if _is_gru(cell) else (bias, None)
    recurrent_kernel = keras.ops.convert_to_tensor(cell.recurrent_kernel)
    return CellWeights(kernel, extra_kernel, recurrent_kernel, input_bias, recurrent_bias, split)


def input_projection(inputs, weights: CellWeights, dtype):
    """`inputs @ kernel + b` in `dtype`.

    With split weights the embeddings' part `e W_e + b`, for one step
    `(batch_size, E)` or all steps `(batch_size, Tt, E)`; with the whole kernel
    a step's full input `[e; x] W + b`.
    """
    return keras.ops.add(
        keras.ops.matmul(inputs, keras.ops.cast(weights.kernel, dtype)),
        keras.ops.cast(weights.input_bias, dtype),
    )


def cell_step(cell, embedded, extra_input, rnn_state, weights: CellWeights, dtype):
    """One step of `cell`: `(output, [new states])`.

    For a GRU (`reset_after=True`), with `x_* = [e; x] W_* + b_*` and
    `r_* = s W_r* + b_r*`: `z = σ(x_z + r_z)`, `r = σ(x_r + r_r)`,
    `h = z s + (1 - z) tanh(x_h + r r_h)`. For an LSTM, with
    `[z_i, z_f, z_c, z_o] = [e; x] W + b + s U`:
    `c = σ(z_f) c' + σ(z_i) tanh(z_c)`, `h = σ(z_o) tanh(c)`. The
    activations are the cell's own.

    Args:
        cell: the `GRUCell` or `LSTMCell` whose activations apply.
        embedded: with split weights, `e W_e + b` (`input_projection`);
            otherwise the embedding `e`, `(batch_size, E)`.
        extra_input: `x` `(batch_size, X)`, or `None`.
        rnn_state: `[s]` for a GRU, `[s, c']` for an LSTM, `(batch_size, units)`.
        weights: `cell_weights(cell, ...)`.
        dtype: the compute dtype the weights are cast to.

    Returns:
        `(h, [h])` for a GRU, `(h, [h, c])` for an LSTM.
    """
    if weights.split:
        inputs = embedded
        if extra_input is not None:
            inputs = inputs + keras.ops.matmul(
                extra_input, keras.ops.cast(weights.extra_kernel, dtype)
            )
    else:
        if extra_input is not None:
            embedded = keras.ops.concatenate([embedded, extra_input], axis=-1)
        inputs = input_projection(embedded, weights, dtype)
    inner = keras.ops.matmul(rnn_state[0], keras.ops.cast(weights.recurrent_kernel, dtype))
    if _is_gru(cell):
        inner = inner + keras.ops.cast(weights.recurrent_bias, dtype)
        x_z, x_r, x_h = keras.ops.split(inputs, 3, axis=-1)
        r_z, r_r, r_h = keras.ops.split(inner, 3, axis=-1)
        z = cell.recurrent_activation(x_z + r_z)
        r = cell.recurrent_activation(x_r + r_r)
        candidate = cell.activation(x_h + r * r_h)
        h = z * rnn_state[0] + (1 - z) * candidate
        return h, [h]
    z_i, z_f, z_c, z_o = keras.ops.split(inputs + inner, 4, axis=-1)
    gate = cell.recurrent_activation
    c = gate(z_f) * rnn_state[1] + gate(z_i) * cell.activation(z_c)
    h = gate(z_o) * cell.activation(c)
    return h, [h, c]
