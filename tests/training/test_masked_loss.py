"""Masked cross-entropy and accuracy against NumPy, and padding invariance."""

import keras
import numpy as np

from keras_attention.training.masked_accuracy import MaskedAccuracy
from keras_attention.training.masked_loss import MaskedSparseCategoricalCrossentropy


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
