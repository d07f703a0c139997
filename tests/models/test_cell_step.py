"""The hand-stepped cell: Keras' own GRUCell and LSTMCell, with the kernel whole or split."""

import keras
import numpy as np
import pytest

from keras_attention.models.cell_step import cell_step, cell_weights, input_projection

EMBEDDING, EXTRA, UNITS, BATCH = 5, 3, 4, 2


@pytest.mark.parametrize("cell_class", [keras.layers.GRUCell, keras.layers.LSTMCell])
@pytest.mark.parametrize("split", [False, True])
def test_cell_step_equals_the_keras_cell(cell_class, split):
    cell = cell_class(UNITS)
    rng = np.random.default_rng(0)
    embedded = rng.normal(size=(BATCH, EMBEDDING)).astype("float32")
    extra = rng.normal(size=(BATCH, EXTRA)).astype("float32")
    count = 1 if cell_class is keras.layers.GRUCell else 2
    states = [rng.normal(size=(BATCH, UNITS)).astype("float32") for _ in range(count)]
    weights = cell_weights(cell, EMBEDDING, EXTRA, split)
    assert weights.split is split
    assert (weights.extra_kernel is not None) is split
    expected_output, expected_states = cell(np.concatenate([embedded, extra], -1), states)
    inputs = input_projection(embedded, weights, "float32") if split else embedded
    output, new_states = cell_step(cell, inputs, extra, states, weights, "float32")
    np.testing.assert_allclose(output.numpy(), expected_output.numpy(), rtol=1e-5, atol=1e-6)
    for state, expected in zip(new_states, expected_states, strict=True):
        np.testing.assert_allclose(state.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)


def test_a_cell_whose_input_is_the_embedding_alone_has_no_extra_kernel():
    cell = keras.layers.GRUCell(UNITS)
    weights = cell_weights(cell, EMBEDDING, 0, split=True)
    assert weights.extra_kernel is None
    assert tuple(weights.kernel.shape) == (EMBEDDING, 3 * UNITS)
    assert tuple(weights.recurrent_bias.shape) == (3 * UNITS,)
