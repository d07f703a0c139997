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
    "scaled_dot_scaled",
    "dot_by_dimension",
    "general_by_dimension",
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
        ("scaled_dot", {}, {}),
        ("cosine", {}, {}),
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


def _table_scores(score, weights, query, values):
    """The score table of the docstring (and SPEC.md), nothing else: `(batch, Tq, Tv)`
    for a rank-3 query, with explicit loops over the positions."""
    q, h = query.astype("float64"), values.astype("float64")
    scores = np.zeros((q.shape[0], q.shape[1], h.shape[1]))
    for b, t, i in np.ndindex(scores.shape):
        s, hi = q[b, t], h[b, i]
        if score == "dot":
            e = s @ hi
        elif score == "scaled_dot":
            e = s @ hi / np.sqrt(len(hi))
        elif score == "general":
            e = s @ weights["kernel"] @ hi
        elif score == "concat":
            e = weights["score_kernel"] @ np.tanh(
                s @ weights["query_kernel"] + hi @ weights["key_kernel"]
            )
        elif score == "cosine":
            e = s @ hi / (np.linalg.norm(s) * np.linalg.norm(hi))
        else:  # location
            e = (s @ weights["kernel"])[i]
        scores[b, t, i] = e
    return scores


@pytest.mark.parametrize(
    "score, extra",
    [
        ("dot", {}),
        ("scaled_dot", {}),
        ("general", {}),
        ("concat", {"units": 5}),
        ("cosine", {}),
        ("location", {"max_length": MAX_LENGTH}),
    ],
)
@pytest.mark.parametrize("one_step", [True, False], ids=["2d_query", "3d_query"])
@pytest.mark.parametrize("masked", [False, True], ids=["no_mask", "mask"])
def test_default_arguments_compute_the_tables_equation(score, extra, one_step, masked):
    """A layer built with default arguments computes exactly its row of the score table:
    no learned scale, no division by sqrt(d) unless the row has it."""
    dq = 4 if score in ("dot", "scaled_dot", "cosine") else 3
    query, values, mask = random_inputs(dq=dq, dv=4)
    layer = LuongAttention(score=score, **extra)
    layer.build(query.shape, values.shape)
    rng = np.random.default_rng(1)
    for variable in layer.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32"))
    weights = {w.name: to_numpy(w).astype("float64") for w in layer.weights}
    scores = _table_scores(score, weights, query, values)
    expected = np.exp(scores - scores.max(-1, keepdims=True))
    if masked:
        expected = expected * mask[:, None, :]
    expected = expected / expected.sum(-1, keepdims=True)
    expected_context = np.einsum("btv,bvd->btd", expected, values)
    if one_step:
        context, attention = layer(query[:, 0], values, mask=mask if masked else None)
        expected, expected_context = expected[:, 0], expected_context[:, 0]
    else:
        context, attention = layer(query, values, mask=mask if masked else None)
    np.testing.assert_allclose(to_numpy(attention), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_numpy(context), expected_context, rtol=1e-5, atol=1e-5)


def test_no_score_learns_a_scale_unless_asked():
    """`scale` and `scale_by_dimension` are opt-in for every score; configs saved with
    an explicit setting reload as saved."""
    for score in ("dot", "general", "scaled_dot", "cosine"):
        layer = LuongAttention(score=score)
        assert (layer.scale, layer.scale_by_dimension) == (False, False)
    for scale, weights in ((False, {}), (True, {"score_scale": ()})):
        layer = LuongAttention(score="cosine", scale=scale)
        layer.build((None, 4), (None, None, 4))
        assert {w.name: tuple(w.shape) for w in layer.weights} == weights
        assert layer.get_config()["scale"] is scale
    saved = LuongAttention.from_config(
        {**LuongAttention(score="cosine").get_config(), "scale": True}
    )
    assert saved.scale is True


def test_key_strength_starts_at_sqrt_d_for_cosine_and_at_one_otherwise():
    """g = sqrt(d) makes the cosine score of unit-mean-square vectors equal their scaled
    dot product at initialisation; an explicit initializer wins and round-trips."""
    query, values, _ = random_inputs(tv=5, dq=16, dv=16)
    cosine = LuongAttention(score="cosine", scale=True)
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
    explicit = LuongAttention(score="cosine", scale=True, scale_initializer="ones")
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
        ({"score": "cosine", "scale_by_dimension": True}, "scale_by_dimension=True"),
        ({"score": "scaled_dot", "scale_by_dimension": True}, "scale_by_dimension=True"),
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


@pytest.mark.parametrize("score", ["dot", "general"])
def test_scale_by_dimension_round_trips(score):
    """`dot` and `general` are the raw scores by default; the setting round-trips, and a
    config without the key (saved by an early version) reloads with the raw score."""
    for setting in (False, True):
        config = LuongAttention(score=score, scale_by_dimension=setting).get_config()
        assert config["scale_by_dimension"] is setting
        assert LuongAttention.from_config(config).scale_by_dimension is setting
    del config["scale_by_dimension"]
    assert LuongAttention.from_config(config).scale_by_dimension is False


@pytest.mark.parametrize("score", ["scaled_dot", "cosine", "concat"])
def test_configs_saved_before_0_2_reload(score):
    """Before 0.2.0 every score but dot saved `scale_by_dimension=True`, which changed
    dot and general only: such configs still load, with the same scores."""
    extra = {"units": 3} if score == "concat" else {}
    config = {**LuongAttention(score=score, **extra).get_config(), "scale_by_dimension": True}
    assert LuongAttention.from_config(config).scale_by_dimension is False
