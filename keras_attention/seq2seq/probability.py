"""Attention probability functions of TFA's seq2seq: `hardmax`, `safe_cumprod` and
`monotonic_attention` (Raffel et al., 2017), in `keras.ops` (every Keras backend)."""

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_attention.seq2seq.backend_support import require_tensorflow

MONOTONIC_MODES = ("recursive", "parallel", "hard")


def hardmax(logits, name=None):
    """Returns batched one-hot vectors of the maximum logit (the first one on ties).

    Args:
        logits: A batch tensor of logit values, shape `(..., depth)`.
        name: Optional name scope.

    Returns:
        A one-hot tensor of the same shape and dtype as `logits`.
    """
    del name  # TFA's name scope; Keras names its own ops
    logits = ops.convert_to_tensor(logits)
    depth = logits.shape[-1] or ops.shape(logits)[-1]
    return ops.one_hot(ops.argmax(logits, -1), depth, dtype=logits.dtype)


def _shift_along(x, axis, fill):
    """`x` moved one place forward along `axis`, `fill` in the first place (an
    exclusive cumulative sum or product from an inclusive one)."""
    moved = ops.moveaxis(x, axis, -1)
    first = ops.full_like(moved[..., :1], fill)
    return ops.moveaxis(ops.concatenate([first, moved[..., :-1]], -1), -1, axis)


def _cumulative(op, fill, x, axis=0, exclusive=False, reverse=False, name=None):
    """`tf.math.cumsum` / `cumprod`'s `exclusive` and `reverse` on `keras.ops`."""
    del name
    if reverse:
        x = ops.flip(x, axis)
    total = op(x, axis=axis)
    if exclusive:
        total = _shift_along(total, axis, fill)
    return ops.flip(total, axis) if reverse else total


def cumsum(x, *args, **kwargs):
    """`tf.math.cumsum(x, axis=0, exclusive=False, reverse=False)` on any backend."""
    return _cumulative(ops.cumsum, 0, x, *args, **kwargs)


def cumprod(x, *args, **kwargs):
    """`tf.math.cumprod(x, axis=0, exclusive=False, reverse=False)` on any backend."""
    return _cumulative(ops.cumprod, 1, x, *args, **kwargs)


def safe_cumprod(x, *args, **kwargs):
    """The cumulative product of `x` as `exp(cumsum(log(x)))`, free of underflow.

    `x` is clipped to `[tiny, 1]` first (`tiny` the dtype's smallest normal number), so
    it suits probabilities. Takes the arguments of `tf.math.cumprod` (`axis`,
    `exclusive`, `reverse`).

    Args:
        x: Tensor of values in `[0, 1]`.
        *args: `tf.cumsum`'s `axis`, `exclusive`, `reverse`.
        **kwargs: The same by name.

    Returns:
        The cumulative product of `x`.
    """
    x = ops.convert_to_tensor(x)
    tiny = np.finfo(keras.backend.standardize_dtype(x.dtype)).tiny
    return ops.exp(cumsum(ops.log(ops.clip(x, tiny, 1)), *args, **kwargs))


def monotonic_attention(p_choose_i, previous_attention, mode):
    """The monotonic attention distribution from the choosing probabilities.

    `attention_i = p_i * sum_{j <= i} previous_j * prod_{j <= k < i} (1 - p_k)`: the
    memory is read left to right, and once an element is attended to, earlier ones
    cannot be at later output steps.

    Args:
        p_choose_i: Probability of choosing memory element `i`, shape
            `(batch_size, memory_time)`, in `[0, 1]`.
        previous_attention: The previous output step's distribution, same shape; for
            the first step `[1, 0, ..., 0]`.
        mode: `"recursive"` (a scan, exact), `"parallel"` (closed form with
            cumulative sums and products, may lose precision for long memories or
            probabilities near 0 or 1) or `"hard"` (for probabilities that are all 0
            or 1; exact).

    Returns:
        The attention distribution, shape `(batch_size, memory_time)`.
    """
    p_choose_i = ops.convert_to_tensor(p_choose_i)
    previous_attention = ops.convert_to_tensor(previous_attention, dtype=p_choose_i.dtype)
    if mode == "recursive":
        # q_i = (1 - p_{i-1}) q_{i-1} + previous_i, attention_i = p_i q_i.
        shifted_1mp_choose_i = _shift_along(1 - p_choose_i, 1, 1)

        def step(q, decay_and_previous):
            q = decay_and_previous[0] * q + decay_and_previous[1]
            return q, q

        _, q_by_time = ops.scan(
            step,
            ops.zeros_like(p_choose_i[:, 0]),
            (ops.transpose(shifted_1mp_choose_i), ops.transpose(previous_attention)),
        )
        attention = p_choose_i * ops.transpose(q_by_time)
    elif mode == "parallel":
        cumprod_1mp_choose_i = safe_cumprod(1 - p_choose_i, axis=1, exclusive=True)
        attention = (
            p_choose_i
            * cumprod_1mp_choose_i
            * ops.cumsum(previous_attention / ops.clip(cumprod_1mp_choose_i, 1e-10, 1.0), axis=1)
        )
    elif mode == "hard":
        p_choose_i = p_choose_i * ops.cumsum(previous_attention, axis=1)
        attention = p_choose_i * cumprod(1 - p_choose_i, axis=1, exclusive=True)
    else:
        raise ValueError(f"`mode` must be one of {MONOTONIC_MODES}. Received: mode={mode!r}")
    return attention


def monotonic_probability_fn(score, previous_alignments, sigmoid_noise, mode, seed=None):
    """Scores to a monotonic distribution: optional pre-sigmoid noise, a sigmoid (a
    step at 0 for `mode="hard"`), then `monotonic_attention`."""
    if sigmoid_noise > 0:
        require_tensorflow("Monotonic attention with sigmoid_noise > 0", "tf.random.normal")
        noise = tf.random.normal(tf.shape(score), dtype=score.dtype, seed=seed)
        score += sigmoid_noise * noise
    if mode == "hard":
        p_choose_i = ops.cast(score > 0, score.dtype)
    else:
        p_choose_i = ops.sigmoid(score)
    return monotonic_attention(p_choose_i, previous_alignments, mode)
