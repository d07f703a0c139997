"""Shared helpers for the attention layer tests: the layer variants under test and an
independent NumPy implementation of every score function and of masked attention."""

import numpy as np
from keras import ops

from keras_attention.layers import BahdanauAttention, LuongAttention

MAX_LENGTH = 7  # max_length of the "location" variant; the tests use Tv <= 6

# name -> constructor kwargs. Every variant of every score function.
VARIANTS = {
    "bahdanau": (BahdanauAttention, {"units": 5}),
    "bahdanau_normalized": (BahdanauAttention, {"units": 5, "normalize": True}),
    "dot": (LuongAttention, {"score": "dot"}),
    "general": (LuongAttention, {"score": "general"}),
    "concat": (LuongAttention, {"score": "concat", "units": 5}),
    "scaled_dot": (LuongAttention, {"score": "scaled_dot"}),
    "cosine": (LuongAttention, {"score": "cosine", "scale": True}),
    "location": (LuongAttention, {"score": "location", "max_length": MAX_LENGTH}),
    "general_scaled": (LuongAttention, {"score": "general", "scale": True}),
    "scaled_dot_scaled": (LuongAttention, {"score": "scaled_dot", "scale": True}),
    # The opt-in division by sqrt(d) of the dot and general scores.
    "dot_by_dimension": (LuongAttention, {"score": "dot", "scale_by_dimension": True}),
    "general_by_dimension": (LuongAttention, {"score": "general", "scale_by_dimension": True}),
}
# Variants without weights (a test that needs one adds the learned scale).
WEIGHT_FREE_VARIANTS = {"dot", "scaled_dot", "cosine", "dot_by_dimension"}
# Variants whose score needs dq == dv.
SAME_DIM_VARIANTS = {"dot", "scaled_dot", "cosine", "dot_by_dimension", "scaled_dot_scaled"}


def make_layer(variant, **overrides):
    cls, kwargs = VARIANTS[variant]
    return cls(**{**kwargs, **overrides})


def random_inputs(seed=0, batch=2, tq=3, tv=5, dq=4, dv=4):
    """Returns (query_3d, values, mask) with a mask that pads the second row."""
    rng = np.random.default_rng(seed)
    query = rng.normal(size=(batch, tq, dq)).astype("float32")
    values = rng.normal(size=(batch, tv, dv)).astype("float32")
    lengths = np.array([tv, max(1, tv - 2)] + [tv] * (batch - 2))
    mask = np.arange(tv)[None, :] < lengths[:, None]
    return query, values, mask


def randomize_weights(layer, seed=0):
    """Sets every variable to random values, so that initial values such as a zero bias or a
    unit scale cannot hide a weight that is used wrongly (or not at all)."""
    rng = np.random.default_rng(seed + 100)
    for variable in layer.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32"))


def numpy_weights(layer):
    """The layer's variables by name, as float64 NumPy arrays."""
    return {w.name: ops.convert_to_numpy(w).astype("float64") for w in layer.weights}


def _unit(x):
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-6)


def numpy_scores(layer, query, values):
    """Scores `(batch, Tq, Tv)` of `layer` for a rank-3 query, written from the equations
    with explicit loops over the positions (independent of the layer's vectorization)."""
    w = numpy_weights(layer)
    q = query.astype("float64")
    h = values.astype("float64")
    batch, tq, _ = q.shape
    tv = h.shape[1]
    scores = np.zeros((batch, tq, tv))
    kind = "additive" if isinstance(layer, BahdanauAttention) else layer.score
    if kind in ("additive", "concat"):
        v = w["score_kernel"]
        bias = np.zeros_like(v)
        if kind == "additive" and layer.normalize:
            v = w["score_scale"] * v / np.linalg.norm(v)
            bias = w["score_bias"]
    for b in range(batch):
        for t in range(tq):
            s = q[b, t]
            for i in range(tv):
                hi = h[b, i]
                if kind in ("additive", "concat"):
                    e = v @ np.tanh(s @ w["query_kernel"] + hi @ w["key_kernel"] + bias)
                elif kind == "dot":
                    e = s @ hi / (np.sqrt(len(hi)) if layer.scale_by_dimension else 1.0)
                elif kind == "scaled_dot":
                    e = s @ hi / np.sqrt(len(hi))
                elif kind == "general":
                    e = (
                        s
                        @ w["kernel"]
                        @ hi
                        / (np.sqrt(len(s)) if layer.scale_by_dimension else 1.0)
                    )
                elif kind == "cosine":
                    e = _unit(s) @ _unit(hi)
                elif kind == "location":
                    e = (s @ w["kernel"])[i]
                else:
                    raise ValueError(kind)
                scores[b, t, i] = e
    if kind != "additive" and layer.scale:
        scores = scores * w["score_scale"]
    return scores


def numpy_masked_softmax(scores, mask=None):
    """Softmax over the last axis restricted to mask==True; all-masked rows are 0."""
    if mask is None:
        mask = np.ones(scores.shape[::2], bool)
    mask = np.broadcast_to(mask[:, None, :], scores.shape)
    weights = np.zeros_like(scores)
    for index in np.ndindex(scores.shape[:-1]):
        valid = mask[index]
        if valid.any():
            e = np.exp(scores[index][valid] - scores[index][valid].max())
            weights[index][valid] = e / e.sum()
    return weights


def numpy_hard(scores, mask=None):
    """One-hot of the first highest-scoring unmasked position; all-masked rows are 0."""
    if mask is None:
        mask = np.ones(scores.shape[::2], bool)
    mask = np.broadcast_to(mask[:, None, :], scores.shape)
    weights = np.zeros_like(scores)
    for index in np.ndindex(scores.shape[:-1]):
        valid = np.flatnonzero(mask[index])
        if valid.size:
            weights[index][valid[np.argmax(scores[index][valid])]] = 1.0
    return weights


def numpy_attention(layer, query, values, mask=None, hard=False):
    """Reference `(context, weights)` for a rank-2 or rank-3 query."""
    one_step = query.ndim == 2
    q = query[:, None, :] if one_step else query
    scores = numpy_scores(layer, q, values)
    weights = numpy_hard(scores, mask) if hard else numpy_masked_softmax(scores, mask)
    context = np.einsum("bqt,btd->bqd", weights, values.astype("float64"))
    if one_step:
        return context[:, 0], weights[:, 0]
    return context, weights


def to_numpy(x):
    return ops.convert_to_numpy(ops.cast(x, "float32"))


def assert_matches_numpy(variant, one_step, masked, dq=4, dv=4, seed=0, hard=False):
    """Calls the layer (fresh and with prepared keys) and compares to `numpy_attention`."""
    query, values, mask = random_inputs(seed=seed, dq=dq, dv=dv)
    if one_step:
        query = query[:, 0]
    mask = mask if masked else None
    layer = make_layer(variant, hard=hard)
    layer.build(query.shape, values.shape)
    randomize_weights(layer, seed=seed)
    context, weights = layer(query, values, mask=mask)
    expected_context, expected_weights = numpy_attention(layer, query, values, mask, hard=hard)
    np.testing.assert_allclose(to_numpy(weights), expected_weights, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_numpy(context), expected_context, rtol=1e-5, atol=1e-5)
    # The same call with the keys prepared once gives identical results.
    keys = layer.prepare_keys(values)
    context_k, weights_k = layer(query, values, mask=mask, keys=keys)
    np.testing.assert_array_equal(to_numpy(context_k), to_numpy(context))
    np.testing.assert_array_equal(to_numpy(weights_k), to_numpy(weights))
