"""FusedAdam against a NumPy Adam and Keras' Adam, dense and sparse, in and out of XLA."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.training.fused_adam import FusedAdam


def numpy_adam(weights, gradients, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    """Adam as Kingma and Ba (2015) write it, Keras' epsilon placement."""
    m = np.zeros_like(weights)
    v = np.zeros_like(weights)
    for t, g in enumerate(gradients, start=1):
        m = beta_1 * m + (1 - beta_1) * g
        v = beta_2 * v + (1 - beta_2) * g**2
        alpha = lr * np.sqrt(1 - beta_2**t) / (1 - beta_1**t)
        weights = weights - alpha * m / (np.sqrt(v) + epsilon)
    return weights


def apply_steps(optimizer, weights, gradients, sparse_rows=None, jit_compile=False):
    variable = keras.Variable(weights)
    optimizer.build([variable])

    @tf.function(jit_compile=jit_compile)
    def apply(gradient):
        if sparse_rows is not None:
            gradient = tf.IndexedSlices(
                tf.gather(gradient, sparse_rows), tf.constant(sparse_rows), gradient.shape
            )
        optimizer.apply([gradient], [variable])

    for g in gradients:
        apply(tf.constant(g))
    return variable.numpy()


def example(seed=0, steps=4):
    rng = np.random.default_rng(seed)
    weights = rng.normal(size=(6, 3)).astype("float32")
    gradients = [rng.normal(size=(6, 3)).astype("float32") for _ in range(steps)]
    return weights, gradients


@pytest.mark.parametrize("jit_compile", [False, True], ids=["graph", "xla"])
def test_fused_adam_matches_numpy_adam(jit_compile):
    weights, gradients = example()
    got = apply_steps(FusedAdam(0.01), weights, gradients, jit_compile=jit_compile)
    np.testing.assert_allclose(got, numpy_adam(weights, gradients, 0.01), rtol=1e-5, atol=1e-6)
    assert not np.allclose(got, weights)


def test_sparse_gradients_update_like_their_dense_form():
    weights, gradients = example(1)
    rows = [0, 4, 4]  # a repeated row is summed, as an embedding lookup's gradient is
    dense = []
    for g in gradients:
        d = np.zeros_like(g)
        np.add.at(d, rows, g[rows])
        dense.append(d)
    got = apply_steps(FusedAdam(0.01), weights, gradients, sparse_rows=rows)
    np.testing.assert_allclose(got, numpy_adam(weights, dense, 0.01), rtol=1e-5, atol=1e-6)


def test_matches_keras_adam_with_a_schedule_and_global_clipping():
    weights, gradients = example(2, steps=6)
    schedule = keras.optimizers.schedules.CosineDecay(0.02, decay_steps=6)
    fused = apply_steps(FusedAdam(schedule, global_clipnorm=0.5), weights, gradients)
    schedule = keras.optimizers.schedules.CosineDecay(0.02, decay_steps=6)
    reference = apply_steps(
        keras.optimizers.Adam(schedule, global_clipnorm=0.5), weights, gradients
    )
    np.testing.assert_allclose(fused, reference, rtol=1e-5, atol=1e-6)


def test_amsgrad_falls_back_to_keras_adam():
    weights, gradients = example(3)
    fused = apply_steps(FusedAdam(0.01, amsgrad=True), weights, gradients)
    reference = apply_steps(keras.optimizers.Adam(0.01, amsgrad=True), weights, gradients)
    np.testing.assert_allclose(fused, reference, rtol=1e-6)


def test_under_a_one_replica_distribution_strategy():
    weights, gradients = example(4)
    with tf.distribute.MirroredStrategy(["/cpu:0"]).scope():
        optimizer = FusedAdam(0.01)
        variable = keras.Variable(weights)
        optimizer.build([variable])
    for g in gradients:
        optimizer.apply([tf.constant(g)], [variable])
    np.testing.assert_allclose(
        variable.numpy(), numpy_adam(weights, gradients, 0.01), rtol=1e-5, atol=1e-6
    )


def test_serializes_as_itself():
    optimizer = keras.optimizers.deserialize(
        keras.optimizers.serialize(FusedAdam(0.003, beta_2=0.98, global_clipnorm=1.0))
    )
    assert isinstance(optimizer, FusedAdam)
    assert optimizer.beta_2 == 0.98 and optimizer.global_clipnorm == 1.0
