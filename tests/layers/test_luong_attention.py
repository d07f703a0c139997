"""LuongAttention: every score against NumPy, the location cut-off, the arguments."""

import keras
import numpy as np
import pytest
from helpers.attention_testing import (
    MAX_LENGTH,
    SAME_DIM_VARIANTS,
    assert_matches_numpy,
    make_layer,
    numpy_attention,
    random_inputs,
    to_numpy,
)

from keras_attention.layers import LuongAttention

LUONG_VARIANTS = [
    "dot",
    "general",
    "concat",
    "scaled_dot",
    "cosine",
    "location",
    "general_scaled",
    "dot_scaled",
    "general_raw",
]


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(0)


@pytest.mark.parametrize("variant", LUONG_VARIANTS)
@pytest.mark.parametrize("one_step", [True, False], ids=["one_step", "multi_step"])
@pytest.mark.parametrize("masked", [False, True], ids=["no_mask", "mask"])
def test_matches_numpy(variant, one_step, masked):
    dq = 4 if variant in SAME_DIM_VARIANTS else 3
    assert_matches_numpy(variant, one_step, masked, dq=dq, dv=4)


@pytest.mark.parametrize(
    "score, extra, weights",
    [
        ("dot", {}, {}),
        ("scaled_dot", {}, {"score_scale": ()}),  # its learned g, on by default
        ("scaled_dot", {"scale": False}, {}),
        ("general", {}, {"kernel": (3, 4)}),
        ("location", {"max_length": 9}, {"kernel": (3, 9)}),
        (
            "concat",
            {"units": 6},
            {"key_kernel": (4, 6), "query_kernel": (3, 6), "score_kernel": (6,)},
        ),
    ],
)
def test_weights(score, extra, weights):
    dq = 4 if score in SAME_DIM_VARIANTS else 3
    layer = LuongAttention(score=score, **extra)
    layer.build((None, dq), (None, None, 4))
    assert {w.name: tuple(w.shape) for w in layer.weights} == weights
    scaled = LuongAttention(score=score, **{**extra, "scale": True})
    scaled.build((None, dq), (None, None, 4))
    assert {w.name: tuple(w.shape) for w in scaled.weights} == {**weights, "score_scale": ()}


def test_cosine_and_scaled_dot_learn_their_scale_by_default():
    """The cosine and scaled_dot scores have the learned scale unless told not to; the
    others do not."""
    for scale, weights in ((None, {"score_scale": ()}), (True, {"score_scale": ()}), (False, {})):
        layer = LuongAttention(score="cosine", scale=scale)
        layer.build((None, 4), (None, None, 4))
        assert {w.name: tuple(w.shape) for w in layer.weights} == weights
        assert layer.get_config()["scale"] is bool(weights)
    assert LuongAttention(score="dot").scale is False
    assert LuongAttention(score="scaled_dot").scale is True
    assert LuongAttention(score="scaled_dot", scale=False).scale is False
    # Layers saved with an explicit scale load as saved.
    old = LuongAttention.from_config(
        {**LuongAttention(score="cosine").get_config(), "scale": False}
    )
    assert old.scale is False


def test_key_strength_starts_at_sqrt_d_for_cosine_and_at_one_otherwise():
    """g = sqrt(d) makes the cosine score of unit-mean-square vectors equal their scaled
    dot product at initialisation; an explicit initializer wins and round-trips."""
    query, values, _ = random_inputs(tv=5, dq=16, dv=16)
    cosine = LuongAttention(score="cosine")
    cosine(query, values)
    np.testing.assert_allclose(to_numpy(cosine.score_scale), 4.0)
    unit_query = query / np.sqrt(np.mean(query**2, -1, keepdims=True))
    unit_values = values / np.sqrt(np.mean(values**2, -1, keepdims=True))
    _, cosine_weights = cosine(unit_query, unit_values)
    _, scaled_weights = LuongAttention(score="scaled_dot")(unit_query, unit_values)
    np.testing.assert_allclose(to_numpy(cosine_weights), to_numpy(scaled_weights), atol=1e-5)

    general = LuongAttention(score="general", scale=True)
    general(query, values)
    np.testing.assert_allclose(to_numpy(general.score_scale), 1.0)
    explicit = LuongAttention(score="cosine", scale_initializer="ones")
    explicit(query, values)
    np.testing.assert_allclose(to_numpy(explicit.score_scale), 1.0)
    restored = LuongAttention.from_config(explicit.get_config())
    restored(query, values)
    np.testing.assert_allclose(to_numpy(restored.score_scale), 1.0)


def test_location_cuts_scores_to_tv():
    """A location layer built for short values also serves shorter ones: the scores are
    the first Tv entries of W_a s."""
    layer = LuongAttention(score="location", max_length=MAX_LENGTH)
    for tv in (2, 5, MAX_LENGTH):
        query, values, _ = random_inputs(tv=tv, dq=3)
        context, weights = layer(query[:, 0], values)
        assert tuple(weights.shape) == (2, tv)
        expected_context, expected_weights = numpy_attention(layer, query[:, 0], values)
        np.testing.assert_allclose(to_numpy(weights), expected_weights, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(to_numpy(context), expected_context, rtol=1e-5, atol=1e-5)


def test_location_rejects_long_values():
    query, values, _ = random_inputs(tv=MAX_LENGTH + 1)
    layer = LuongAttention(score="location", max_length=MAX_LENGTH)
    with pytest.raises(ValueError, match=f"Tv={MAX_LENGTH + 1}"):
        layer(query, values)
    layer(query[:, :, :], values[:, :MAX_LENGTH])
    with pytest.raises(ValueError, match=f"Tv={MAX_LENGTH + 1}"):
        layer(query, values)
    with pytest.raises(ValueError, match=f"Tv={MAX_LENGTH + 1}"):
        layer.prepare_keys(values)


def test_cosine_zero_vectors_are_finite():
    """Zero values (e.g. zero padding) get a cosine of 0, not NaN."""
    query, values, _ = random_inputs()
    values[:, 1] = 0.0
    query[0, 0] = 0.0
    context, weights = make_layer("cosine")(query, values)
    assert np.isfinite(to_numpy(context)).all() and np.isfinite(to_numpy(weights)).all()


def test_general_prepare_keys_needs_a_built_layer():
    query, values, _ = random_inputs(dq=3)
    layer = LuongAttention(score="general")
    with pytest.raises(ValueError, match="needs a built layer"):
        layer.prepare_keys(values)
    layer.build(query.shape, values.shape)
    keys = layer.prepare_keys(values)
    np.testing.assert_allclose(
        to_numpy(keys), values @ to_numpy(layer.kernel).T, rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("variant", ["dot", "scaled_dot", "cosine", "concat", "location"])
def test_prepare_keys_before_build(variant):
    """Scores whose keys need only the values prepare them on an unbuilt layer."""
    dq = 4 if variant in SAME_DIM_VARIANTS else 3
    query, values, mask = random_inputs(dq=dq)
    layer = make_layer(variant)
    keys = layer.prepare_keys(values)
    context, weights = layer(query, values, mask=mask, keys=keys)
    expected_context, expected_weights = numpy_attention(layer, query, values, mask)
    np.testing.assert_allclose(to_numpy(weights), expected_weights, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("score", ["dot", "scaled_dot", "cosine"])
def test_same_dim_scores_reject_different_dims(score):
    query, values, _ = random_inputs(dq=3, dv=4)
    with pytest.raises(ValueError, match=r"query.shape=\(2, 3, 3\), values.shape=\(2, 5, 4\)"):
        LuongAttention(score=score)(query, values)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"score": "bahdanau"}, "score='bahdanau'"),
        ({"score": None}, "score=None"),
        ({"score": "concat", "units": 0}, "units=0"),
        ({"score": "dot", "units": 4}, "units=4"),
        ({"score": "location"}, "max_length=None"),
        ({"score": "location", "max_length": -1}, "max_length=-1"),
        ({"score": "general", "max_length": 5}, "max_length=5"),
        ({"score": "dot", "scale": 1}, "scale=1"),
        ({"score": "dot", "hard": "yes"}, "hard=yes"),
        ({"score": "dot", "dropout": 1.5}, "dropout=1.5"),
        ({"score": "cosine", "scale_by_dimension": False}, "scale_by_dimension=False"),
        ({"score": "dot", "scale_by_dimension": 0}, "scale_by_dimension=0"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LuongAttention(**kwargs)


def test_config_round_trip():
    layer = LuongAttention(
        score="concat", units=3, scale=True, kernel_initializer="zeros", dropout=0.1, name="a"
    )
    config = layer.get_config()
    assert {k: config[k] for k in ("score", "units", "max_length", "scale")} == {
        "score": "concat",
        "units": 3,
        "max_length": None,
        "scale": True,
    }
    clone = LuongAttention.from_config(config)
    assert clone.get_config() == config
    assert isinstance(clone.kernel_initializer, keras.initializers.Zeros)


def test_concat_units_default_to_the_query_size():
    layer = LuongAttention(score="concat")
    layer.build((None, 3), (None, None, 4))
    assert {w.name: tuple(w.shape) for w in layer.weights} == {
        "key_kernel": (4, 3),
        "query_kernel": (3, 3),
        "score_kernel": (3,),
    }
    assert layer.get_config()["units"] is None  # reloads to the same default
    with pytest.raises(ValueError, match="concat.*built layer"):
        LuongAttention(score="concat").prepare_keys(np.zeros((1, 2, 4), "float32"))


def test_concat_is_the_bahdanau_score():
    """Luong's concat score and Bahdanau attention share one implementation: with the
    same weights they give identical outputs."""
    from keras_attention.layers import BahdanauAttention

    query, values, mask = random_inputs(dq=3, dv=4)
    concat = LuongAttention(score="concat", units=5)
    bahdanau = BahdanauAttention(5)
    for layer in (concat, bahdanau):
        layer.build(query.shape, values.shape)
    for name in ("key_kernel", "query_kernel", "score_kernel"):
        source = next(w for w in concat.weights if w.name == name)
        target = next(w for w in bahdanau.weights if w.name == name)
        target.assign(np.random.default_rng(len(name)).normal(size=source.shape))
        source.assign(target)
    for a, b in zip(
        concat(query, values, mask=mask), bahdanau(query, values, mask=mask), strict=True
    ):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))


@pytest.mark.parametrize("score, default", [("dot", False), ("general", True)])
def test_layers_saved_before_scale_by_dimension_keep_the_raw_score(score, default):
    """`dot` is the paper's raw score by default, `general` scaled; new configs round-trip
    the setting, and a config without the key (a file saved by an earlier version)
    reloads with the raw score it was trained with."""
    config = LuongAttention(score=score).get_config()
    assert config["scale_by_dimension"] is default
    assert LuongAttention.from_config(config).scale_by_dimension is default
    for setting in (True, False):
        config = LuongAttention(score=score, scale_by_dimension=setting).get_config()
        assert LuongAttention.from_config(config).scale_by_dimension is setting
    del config["scale_by_dimension"]
    assert LuongAttention.from_config(config).scale_by_dimension is False
