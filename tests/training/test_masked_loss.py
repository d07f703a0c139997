"""Masked cross-entropy and accuracy against NumPy, and padding invariance."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.training.masked_accuracy import MaskedAccuracy
from keras_attention.training.masked_loss import (
    MaskedSparseCategoricalCrossentropy,
    sparse_cross_entropy,
)


def numpy_masked_ce(labels, logits):
    logits = logits - logits.max(-1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]
    mask = labels != 0
    return -(picked * mask).sum() / mask.sum()


def example(seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(1, 7, (4, 5))
    labels[1, 3:] = 0
    labels[3, 1:] = 0
    logits = rng.normal(size=(4, 5, 7)).astype("float32")
    return labels, logits


def test_loss_matches_numpy_and_ignores_padding():
    labels, logits = example()
    loss = MaskedSparseCategoricalCrossentropy()
    expected = numpy_masked_ce(labels, logits)
    np.testing.assert_allclose(loss(labels.astype("float32"), logits), expected, rtol=1e-5)
    # More padding (and garbage logits there) does not change the loss.
    padded_labels = np.pad(labels, [[0, 0], [0, 3]])
    padded_logits = np.concatenate([logits, 50 * np.ones((4, 3, 7), "float32")], axis=1)
    np.testing.assert_allclose(loss(padded_labels, padded_logits), expected, rtol=1e-5)


def test_loss_of_all_padding_is_zero():
    loss = MaskedSparseCategoricalCrossentropy()
    assert float(loss(np.zeros((2, 3)), np.ones((2, 3, 4), "float32"))) == 0.0


def test_accuracy_counts_real_tokens_across_batches():
    labels, logits = example()
    metric = MaskedAccuracy()
    metric.update_state(labels, logits)
    labels2, logits2 = example(1)
    metric.update_state(labels2, logits2)
    hits = sum(
        ((lg.argmax(-1) == lb) & (lb != 0)).sum()
        for lb, lg in ((labels, logits), (labels2, logits2))
    )
    total = (labels != 0).sum() + (labels2 != 0).sum()
    np.testing.assert_allclose(metric.result(), hits / total, rtol=1e-6)
    metric.reset_state()
    assert float(metric.result()) == 0.0


def test_loss_and_metric_serialize():
    loss = keras.losses.deserialize(
        keras.losses.serialize(MaskedSparseCategoricalCrossentropy(pad_id=5))
    )
    assert loss.pad_id == 5
    metric = MaskedAccuracy.from_config(MaskedAccuracy(pad_id=2).get_config())
    assert metric.pad_id == 2


def numpy_masked_ce_gradient(labels, logits):
    """d loss / d logits = (softmax(z) - onehot(y)) * mask / tokens, by hand."""
    exp = np.exp(logits - logits.max(-1, keepdims=True))
    softmax = exp / exp.sum(-1, keepdims=True)
    onehot = np.eye(logits.shape[-1])[labels]
    mask = (labels != 0)[..., None]
    return (softmax - onehot) * mask / mask.sum()


def masked_loss_gradient(labels, logits, jit_compile=False):
    loss_fn = MaskedSparseCategoricalCrossentropy()
    logits = tf.Variable(logits)

    @tf.function(jit_compile=jit_compile)
    def gradient():
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, logits)
        return loss, tape.gradient(loss, logits)

    return gradient()


@pytest.mark.parametrize("jit_compile", [False, True], ids=["graph", "xla"])
def test_loss_gradient_matches_the_hand_written_derivative(jit_compile):
    labels, logits = example()
    loss, grad = masked_loss_gradient(labels, logits, jit_compile)
    np.testing.assert_allclose(loss, numpy_masked_ce(labels, logits), rtol=1e-5)
    np.testing.assert_allclose(grad, numpy_masked_ce_gradient(labels, logits), atol=1e-7)


def test_loss_gradient_matches_tensorflows_cross_entropy_on_large_logits():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 300, (6, 9))
    logits = (30 * rng.normal(size=(6, 9, 300))).astype("float32")
    loss, grad = masked_loss_gradient(labels, logits)
    ref_logits = tf.Variable(logits)
    mask = tf.constant(labels != 0, tf.float32)
    with tf.GradientTape() as tape:
        per_token = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, ref_logits)
        ref_loss = tf.reduce_sum(per_token * mask) / tf.reduce_sum(mask)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-5)
    np.testing.assert_allclose(grad, tape.gradient(ref_loss, ref_logits), atol=1e-7)


def test_sparse_cross_entropy_rejects_a_label_outside_the_vocabulary():
    with pytest.raises(tf.errors.InvalidArgumentError, match="7"):
        sparse_cross_entropy(tf.constant([[1, 7]]), tf.zeros((1, 2, 7)))


# ------------------------------------------------------------------ label smoothing


def numpy_smoothed_masked_ce(labels, logits, eps):
    """Keras' convention: target (1 - eps) onehot(y) + eps / V, the eps over all V classes."""
    classes = logits.shape[-1]
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    target = (1 - eps) * np.eye(classes)[labels] + eps / classes
    per_token = -(target * log_probs).sum(-1)
    mask = labels != 0
    return (per_token * mask).sum() / mask.sum()


def numpy_smoothed_gradient(labels, logits, eps):
    """d loss / d logits = (softmax(z) - target) * mask / tokens."""
    classes = logits.shape[-1]
    exp = np.exp(logits - logits.max(-1, keepdims=True))
    target = (1 - eps) * np.eye(classes)[labels] + eps / classes
    mask = (labels != 0)[..., None]
    return (exp / exp.sum(-1, keepdims=True) - target) * mask / mask.sum()


def test_smoothed_loss_of_uniform_logits_is_log_v_whatever_eps():
    """Hand-worked: with equal logits every class has log-probability -log V, so any
    target distribution gives log V; the padded token (label 0) adds nothing."""
    labels = np.array([[2, 1, 0]])
    logits = np.zeros((1, 3, 4), "float32")
    logits[0, 2] = [9.0, -9.0, 5.0, 1.0]  # padding: ignored
    for eps in (0.0, 0.1, 0.5):
        loss = MaskedSparseCategoricalCrossentropy(label_smoothing=eps)
        np.testing.assert_allclose(loss(labels, logits), np.log(4.0), rtol=1e-6)


@pytest.mark.parametrize("eps", [0.1, 0.3])
def test_smoothed_loss_matches_numpy_and_ignores_padding(eps):
    labels, logits = example()
    loss = MaskedSparseCategoricalCrossentropy(label_smoothing=eps)
    expected = numpy_smoothed_masked_ce(labels, logits, eps)
    np.testing.assert_allclose(loss(labels, logits), expected, rtol=1e-5)
    assert abs(expected - numpy_masked_ce(labels, logits)) > 1e-3, "smoothing changes the loss"
    padded_labels = np.pad(labels, [[0, 0], [0, 3]])
    padded_logits = np.concatenate([logits, 50 * np.ones((4, 3, 7), "float32")], axis=1)
    np.testing.assert_allclose(loss(padded_labels, padded_logits), expected, rtol=1e-5)


def test_smoothed_loss_matches_keras_categorical_crossentropy_on_the_real_tokens():
    labels, logits = example(2)
    eps = 0.2
    keras_loss = keras.losses.CategoricalCrossentropy(
        from_logits=True, label_smoothing=eps, reduction=None
    )
    per_token = np.asarray(keras_loss(np.eye(7)[labels], logits))
    mask = labels != 0
    expected = (per_token * mask).sum() / mask.sum()
    got = MaskedSparseCategoricalCrossentropy(label_smoothing=eps)(labels, logits)
    np.testing.assert_allclose(got, expected, rtol=1e-5)


@pytest.mark.parametrize("jit_compile", [False, True], ids=["graph", "xla"])
def test_smoothed_loss_gradient_matches_the_hand_written_derivative(jit_compile):
    labels, logits = example(4)
    eps = 0.25
    loss_fn = MaskedSparseCategoricalCrossentropy(label_smoothing=eps)
    variable = tf.Variable(logits)

    @tf.function(jit_compile=jit_compile)
    def gradient():
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, variable)
        return loss, tape.gradient(loss, variable)

    loss, grad = gradient()
    np.testing.assert_allclose(loss, numpy_smoothed_masked_ce(labels, logits, eps), rtol=1e-5)
    np.testing.assert_allclose(grad, numpy_smoothed_gradient(labels, logits, eps), atol=1e-7)


@pytest.mark.parametrize("eps", [-0.1, 1.0, 1.5, True, "0.1"])
def test_label_smoothing_outside_zero_to_one_is_refused(eps):
    with pytest.raises(ValueError, match=r"`label_smoothing` must be a number in \[0, 1\)"):
        MaskedSparseCategoricalCrossentropy(label_smoothing=eps)


def test_label_smoothing_serializes():
    loss = keras.losses.deserialize(
        keras.losses.serialize(MaskedSparseCategoricalCrossentropy(label_smoothing=0.1))
    )
    assert loss.label_smoothing == 0.1
