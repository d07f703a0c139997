"""BahdanauAttention: the additive score against NumPy, its weights, its arguments."""

import keras
import numpy as np
import pytest
from helpers.attention_testing import assert_matches_numpy, random_inputs, to_numpy

from keras_attention.layers import BahdanauAttention


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(0)


@pytest.mark.parametrize("variant", ["bahdanau", "bahdanau_normalized"])
@pytest.mark.parametrize("one_step", [True, False], ids=["one_step", "multi_step"])
@pytest.mark.parametrize("masked", [False, True], ids=["no_mask", "mask"])
def test_matches_numpy(variant, one_step, masked):
    assert_matches_numpy(variant, one_step, masked, dq=3, dv=4)


def test_weights_and_shapes():
    layer = BahdanauAttention(units=6, normalize=True)
    layer.build((None, 3), (None, None, 4))
    shapes = {w.name: tuple(w.shape) for w in layer.weights}
    assert shapes == {
        "key_kernel": (4, 6),
        "query_kernel": (3, 6),
        "score_kernel": (6,),
        "score_scale": (),
        "score_bias": (6,),
    }
    np.testing.assert_allclose(to_numpy(layer.score_scale), np.sqrt(1 / 6), rtol=1e-6)
    assert [w.name for w in BahdanauAttention(2).weights] == []


def test_prepare_keys_before_build_then_call():
    """The key projection needs only the values: prepare_keys works on an unbuilt layer, and
    the first call builds the rest with the variables in the usual order."""
    query, values, mask = random_inputs(dq=3, dv=4)
    layer = BahdanauAttention(units=5)
    keys = layer.prepare_keys(values)
    assert tuple(keys.shape) == (2, 5, 5)
    np.testing.assert_allclose(
        to_numpy(keys), values @ to_numpy(layer.key_kernel), rtol=1e-5, atol=1e-6
    )
    context, _ = layer(query[:, 0], values, mask=mask, keys=keys)
    assert [w.name for w in layer.weights] == ["key_kernel", "query_kernel", "score_kernel"]
    context_fresh, _ = layer(query[:, 0], values, mask=mask)
    np.testing.assert_array_equal(to_numpy(context), to_numpy(context_fresh))


@pytest.mark.parametrize("units", [0, -3, 2.5, None, True])
def test_bad_units(units):
    with pytest.raises(ValueError, match=f"units={units}"):
        BahdanauAttention(units=units)


def test_bad_normalize():
    with pytest.raises(ValueError, match="normalize=yes"):
        BahdanauAttention(4, normalize="yes")


def test_config_round_trip():
    layer = BahdanauAttention(
        units=7,
        normalize=True,
        kernel_initializer="he_normal",
        kernel_regularizer="l2",
        hard=True,
        dropout=0.25,
        seed=3,
        name="att",
    )
    config = layer.get_config()
    assert {k: config[k] for k in ("units", "normalize", "hard", "dropout", "seed")} == {
        "units": 7,
        "normalize": True,
        "hard": True,
        "dropout": 0.25,
        "seed": 3,
    }
    clone = BahdanauAttention.from_config(config)
    assert clone.get_config() == config
    assert isinstance(clone.kernel_initializer, keras.initializers.HeNormal)
    assert isinstance(clone.kernel_regularizer, keras.regularizers.L2)


def test_regularizer_adds_losses():
    query, values, _ = random_inputs()
    layer = BahdanauAttention(units=3, kernel_regularizer=keras.regularizers.L2(0.1))
    layer(query, values)
    expected = sum(0.1 * np.sum(to_numpy(w) ** 2) for w in layer.weights)
    np.testing.assert_allclose(float(sum(layer.losses)), expected, rtol=1e-5)
