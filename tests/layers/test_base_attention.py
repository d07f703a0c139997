"""Behaviour shared by every attention layer (owned by BaseAttention): masking, hard
attention, dropout, Keras masks, serialization, mixed precision, XLA, gradients, errors.

Each test runs over every variant of every score function (see helpers.attention_testing.VARIANTS).
"""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers.attention_testing import (
    SAME_DIM_VARIANTS,
    VARIANTS,
    WEIGHT_FREE_VARIANTS,
    assert_matches_numpy,
    make_layer,
    numpy_attention,
    numpy_hard,
    numpy_masked_softmax,
    random_inputs,
    to_numpy,
)
from keras import ops

from keras_attention.layers import BahdanauAttention, BaseAttention, LuongAttention

ALL = list(VARIANTS)


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(0)


@pytest.fixture(params=["mixed_float16", "mixed_bfloat16"])
def mixed_policy(request):
    """Sets a global mixed precision policy for one test and restores the previous one."""
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(request.param)
    try:
        yield request.param
    finally:
        keras.mixed_precision.set_global_policy(previous)


def test_registered_names():
    for cls in (BaseAttention, BahdanauAttention, LuongAttention):
        assert keras.saving.get_registered_name(cls) == f"keras_attention>{cls.__name__}"


@pytest.mark.parametrize("variant", ALL)
@pytest.mark.parametrize("one_step", [True, False], ids=["one_step", "multi_step"])
def test_hard_attention_matches_numpy(variant, one_step):
    assert_matches_numpy(variant, one_step, masked=True, hard=True)


@pytest.mark.parametrize("variant", ALL)
def test_hard_override_per_call(variant):
    query, values, mask = random_inputs()
    layer = make_layer(variant)
    soft_context, soft_weights = layer(query, values, mask=mask)
    context, weights = layer(query, values, mask=mask, hard=True)
    weights = to_numpy(weights)
    assert set(np.unique(weights)) <= {0.0, 1.0}
    np.testing.assert_array_equal(weights.sum(-1), 1.0)
    # The hard choice is the most probable position of the soft weights.
    np.testing.assert_array_equal(weights.argmax(-1), to_numpy(soft_weights).argmax(-1))
    np.testing.assert_allclose(to_numpy(context), np.einsum("bqt,btd->bqd", weights, values))


@pytest.mark.parametrize("variant", ALL)
@pytest.mark.parametrize("hard", [False, True], ids=["soft", "hard"])
def test_masked_positions_and_fully_masked_rows(variant, hard):
    """Weights are exactly 0 at masked positions, rows sum to 1, and a row with every
    position masked gives zero weights and a zero context (not NaN)."""
    query, values, _ = random_inputs(batch=3)
    mask = np.array([[1, 1, 1, 1, 1], [1, 0, 1, 0, 0], [0, 0, 0, 0, 0]], bool)
    layer = make_layer(variant, hard=hard)
    for q in (query, query[:, 0]):
        context, weights = layer(q, values, mask=mask)
        context, weights = to_numpy(context), to_numpy(weights)
        weights3 = weights if weights.ndim == 3 else weights[:, None]
        assert np.isfinite(context).all() and np.isfinite(weights).all()
        assert (weights3[~np.broadcast_to(mask[:, None], weights3.shape)] == 0).all()
        np.testing.assert_allclose(weights3[:2].sum(-1), 1.0, rtol=1e-6)
        assert (weights3[2] == 0).all() and (context[2] == 0).all()


@pytest.mark.parametrize("variant", ALL)
def test_one_step_equals_a_slice_of_multi_step(variant):
    query, values, mask = random_inputs()
    layer = make_layer(variant)
    context, weights = layer(query, values, mask=mask)
    for t in range(query.shape[1]):
        step_context, step_weights = layer(query[:, t], values, mask=mask)
        np.testing.assert_allclose(to_numpy(step_context), to_numpy(context)[:, t], atol=1e-6)
        np.testing.assert_allclose(to_numpy(step_weights), to_numpy(weights)[:, t], atol=1e-7)


def test_query_mask_zeroes_padded_steps():
    query, values, mask = random_inputs()
    query_mask = np.array([[True, True, False], [True, False, False]])
    layer = make_layer("general")
    context, weights = layer(query, values, mask=mask)
    masked_context, masked_weights = layer(query, values, mask=mask, query_mask=query_mask)
    keep = query_mask[..., None]
    np.testing.assert_array_equal(to_numpy(masked_context), np.where(keep, to_numpy(context), 0))
    np.testing.assert_array_equal(to_numpy(masked_weights), np.where(keep, to_numpy(weights), 0))


def test_dropout_only_in_training():
    query, values, mask = random_inputs()
    layer = make_layer("bahdanau", dropout=0.5, seed=1)
    reference = make_layer("bahdanau")
    reference.build(query.shape, values.shape)
    layer.build(query.shape, values.shape)
    reference.set_weights(layer.get_weights())
    context, weights = layer(query, values, mask=mask)
    expected_context, expected_weights = reference(query, values, mask=mask)
    np.testing.assert_array_equal(to_numpy(weights), to_numpy(expected_weights))
    dropped_context, dropped = layer(query, values, mask=mask, training=True)
    dropped = to_numpy(dropped)
    kept = dropped != 0
    assert 0 < kept[np.broadcast_to(mask[:, None], kept.shape)].mean() < 1
    # Kept weights are rescaled by 1 / (1 - rate); the context uses the dropped weights.
    np.testing.assert_allclose(dropped[kept], 2 * to_numpy(expected_weights)[kept], rtol=1e-6)
    np.testing.assert_allclose(
        to_numpy(dropped_context), np.einsum("bqt,btd->bqd", dropped, values), atol=1e-6
    )


def _embedding_model(variant, query_rank):
    """Functional model: masked embeddings of tokens as values, query from other tokens.
    Returns the model and its layers; the outputs are context, weights and a mask-aware
    average of the context over query steps (rank-3 query only)."""
    tokens = keras.Input((None,), dtype="int32", name="tokens")
    query_tokens = keras.Input((None,), dtype="int32", name="query_tokens")
    value_embedding = keras.layers.Embedding(12, 4, mask_zero=True)
    query_embedding = keras.layers.Embedding(12, 4, mask_zero=True)
    attention = make_layer(variant)
    query = query_embedding(query_tokens)
    if query_rank == 2:
        query = keras.layers.GlobalAveragePooling1D()(query)
    context, weights = attention(query, value_embedding(tokens))
    outputs = [context, weights]
    if query_rank == 3:
        outputs.append(keras.layers.GlobalAveragePooling1D()(context))
    model = keras.Model([query_tokens, tokens], outputs)
    return model, value_embedding, query_embedding, attention


TOKENS = np.array([[3, 4, 5, 0, 0], [1, 2, 3, 4, 5]])
QUERY_TOKENS = np.array([[1, 2, 0], [3, 0, 0]])


@pytest.mark.parametrize("query_rank", [2, 3])
def test_keras_mask_from_embedding_in_functional_model(query_rank):
    model, value_embedding, query_embedding, attention = _embedding_model("bahdanau", query_rank)
    # Output masks: the query's time mask for a rank-3 query, none for a rank-2 query.
    context_mask = getattr(model.outputs[0], "_keras_mask", None)
    weights_mask = getattr(model.outputs[1], "_keras_mask", None)
    assert (context_mask is not None) == (weights_mask is not None) == (query_rank == 3)
    outputs = [to_numpy(x) for x in model([QUERY_TOKENS, TOKENS])]

    # Reference: the same layers called eagerly with explicit masks.
    values = to_numpy(value_embedding(TOKENS))
    query = to_numpy(query_embedding(QUERY_TOKENS))
    query_mask = QUERY_TOKENS != 0
    if query_rank == 2:
        query = (query * query_mask[..., None]).sum(1) / query_mask.sum(1, keepdims=True)
    expected = attention(
        query, values, mask=TOKENS != 0, query_mask=query_mask if query_rank == 3 else None
    )
    np.testing.assert_allclose(outputs[0], to_numpy(expected[0]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outputs[1], to_numpy(expected[1]), rtol=1e-5, atol=1e-7)
    assert (outputs[1][0, ..., 3:] == 0).all()
    if query_rank == 3:
        assert (outputs[0][~query_mask] == 0).all()
        # A downstream mask-aware layer averages the context over real query steps only.
        mean = outputs[0].sum(1) / query_mask.sum(1, keepdims=True)
        np.testing.assert_allclose(outputs[2], mean, rtol=1e-5, atol=1e-6)

    # Pad invariance: the embedding of the padding token does not matter.
    table = value_embedding.get_weights()[0]
    table[0] = 100.0
    value_embedding.set_weights([table])
    again = [to_numpy(x) for x in model([QUERY_TOKENS, TOKENS])]
    np.testing.assert_allclose(again[0], outputs[0], rtol=1e-5, atol=1e-6)


def test_keras_mask_carried_by_eager_values():
    """Eagerly, a mask attached by an Embedding is used when `mask` is omitted."""
    embedding = keras.layers.Embedding(12, 4, mask_zero=True)
    values = embedding(TOKENS)
    query = np.random.default_rng(0).normal(size=(2, 4)).astype("float32")
    layer = make_layer("dot")
    implicit = layer(query, values)
    explicit = layer(query, to_numpy(values), mask=TOKENS != 0)
    unmasked = layer(query, to_numpy(values))
    np.testing.assert_array_equal(to_numpy(implicit[1]), to_numpy(explicit[1]))
    assert (to_numpy(unmasked[1])[0, 3:] > 0).all()


@pytest.mark.parametrize("variant", ALL)
def test_config_round_trip(variant):
    query, values, mask = random_inputs()
    layer = make_layer(variant, dropout=0.1, seed=2, name="attention")
    context, _ = layer(query, values, mask=mask)
    serialized = keras.layers.serialize(layer)
    assert serialized["registered_name"] == f"keras_attention>{type(layer).__name__}"
    clone = keras.layers.deserialize(serialized)
    assert type(clone) is type(layer) and clone.get_config() == layer.get_config()
    assert clone.built  # from the build config in the serialized form
    clone.set_weights(layer.get_weights())
    clone_context, _ = clone(query, values, mask=mask)
    np.testing.assert_array_equal(to_numpy(clone_context), to_numpy(context))


@pytest.mark.parametrize("variant", ALL)
def test_functional_model_keras_file_round_trip(variant, tmp_path):
    dq = 4 if variant in SAME_DIM_VARIANTS else 3
    query_in = keras.Input((dq,))
    tokens = keras.Input((None,), dtype="int32")
    values = keras.layers.Embedding(12, 4, mask_zero=True)(tokens)
    context, weights = make_layer(variant)(query_in, values)
    model = keras.Model([query_in, tokens], [keras.layers.Dense(2)(context), weights])
    query = np.random.default_rng(1).normal(size=(2, dq)).astype("float32")
    expected = model([query, TOKENS])
    path = os.path.join(tmp_path, "model.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    for got, want in zip(loaded([query, TOKENS]), expected, strict=True):
        np.testing.assert_array_equal(to_numpy(got), to_numpy(want))


@keras.saving.register_keras_serializable(package="keras_attention_tests")
class AttentionClassifier(keras.Model):
    """Subclassed model: embeds tokens, queries them with a learned projection of their
    mean, classifies the context. The attention layer is a constructor argument."""

    def __init__(self, attention, **kwargs):
        super().__init__(**kwargs)
        if isinstance(attention, dict):
            attention = keras.saving.deserialize_keras_object(attention)
        self.attention = attention
        self.embedding = keras.layers.Embedding(12, 4, mask_zero=True)
        self.query_dense = keras.layers.Dense(4)
        self.head = keras.layers.Dense(2)

    def call(self, tokens):
        values = self.embedding(tokens)
        query = self.query_dense(ops.mean(values, axis=1))
        context, _ = self.attention(query, values)  # mask from the embedding
        return self.head(context)

    def get_config(self):
        config = super().get_config()
        config["attention"] = keras.saving.serialize_keras_object(self.attention)
        return config


@pytest.mark.parametrize("variant", ["bahdanau_normalized", "concat", "general", "location"])
def test_subclassed_model_keras_file_round_trip(variant, tmp_path):
    model = AttentionClassifier(make_layer(variant))
    expected = to_numpy(model(TOKENS))
    path = os.path.join(tmp_path, "model.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded.attention, type(model.attention))
    assert loaded.attention.get_config() == model.attention.get_config()
    np.testing.assert_array_equal(to_numpy(loaded(TOKENS)), expected)


@pytest.mark.parametrize("variant", ALL)
def test_mixed_precision(variant, mixed_policy):
    """Finite context in the compute dtype; weights are the float32 softmax, so the rows sum
    to 1 within float32 rounding, masked positions are exactly 0, fully masked rows are 0."""
    query, values, _ = random_inputs(batch=3)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [0, 0, 0, 0, 0]], bool)
    layer = make_layer(variant)
    assert layer.compute_dtype != "float32"
    layer.build(query.shape, values.shape)
    # Large inputs (scores in the hundreds) stay finite and masked exactly.
    keys = layer.prepare_keys(8 * values)
    context, weights = layer(8 * query, 8 * values, mask=mask, keys=keys)
    dtype = keras.backend.standardize_dtype
    assert dtype(context.dtype) == dtype(keys.dtype) == layer.compute_dtype
    assert dtype(weights.dtype) == "float32"
    context, weights = to_numpy(context), to_numpy(weights)
    assert np.isfinite(context).all() and np.isfinite(weights).all()
    np.testing.assert_allclose(weights[:2].sum(-1), 1.0, atol=1e-5)
    assert (weights[1, :, 2:] == 0).all() and (weights[2] == 0).all() and (context[2] == 0).all()
    # Moderate inputs: close to the float64 reference with the same variables.
    _, weights = layer(query, values, mask=mask)
    _, expected_weights = numpy_attention(layer, query, values, mask)
    np.testing.assert_allclose(to_numpy(weights), expected_weights, atol=0.03)


@pytest.mark.tensorflow_only
@pytest.mark.parametrize("variant", ALL)
def test_while_loop_with_prepared_keys_under_xla(variant):
    """A decoder-style tf.while_loop compiled with XLA: keys prepared once outside the loop,
    the query updated from the context at every step; matches the same loop run eagerly."""
    query, values, mask = random_inputs()
    layer = make_layer(variant)
    layer(query, values)  # build outside the compiled function
    steps = 3

    def decode(query, values, mask):
        keys = layer.prepare_keys(values)

        def body(step, state, total):
            context, weights = layer(state, values, mask=mask, keys=keys)
            return step + 1, ops.tanh(state + context), total + weights

        _, state, total = tf.while_loop(
            lambda step, *_: step < steps,
            body,
            (tf.constant(0), query[:, 0], tf.zeros(mask.shape)),
        )
        return state, total

    compiled = tf.function(decode, jit_compile=True)(query, values, mask)
    eager = decode(query, values, mask)
    for got, want in zip(compiled, eager, strict=True):
        np.testing.assert_allclose(to_numpy(got), to_numpy(want), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(to_numpy(eager[1]).sum(-1), steps, rtol=1e-5)


@pytest.mark.tensorflow_only
@pytest.mark.parametrize("variant", ALL)
def test_tf_function_with_unknown_lengths(variant):
    """Traced once with unknown batch size and lengths (as in an export), then run on
    values of several lengths."""
    query, values, mask = random_inputs()
    layer = make_layer(variant)
    layer(query, values)
    step = tf.function(
        lambda query, values, mask: layer(
            query, values, mask=mask, keys=layer.prepare_keys(values)
        ),
        input_signature=[
            tf.TensorSpec([None, 4]),
            tf.TensorSpec([None, None, 4]),
            tf.TensorSpec([None, None], tf.bool),
        ],
    )
    for tv in (5, 2):
        got = step(query[:, 0], values[:, :tv], mask[:, :tv])
        want = layer(query[:, 0], values[:, :tv], mask=mask[:, :tv])
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(to_numpy(g), to_numpy(w), rtol=1e-5, atol=1e-6)


@pytest.mark.tensorflow_only
@pytest.mark.parametrize("variant", ALL)
def test_gradients_reach_every_weight(variant):
    dq = 4 if variant in SAME_DIM_VARIANTS else 3
    query, values, mask = random_inputs(dq=dq)
    # Weight-free scores get their learned scale so there is a weight to reach.
    weight_free = variant in WEIGHT_FREE_VARIANTS
    layer = make_layer(variant, scale=True) if weight_free else make_layer(variant)
    layer.build(query.shape, values.shape)
    rng = np.random.default_rng(5)
    r_context = rng.normal(size=(2, 3, 4)).astype("float32")
    r_weights = rng.normal(size=(2, 3, 5)).astype("float32")
    query, values = tf.constant(query), tf.constant(values)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([query, values])
        context, weights = layer(query, values, mask=mask)
        loss = ops.sum(context * r_context) + ops.sum(weights * r_weights)
    assert layer.trainable_weights
    for variable in [*layer.trainable_weights, query, values]:
        gradient = tape.gradient(loss, variable)
        assert gradient is not None, variable
        assert np.abs(to_numpy(gradient)).max() > 0, variable


@pytest.mark.parametrize("one_step", [True, False], ids=["one_step", "multi_step"])
def test_compute_output_shape_and_symbolic_call(one_step):
    layer = make_layer("concat")
    query_shape = (None, 3) if one_step else (None, 6, 3)
    values_shape = (None, 5, 4)
    expected = ((None, 4), (None, 5)) if one_step else ((None, 6, 4), (None, 6, 5))
    assert layer.compute_output_shape(query_shape, values_shape) == expected
    context, weights = layer(keras.KerasTensor(query_shape), keras.KerasTensor(values_shape))
    assert (tuple(context.shape), tuple(weights.shape)) == expected
    query, values, _ = random_inputs(dq=3)
    query = query[:, 0] if one_step else np.concatenate([query, query], 1)
    context, weights = layer(query, values)
    assert (tuple(context.shape), tuple(weights.shape)) == tuple((2, *s[1:]) for s in expected)


@pytest.mark.parametrize(
    "query_shape, values_shape, message",
    [
        ((2, 3, 1, 4), (2, 5, 4), r"query.shape=\(2, 3, 1, 4\)"),
        ((2, 4), (2, 4), r"values.shape=\(2, 4\)"),
        ((2, 4), (2, 5, 2, 4), r"values.shape=\(2, 5, 2, 4\)"),
        ((3, 4), (2, 5, 4), r"query.shape=\(3, 4\), values.shape=\(2, 5, 4\)"),
    ],
)
def test_rank_and_batch_errors(query_shape, values_shape, message):
    query = np.zeros(query_shape, "float32")
    with pytest.raises(ValueError, match=message):
        make_layer("general")(query, np.zeros(values_shape, "float32"))


def test_call_errors_after_build():
    query, values, mask = random_inputs(dq=3)
    layer = make_layer("bahdanau")
    layer(query, values, mask=mask)
    with pytest.raises(ValueError, match=r"mask.shape=\(2, 4\)"):
        layer(query, values, mask=mask[:, :4])
    with pytest.raises(ValueError, match=r"mask.shape=\(5,\)"):
        layer(query, values, mask=mask[0])
    with pytest.raises(ValueError, match=r"query_mask.shape=\(2, 5\)"):
        layer(query, values, query_mask=mask)
    with pytest.raises(ValueError, match=r"keys.shape=\(2, 4, 5\)"):
        layer(query, values, keys=layer.prepare_keys(values[:, :4]))
    with pytest.raises(ValueError, match=r"dimension 3. Received: query.shape=\(2, 3, 4\)"):
        layer(np.zeros((2, 3, 4), "float32"), values)
    with pytest.raises(ValueError, match=r"dimension 4. Received: values.shape=\(2, 5, 6\)"):
        layer.prepare_keys(np.zeros((2, 5, 6), "float32"))


@keras.saving.register_keras_serializable(package="keras_attention_tests")
class NegativeDistanceAttention(BaseAttention):
    """A score defined by `_score` alone: score(s, h) = -||s - h||^2."""

    def _score(self, query, keys):
        diff = ops.expand_dims(query, 2) - ops.expand_dims(keys, 1)
        return -ops.sum(diff * diff, axis=-1)


@pytest.mark.parametrize("hard", [False, True], ids=["soft", "hard"])
def test_subclass_only_defines_the_score(hard):
    """Masking, fully masked rows, hard attention and one-step queries come from the base."""
    query, values, _ = random_inputs(batch=3)
    mask = np.array([[1, 1, 1, 1, 1], [1, 0, 1, 0, 0], [0, 0, 0, 0, 0]], bool)
    scores = -((query[:, :, None, :] - values[:, None, :, :]).astype("float64") ** 2).sum(-1)
    expected = numpy_hard(scores, mask) if hard else numpy_masked_softmax(scores, mask)
    layer = NegativeDistanceAttention(hard=hard)
    _, weights = layer(query, values, mask=mask)
    np.testing.assert_allclose(to_numpy(weights), expected, rtol=1e-5, atol=1e-7)
    _, step_weights = layer(query[:, 1], values, mask=mask)
    np.testing.assert_allclose(to_numpy(step_weights), expected[:, 1], rtol=1e-5, atol=1e-7)


def test_compute_mask():
    layer = make_layer("general")
    assert layer.compute_mask(keras.KerasTensor((None, 4))) is None
    query = keras.KerasTensor((None, 3, 4))
    assert layer.compute_mask(query) is None
    query._keras_mask = keras.KerasTensor((None, 3), dtype="bool")
    assert layer.compute_mask(query) == (query._keras_mask, query._keras_mask)


@pytest.mark.tensorflow_only
def test_decode_loop_exports_and_runs_on_the_session_path(tmp_path):
    """A tf.while_loop using prepare_keys, exported with keras.export.ExportArchive, runs
    through a TF1 Session (the path TF Serving takes) with the eager results."""
    query, values, mask = random_inputs()
    query = query[:, 0]
    additive = make_layer("bahdanau_normalized")
    location = make_layer("location")
    additive(query, values)
    location(query, values)

    def decode(query, values, mask):
        keys = additive.prepare_keys(values)

        def body(step, state, total):
            context, weights = additive(state, values, mask=mask, keys=keys)
            hard_context, hard_weights = location(state, values, mask=mask, hard=True)
            return (
                step + 1,
                ops.tanh(state + context + hard_context),
                total + weights + hard_weights,
            )

        initial = (tf.constant(0), query, tf.zeros(tf.shape(mask)))
        return tf.while_loop(lambda step, *_: step < 3, body, initial)[1:]

    archive = keras.export.ExportArchive()
    archive.track(additive)
    archive.track(location)
    archive.add_endpoint(
        "serve",
        tf.function(decode),
        input_signature=[
            tf.TensorSpec([None, 4], name="query"),
            tf.TensorSpec([None, None, 4], name="values"),
            tf.TensorSpec([None, None], tf.bool, name="mask"),
        ],
    )
    path = os.path.join(tmp_path, "1")
    archive.write_out(path, verbose=False)
    expected = decode(query, values, mask)
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], path)
        signature = meta_graph.signature_def["serve"]
        feeds = {signature.inputs["query"].name: query, signature.inputs["values"].name: values}
        feeds[signature.inputs["mask"].name] = mask
        fetches = [signature.outputs[name].name for name in sorted(signature.outputs)]
        got = session.run(fetches, feeds)
    for g, want in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, to_numpy(want), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("variant", ALL)
def test_one_fit_step_updates_every_weight(variant):
    """On any backend: one `fit` step of a model around the layer changes every weight of
    the layer, so gradients reach them all (the backend-neutral twin of the tape test)."""
    dq = 4 if variant in SAME_DIM_VARIANTS else 3
    query, values, _ = random_inputs(dq=dq)
    weight_free = variant in WEIGHT_FREE_VARIANTS
    layer = make_layer(variant, scale=True) if weight_free else make_layer(variant)
    query_in = keras.Input(query.shape[1:])
    values_in = keras.Input(values.shape[1:])
    context, weights = layer(query_in, values_in)
    output = keras.layers.Concatenate()([context, weights])
    model = keras.Model([query_in, values_in], output)
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    before = [to_numpy(w) for w in layer.trainable_weights]
    assert before
    target = np.random.default_rng(3).normal(size=(2, 3, 9)).astype("float32")
    model.fit([query, values], target, epochs=1, batch_size=2, verbose=0)
    for old, new in zip(before, layer.trainable_weights, strict=True):
        assert not np.array_equal(old, to_numpy(new)), new.name
