"""Attention probability functions of TFA's seq2seq: `hardmax`, `safe_cumprod` and
`monotonic_attention` (Raffel et al., 2017), in plain TensorFlow ops."""

import numpy as np
import tensorflow as tf

MONOTONIC_MODES = ("recursive", "parallel", "hard")


def hardmax(logits, name=None):
    """Returns batched one-hot vectors of the maximum logit (the first one on ties).

    Args:
        logits: A batch tensor of logit values, shape `(..., depth)`.
        name: Optional name scope.

    Returns:
        A one-hot tensor of the same shape and dtype as `logits`.
    """
    with tf.name_scope(name or "Hardmax"):
        logits = tf.convert_to_tensor(logits, name="logits")
        depth = logits.shape[-1] or tf.shape(logits)[-1]
        return tf.one_hot(tf.argmax(logits, -1), depth, dtype=logits.dtype)


def safe_cumprod(x, *args, **kwargs):
    """The cumulative product of `x` as `exp(cumsum(log(x)))`, free of underflow.

    `x` is clipped to `[tiny, 1]` first (`tiny` the dtype's smallest normal number), so
    it suits probabilities. Takes the arguments of `tf.math.cumprod` (`axis`,
    `exclusive`, `reverse`).

    Args:
        x: Tensor of values in `[0, 1]`.
        *args: Passed on to `tf.cumsum`.
        **kwargs: Passed on to `tf.cumsum`.

    Returns:
        The cumulative product of `x`.
    """
    with tf.name_scope("SafeCumprod"):
        x = tf.convert_to_tensor(x, name="x")
        tiny = np.finfo(x.dtype.as_numpy_dtype).tiny
        return tf.exp(tf.cumsum(tf.math.log(tf.clip_by_value(x, tiny, 1)), *args, **kwargs))


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
        mode: `"recursive"` (a `tf.scan`, exact), `"parallel"` (closed form with
            cumulative sums and products, may lose precision for long memories or
            probabilities near 0 or 1) or `"hard"` (for probabilities that are all 0
            or 1; exact).

    Returns:
        The attention distribution, shape `(batch_size, memory_time)`.
    """
    p_choose_i = tf.convert_to_tensor(p_choose_i, name="p_choose_i")
    previous_attention = tf.convert_to_tensor(previous_attention, name="previous_attention")
    if mode == "recursive":
        batch_size = p_choose_i.shape[0] or tf.shape(p_choose_i)[0]
        # q_i = (1 - p_{i-1}) q_{i-1} + previous_i, attention_i = p_i q_i.
        shifted_1mp_choose_i = tf.concat(
            [tf.ones((batch_size, 1), dtype=p_choose_i.dtype), 1 - p_choose_i[:, :-1]], 1
        )
        attention = p_choose_i * tf.transpose(
            tf.scan(
                lambda x, yz: tf.reshape(yz[0] * x + yz[1], (batch_size,)),
                [tf.transpose(shifted_1mp_choose_i), tf.transpose(previous_attention)],
                tf.zeros((batch_size,), dtype=p_choose_i.dtype),
            )
        )
    elif mode == "parallel":
        cumprod_1mp_choose_i = safe_cumprod(1 - p_choose_i, axis=1, exclusive=True)
        attention = (
            p_choose_i
            * cumprod_1mp_choose_i
            * tf.cumsum(
                previous_attention / tf.clip_by_value(cumprod_1mp_choose_i, 1e-10, 1.0),
                axis=1,
            )
        )
    elif mode == "hard":
        p_choose_i *= tf.cumsum(previous_attention, axis=1)
        attention = p_choose_i * tf.math.cumprod(1 - p_choose_i, axis=1, exclusive=True)
    else:
        raise ValueError(f"`mode` must be one of {MONOTONIC_MODES}. Received: mode={mode!r}")
    return attention


def monotonic_probability_fn(score, previous_alignments, sigmoid_noise, mode, seed=None):
    """Scores to a monotonic distribution: optional pre-sigmoid noise, a sigmoid (a
    step at 0 for `mode="hard"`), then `monotonic_attention`."""
    if sigmoid_noise > 0:
        noise = tf.random.normal(tf.shape(score), dtype=score.dtype, seed=seed)
        score += sigmoid_noise * noise
    if mode == "hard":
        p_choose_i = tf.cast(score > 0, score.dtype)
    else:
        p_choose_i = tf.sigmoid(score)
    return monotonic_attention(p_choose_i, previous_alignments, mode)
