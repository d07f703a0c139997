"""Keras' GRU over a whole sequence, with its backward pass written out.

`gru_sequence` computes what `keras.layers.GRU` (`reset_after=True`, tanh and
sigmoid, with biases, no dropout) computes over a masked sequence, for one or
several directions at once, and `gru_layer_weights` reads a Keras GRU layer's
weights for it. Two things make it faster than Keras' per-step cell under
autodiff, the same math:

- The input projection `x W + b` runs before the recurrence, once for all
  steps (the caller passes it in); only `h W_r` is inside the loop.
- The backward pass is written out (backpropagation through time): the loop
  computes each step's gate gradients and `dh_{t-1}`, and the recurrent
  weights' gradient is one matmul over all steps after the loop,
  `dW_r = sum_t h_{t-1}^T dm_t`, instead of one matmul, one cast and one
  float32 sum per step.

At step t, with the projected input `x_t` split into `x_z, x_r, x_h`:

    m = h_{t-1} W_r + b_r                  (split into m_z, m_r, m_h)
    z = sigmoid(x_z + m_z)
    r = sigmoid(x_r + m_r)
    c = tanh(x_h + r * m_h)
    h_t = z * h_{t-1} + (1 - z) * c

On a masked step the state is carried over (`h_t = h_{t-1}`) and the output
is zero, as Keras' `Bidirectional` returns them.
"""

import keras
import tensorflow as tf


def gru_layer_weights(layer):
    """`(kernel, recurrent_kernel, input_bias, recurrent_bias)` of a built
    `keras.layers.GRU` that `gru_sequence` computes exactly; a clear error for
    one it does not (another gate function, `reset_after=False`, no bias,
    dropout)."""
    cell = layer.cell
    supported = (
        cell.reset_after
        and cell.use_bias
        and cell.activation is keras.activations.tanh
        and cell.recurrent_activation is keras.activations.sigmoid
        and not cell.dropout
        and not cell.recurrent_dropout
    )
    if not supported:
        raise ValueError(
            f"gru_sequence computes Keras' default GRU (reset_after=True, tanh/sigmoid, "
            f"biases, no dropout); layer {layer.name!r} is configured otherwise"
        )
    # Read as tensors: in a mixed-precision layer's call, Keras' autocasting
    # casts them to the compute dtype once here, and the gradient back once.
    bias = tf.convert_to_tensor(cell.bias)
    return (
        tf.convert_to_tensor(cell.kernel),
        tf.convert_to_tensor(cell.recurrent_kernel),
        bias[0],
        bias[1],
    )


def gru_sequence(projected, recurrent_kernel, recurrent_bias, mask, initial_state, training=True):
    """Runs GRUs over projected inputs, several directions at once.

    Args:
        projected: `(T, D, B, 3U)`, time-major: the inputs times the kernel
            plus the input bias of each direction `d`, in the order that
            direction reads them (reverse a backward direction before), in
            the compute dtype.
        recurrent_kernel: `(D, U, 3U)`.
        recurrent_bias: `(D, 3U)`.
        mask: bool `(T, D, B)`, True on real steps.
        initial_state: `(D, B, U)`.
        training: bool. True: keep each step's gates for the written-out
            backward pass. False: the forward pass alone (inference; a
            gradient, if one is taken, comes from TensorFlow's autodiff of
            the loop).

    The weights and the initial state are cast to `projected`'s dtype; the
    gradients come back in each input's own dtype.

    Returns:
        `(outputs, final_state)`: `(T, D, B, U)` (zero on masked steps) and
        `(D, B, U)`.
    """
    args = (projected, recurrent_kernel, recurrent_bias, mask, initial_state)
    if training:
        return _gru_sequence_with_gradient(*args)
    states, final_state, _ = _forward(*args, keep_gates=False)
    return _outputs(states, mask), final_state


def _forward(projected, recurrent_kernel, recurrent_bias, mask, initial_state, keep_gates):
    """The recurrence: `(states h_1..h_T, final state, gates z, r, c, m_h per step
    or None)`, stacked time-major."""
    dtype = projected.dtype
    steps = tf.shape(projected)[0]
    kernel = tf.cast(recurrent_kernel, dtype)
    bias = tf.cast(recurrent_bias, dtype)[:, None, :]
    h0 = tf.cast(initial_state, dtype)
    inputs_by_step = _by_step(projected)
    mask_by_step = _by_step(tf.expand_dims(mask, -1))
    gates_shape = tf.TensorShape([*h0.shape[:-1], 4 * h0.shape[-1]])
    arrays = [tf.TensorArray(dtype, size=steps, element_shape=h0.shape)]
    if keep_gates:
        arrays.append(tf.TensorArray(dtype, size=steps, element_shape=gates_shape))

    def step(t, h, arrays):
        x_z, x_r, x_h = tf.split(inputs_by_step.read(t), 3, axis=-1)
        m_z, m_r, m_h = tf.split(_matmul_by_direction(h, kernel) + bias, 3, axis=-1)
        z = tf.sigmoid(x_z + m_z)
        r = tf.sigmoid(x_r + m_r)
        c = tf.tanh(x_h + r * m_h)
        new_h = tf.where(mask_by_step.read(t), z * h + (1 - z) * c, h)
        written = [arrays[0].write(t, new_h)]
        if keep_gates:
            written.append(arrays[1].write(t, tf.concat([z, r, c, m_h], axis=-1)))
        return t + 1, new_h, written

    _, final_state, arrays = tf.while_loop(
        lambda t, *_: t < steps,
        step,
        (tf.constant(0), h0, arrays),
        maximum_iterations=steps,
    )
    return arrays[0].stack(), final_state, arrays[1].stack() if keep_gates else None


def _outputs(states, mask):
    """The states, zero on masked steps."""
    return tf.where(tf.expand_dims(mask, -1), states, tf.zeros_like(states))


@tf.custom_gradient
def _gru_sequence_with_gradient(projected, recurrent_kernel, recurrent_bias, mask, initial_state):
    dtype = projected.dtype
    steps = tf.shape(projected)[0]
    kernel = tf.cast(recurrent_kernel, dtype)
    h0 = tf.cast(initial_state, dtype)
    step_mask = tf.expand_dims(mask, -1)  # (T, D, B, 1)
    # The backward pass reads the stacked states and gates, so that it
    # captures plain tensors (a SavedModel can hold its function).
    states, final_state, gates = _forward(
        projected, recurrent_kernel, recurrent_bias, mask, initial_state, keep_gates=True
    )
    outputs = _outputs(states, mask)
    previous = tf.concat([h0[None], states[:-1]], axis=0)  # h_0..h_{T-1}

    def array(element_shape):
        return tf.TensorArray(dtype, size=steps, element_shape=element_shape)

    def grad(d_outputs, d_final_state):
        d_outputs = tf.where(step_mask, tf.cast(d_outputs, dtype), tf.zeros_like(d_outputs))
        d_outputs_by_step = _by_step(d_outputs)
        previous_by_step = _by_step(previous)
        gates_by_step = _by_step(gates)
        real_by_step = _by_step(step_mask)
        kernel_t = tf.transpose(kernel, [0, 2, 1])

        def backward(i, dh, d_inputs, d_inner):
            t = steps - 1 - i
            z, r, c, m_h = tf.split(gates_by_step.read(t), 4, axis=-1)
            real = real_by_step.read(t)
            total = dh + d_outputs_by_step.read(t)
            d = tf.where(real, total, tf.zeros_like(total))
            d_z = d * (previous_by_step.read(t) - c) * z * (1 - z)
            d_c = d * (1 - z) * (1 - c * c)
            d_r = d_c * m_h * r * (1 - r)
            d_x = tf.concat([d_z, d_r, d_c], axis=-1)
            d_m = tf.concat([d_z, d_r, d_c * r], axis=-1)
            dh = tf.where(real, d * z + _matmul_by_direction(d_m, kernel_t), total)
            return i + 1, dh, d_inputs.write(t, d_x), d_inner.write(t, d_m)

        inputs_shape = tf.TensorShape(projected.shape[1:])
        _, d_h0, d_inputs, d_inner = tf.while_loop(
            lambda i, *_: i < steps,
            backward,
            (
                tf.constant(0),
                tf.cast(d_final_state, dtype),
                array(inputs_shape),
                array(inputs_shape),
            ),
            maximum_iterations=steps,
        )
        # dW_r = sum over steps and batch of h_{t-1}^T dm_t: one matmul per
        # direction, (U, T B) x (T B, 3U).
        d_inner = _direction_major(d_inner.stack())  # (D, T B, 3U)
        d_kernel = _matmul_by_direction(_direction_major(previous), d_inner, transpose_a=True)
        d_bias = tf.reduce_sum(d_inner, axis=1)
        return (
            d_inputs.stack(),
            tf.cast(d_kernel, recurrent_kernel.dtype),
            tf.cast(d_bias, recurrent_bias.dtype),
            None,
            tf.cast(d_h0, initial_state.dtype),
        )

    return (outputs, final_state), grad


def _by_step(sequences):
    """A TensorArray over the steps of time-major `sequences`, read any number of times."""
    return tf.TensorArray(
        sequences.dtype, size=tf.shape(sequences)[0], clear_after_read=False
    ).unstack(sequences)


def _direction_major(sequences):
    """`(T, D, B, n)` -> `(D, T B, n)`."""
    shape = tf.shape(sequences)
    return tf.reshape(tf.transpose(sequences, [1, 0, 2, 3]), [shape[1], -1, shape[3]])


def _matmul_by_direction(a, b, transpose_a=False):
    """`a[d] @ b[d]` for each direction, as 2-D matmuls (on CPU, faster than
    one batched matmul of these shapes in float32)."""
    return tf.stack([tf.matmul(a[d], b[d], transpose_a=transpose_a) for d in range(a.shape[0])])
