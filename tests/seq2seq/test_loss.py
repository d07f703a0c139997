"""The cases of TFA 0.23's `loss_test.py`: every per-token cross entropy is log(5),
stated there as 1.60944."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention import seq2seq

pytestmark = pytest.mark.tensorflow_only

BATCH, TIME, CLASSES = 2, 3, 5
EXPECTED = 1.60944


def data():
    """Logits `i + 0.5` at step `i` for every class, targets `[0, 1, 2]`, weights 1."""
    logits = tf.stack([tf.fill([BATCH, CLASSES], i + 0.5) for i in range(TIME)], axis=1)
    targets = tf.stack([tf.fill([BATCH], i) for i in range(TIME)], axis=1)
    return logits, targets, tf.ones([BATCH, TIME])


def expected_for(average_across_timesteps, average_across_batch, value):
    if average_across_timesteps and average_across_batch:
        return value
    if average_across_batch:
        return np.full(TIME, value)
    if average_across_timesteps:
        return np.full(BATCH, value)
    return np.full((BATCH, TIME), value)


@pytest.mark.parametrize("zero_weights", [True, False])
@pytest.mark.parametrize("average_across_batch", [True, False])
@pytest.mark.parametrize("average_across_timesteps", [True, False])
def test_sequence_loss(average_across_timesteps, average_across_batch, zero_weights):
    logits, targets, weights = data()
    if zero_weights:
        weights = tf.zeros_like(weights)
    computed = seq2seq.sequence_loss(
        logits,
        targets,
        weights,
        average_across_timesteps=average_across_timesteps,
        average_across_batch=average_across_batch,
    )
    value = 0.0 if zero_weights else EXPECTED
    expected = expected_for(average_across_timesteps, average_across_batch, value)
    np.testing.assert_allclose(computed, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("average_across_batch", [True, False])
@pytest.mark.parametrize("average_across_timesteps", [True, False])
def test_sequence_loss_class(average_across_timesteps, average_across_batch):
    logits, targets, weights = data()
    loss = seq2seq.SequenceLoss(
        average_across_timesteps=average_across_timesteps,
        average_across_batch=average_across_batch,
        sum_over_timesteps=False,
        sum_over_batch=False,
    )
    expected = expected_for(average_across_timesteps, average_across_batch, EXPECTED)
    np.testing.assert_allclose(loss(targets, logits, weights), expected, rtol=1e-6, atol=1e-6)


SUMS = [
    ((True, True), EXPECTED),
    ((False, True), np.full(TIME, EXPECTED)),
    ((True, False), np.full(BATCH, EXPECTED)),
    ((False, False), np.full((BATCH, TIME), EXPECTED)),
]


@pytest.mark.parametrize("sums, expected", SUMS)
def test_sum_reduction(sums, expected):
    logits, targets, weights = data()
    loss = seq2seq.SequenceLoss(False, False, *sums)
    np.testing.assert_allclose(loss(targets, logits, weights), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("sums, expected", SUMS)
def test_weighted_sum_reduction(sums, expected):
    """The last step's weight is 0: sums count only the weighted tokens."""
    logits, targets, _ = data()
    weights = tf.constant([[1.0, 1.0, 0.0]] * BATCH)
    expected = np.array(expected, dtype=np.float64)
    if sums == (False, True):
        expected[-1] = 0.0
    elif sums == (False, False):
        expected[:, -1] = 0.0
    loss = seq2seq.SequenceLoss(False, False, *sums)
    np.testing.assert_allclose(loss(targets, logits, weights), expected, rtol=1e-6, atol=1e-6)


def test_ambiguous_order():
    logits, targets, weights = data()
    with pytest.raises(ValueError, match="because of ambiguous order"):
        seq2seq.SequenceLoss(
            average_across_timesteps=False,
            average_across_batch=True,
            sum_over_timesteps=True,
            sum_over_batch=False,
        )(targets, logits, weights)


def test_keras_compatibility():
    """`compile(loss=SequenceLoss())` with one-hot targets and per-token sample weights."""
    logits, targets, weights = data()
    targets = tf.one_hot(targets, depth=CLASSES)
    inputs = keras.Input(shape=(TIME,))
    constant = keras.layers.Lambda(
        lambda x: tf.tile(tf.expand_dims(logits[0], 0), [tf.shape(x)[0], 1, 1]),
        output_shape=(TIME, CLASSES),
    )(inputs)
    model = keras.Model(inputs, constant)
    model.compile(optimizer="adam", loss=seq2seq.SequenceLoss())
    history = model.fit(
        tf.ones((BATCH, TIME)), targets, sample_weight=weights, batch_size=BATCH, verbose=0
    )
    np.testing.assert_allclose(history.history["loss"][0], EXPECTED, rtol=1e-6, atol=1e-6)


def test_config_round_trip():
    loss = seq2seq.SequenceLoss(average_across_timesteps=True, sum_over_timesteps=False)
    clone = keras.losses.deserialize(keras.losses.serialize(loss))
    assert isinstance(clone, seq2seq.SequenceLoss)
    assert clone.get_config() == loss.get_config()
