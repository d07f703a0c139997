"""Self-attention (query = values) with a causal mask, for every score function,
against the NumPy reference."""

import keras
import numpy as np
import pytest
from helpers.attention_testing import (
    VARIANTS,
    make_layer,
    numpy_scores,
    randomize_weights,
    to_numpy,
)

SEQUENCE_VARIANTS = [name for name in VARIANTS if name != "location"] + ["location"]


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(0)


def numpy_self_attention(layer, x, mask, causal):
    """Softmax over j of score(x_i, x_j), restricted to real j (and j <= i if causal),
    written with explicit loops."""
    scores = numpy_scores(layer, x, x)
    batch, length, _ = x.shape
    weights = np.zeros_like(scores)
    for b in range(batch):
        for i in range(length):
            allowed = [j for j in range(length) if mask[b, j] and (not causal or j <= i)]
            if allowed:
                e = np.exp(scores[b, i, allowed] - scores[b, i, allowed].max())
                weights[b, i, allowed] = e / e.sum()
    return np.einsum("bij,bjd->bid", weights, x.astype("float64")), weights


@pytest.mark.parametrize("variant", SEQUENCE_VARIANTS)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_self_attention_matches_numpy(variant, causal):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 5, 4)).astype("float32")
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], bool)
    layer = make_layer(variant)
    layer.build(x.shape, x.shape)
    randomize_weights(layer)
    context, weights = layer(x, x, mask=mask, use_causal_mask=causal)
    expected_context, expected_weights = numpy_self_attention(layer, x, mask, causal)
    np.testing.assert_allclose(to_numpy(weights), expected_weights, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_numpy(context), expected_context, rtol=1e-5, atol=1e-5)
    if causal:
        # Step i never looks ahead: the strict upper triangle is exactly 0.
        assert (
            to_numpy(weights)[:, np.triu_indices(5, k=1)[0], np.triu_indices(5, k=1)[1]] == 0
        ).all()


def test_causal_outputs_do_not_depend_on_later_steps():
    """Changing the last step changes no earlier step's output (the causal contract)."""
    layer = make_layer("bahdanau")
    x = np.random.default_rng(2).normal(size=(1, 6, 4)).astype("float32")
    changed = x.copy()
    changed[:, -1] += 10.0
    first, _ = layer(x, x, use_causal_mask=True)
    second, _ = layer(changed, changed, use_causal_mask=True)
    np.testing.assert_array_equal(to_numpy(first)[:, :-1], to_numpy(second)[:, :-1])
    assert not np.allclose(to_numpy(first)[:, -1], to_numpy(second)[:, -1])


def test_query_mask_in_self_attention():
    """Padded query steps get zero context and weights; the Keras mask of an Embedding
    output serves as both the values' mask and the query mask."""
    tokens = np.array([[3, 4, 5, 0], [6, 7, 0, 0]], "int32")
    embedded = keras.layers.Embedding(10, 4, mask_zero=True)(tokens)
    context, weights = make_layer("scaled_dot")(embedded, embedded, use_causal_mask=True)
    weights, context = to_numpy(weights), to_numpy(context)
    assert (weights[0, 3] == 0).all() and (weights[1, 2:] == 0).all()
    assert (context[1, 2:] == 0).all()
    np.testing.assert_allclose(weights[0, :3].sum(-1), 1.0, atol=1e-6)
    assert (weights[:, :, 3] == 0).all()  # padding is never attended


def test_causal_mask_needs_a_sequence_query():
    layer = make_layer("dot")
    x = np.zeros((2, 3, 4), "float32")
    with pytest.raises(ValueError, match="use_causal_mask=True.*rank 3"):
        layer(x[:, 0], x, use_causal_mask=True)
