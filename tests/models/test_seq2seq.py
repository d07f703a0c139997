"""Seq2Seq: shapes, training loop == decoding steps, save/load, padding, errors."""

import functools
import json
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.layers import BahdanauAttention, LuongAttention
from keras_attention.models import BahdanauDecoder, LuongDecoder
from keras_attention.models.seq2seq import Seq2Seq

SAVED_0_1 = Path(__file__).parent / "saved_0_1"


def luong(score, **kwargs):
    """A factory of `LuongAttention(score=score, **kwargs)` (each model needs its own)."""
    return functools.partial(LuongAttention, score=score, **kwargs)


VARIANTS = [
    dict(attention="bahdanau"),
    dict(attention="bahdanau", cell="lstm", tie_embeddings=True),
    dict(attention=luong("general"), input_feeding=True),
    dict(attention=luong("dot")),
    dict(attention=luong("concat"), tie_embeddings=True),
    dict(attention=luong("scaled_dot", scale=True)),
    dict(attention="luong"),
    dict(attention=luong("location", max_length=12)),
    dict(attention="none"),
    dict(attention="bahdanau", encoder_layers=2, bidirectional=False),
    # Any attention layer with either decoder family.
    dict(attention="bahdanau", decoder="luong"),
    dict(attention=luong("general", scale_by_dimension=True), decoder="bahdanau"),
    # The conditional GRU's query.
    dict(attention="bahdanau", conditional=True, tie_embeddings=True),
]


def make_model(**kwargs):
    options = dict(embedding_dim=8, encoder_units=8, decoder_units=16)
    options.update(kwargs)
    if isinstance(options.get("attention"), functools.partial):
        options["attention"] = options["attention"]()
    return Seq2Seq(30, 40, **options)


def batch(seed=0):
    rng = np.random.default_rng(seed)
    source = rng.integers(4, 30, (3, 6)).astype("int32")
    source[1, 4:] = 0
    source[2, 2:] = 0
    target_in = rng.integers(4, 40, (3, 5)).astype("int32")
    target_in[:, 0] = 2
    target_in[2, 3:] = 0
    return source, target_in


def variant_id(variant):
    def name(value):
        if isinstance(value, functools.partial):
            return ",".join(f"{k}={v}" for k, v in value.keywords.items())
        return str(value)

    return "-".join(f"{k}={name(v)}" for k, v in variant.items())


@pytest.mark.parametrize("variant", VARIANTS, ids=variant_id)
def test_teacher_forcing_equals_step_by_step_decoding(variant):
    """The training loop and the decoding step are one recurrence: same logits."""
    model = make_model(**variant)
    source, target_in = batch()
    logits, attention = model.call_with_attention((source, target_in))
    assert logits.shape == (3, 5, 40) and logits.dtype == tf.float32
    assert attention.shape == (3, 5, 6)

    state = model.initial_decode_state(source)
    for t in range(target_in.shape[1]):
        step_logits, state, step_attention = model.next_logits(t, target_in[:, t], state)
        np.testing.assert_allclose(step_logits, logits[:, t], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(step_attention, attention[:, t], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "variant",
    [
        dict(attention="bahdanau"),
        dict(attention="bahdanau", cell="lstm"),
        dict(attention="luong", input_feeding=True, cell="lstm"),
        dict(attention="luong"),
        dict(attention="none"),
        dict(attention="bahdanau", decoder="luong", input_feeding=True),
        dict(attention="bahdanau", conditional=True),
    ],
    ids=variant_id,
)
@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_decoder_cell_step_equals_the_keras_cell(variant, policy):
    """The decoder steps Keras' GRUCell/LSTMCell weights itself (to project the
    embeddings before the loop): the same outputs and states as the cell's call."""
    model = make_model(dtype=policy, **variant)
    source, target_in = batch()
    model((source, target_in))  # builds everything
    decoder = model.decoder
    state = model.initial_decode_state(source)
    rng = np.random.default_rng(1)
    embedded = keras.ops.cast(rng.normal(size=(3, 8)), decoder.compute_dtype)
    extra_dim = decoder._extra_input_dim(state)
    extra = keras.ops.cast(rng.normal(size=(3, extra_dim)), decoder.compute_dtype)
    rnn_state = [
        keras.ops.cast(rng.uniform(-1, 1, size=(3, 16)), decoder.compute_dtype)
        for _ in state["rnn"]
    ]
    cell_input = keras.ops.concatenate([embedded, extra], -1) if extra_dim else embedded
    expected, expected_state = decoder.rnn_cell(cell_input, rnn_state)
    expected_state = expected_state if isinstance(expected_state, list) else [expected_state]
    tolerance = 1e-6 if policy == "float32" else 2e-2
    for split in (True, False):  # training (input projection split) and decoding
        weights = decoder._cell_weights(state, split=split)
        first = decoder._input_projection(embedded, weights) if split else embedded
        output, new_state = decoder._cell(first, extra if extra_dim else None, rnn_state, weights)
        np.testing.assert_allclose(
            keras.ops.cast(output, "float32"),
            keras.ops.cast(expected, "float32"),
            atol=tolerance,
        )
        for got, want in zip(new_state, expected_state, strict=True):
            np.testing.assert_allclose(
                keras.ops.cast(got, "float32"), keras.ops.cast(want, "float32"), atol=tolerance
            )


@pytest.mark.parametrize("variant", VARIANTS[:3] + VARIANTS[-4:], ids=variant_id)
def test_attention_rows_sum_to_one_and_skip_padding(variant):
    model = make_model(**variant)
    source, target_in = batch()
    _, attention = model.call_with_attention((source, target_in))
    attention = attention.numpy()
    if variant["attention"] == "none":
        assert np.all(attention == 0)
        return
    np.testing.assert_allclose(attention.sum(-1), 1.0, rtol=1e-5)
    assert np.all(attention[1, :, 4:] == 0) and np.all(attention[2, :, 2:] == 0)


@pytest.mark.parametrize(
    "variant",
    [VARIANTS[i] for i in (0, 1, 4, 8, 10, 11, 12)],
    ids=variant_id,
)
def test_keras_save_and_load_reproduce_outputs(tmp_path, variant):
    model = make_model(**variant)
    source, target_in = batch()
    expected = model((source, target_in))
    path = tmp_path / "model.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    assert isinstance(restored, Seq2Seq)
    # (As JSON: the attention's build shapes come back as lists.)
    assert json.dumps(restored.get_config(), sort_keys=True) == json.dumps(
        model.get_config(), sort_keys=True
    )
    np.testing.assert_array_equal(restored((source, target_in)), expected)


XLA_VARIANTS = VARIANTS[:4] + VARIANTS[-3:]


@pytest.mark.parametrize(
    "variant",
    # One Luong and one Bahdanau decoder in the quick tier; the others with the slow tests.
    [
        pytest.param(v, marks=() if v in (XLA_VARIANTS[0], XLA_VARIANTS[-1]) else pytest.mark.slow)
        for v in XLA_VARIANTS
    ],
    ids=variant_id,
)
def test_xla_compiled_training_matches_the_graph_run(variant):
    """`jit_compile=True` (TrainConfig's `--jit-compile`) compiles every decoder's training
    step, the attention in the loop or after it: two steps give the losses of the same
    two steps without XLA (the second one checks the first update, i.e. the gradients)."""
    from keras_attention.training import MaskedSparseCategoricalCrossentropy

    source, target_in = batch()
    target_out = np.roll(target_in, -1, axis=1)
    losses = {}
    for jit in (False, True):
        keras.utils.set_random_seed(0)
        model = make_model(**variant)
        model.compile(
            optimizer=keras.optimizers.SGD(0.5),
            loss=MaskedSparseCategoricalCrossentropy(),
            jit_compile=jit,
        )
        losses[jit] = [model.train_on_batch((source, target_in), target_out) for _ in range(2)]
    np.testing.assert_allclose(losses[True], losses[False], rtol=1e-4)
    assert losses[False][1] < losses[False][0]


def test_config_round_trip():
    model = make_model(attention=luong("concat"), dropout=0.2, tie_embeddings=True)
    config = model.get_config()
    assert config["attention"]["class_name"] == "LuongAttention"
    assert config["attention"]["config"]["score"] == "concat"
    assert config["decoder"] == "luong"
    clone = Seq2Seq.from_config(config)
    assert clone.get_config() == config
    assert isinstance(clone.decoder.attention_layer, LuongAttention)


def test_padding_does_not_change_outputs():
    """Extra padding columns on the source leave logits and attention unchanged."""
    model = make_model(attention="bahdanau")
    source, target_in = batch()
    logits, attention = model.call_with_attention((source, target_in))
    padded = np.pad(source, [[0, 0], [0, 3]])
    padded_logits, padded_attention = model.call_with_attention((padded, target_in))
    np.testing.assert_allclose(padded_logits, logits, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(padded_attention[:, :, :6], attention, rtol=1e-5, atol=1e-6)
    assert np.all(padded_attention.numpy()[:, :, 6:] == 0)


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_gives_finite_float32_logits(policy):
    model = make_model(attention="luong", tie_embeddings=True, dtype=policy)
    source, target_in = batch()
    logits, attention = model.call_with_attention((source, target_in))
    assert logits.dtype == tf.float32 and attention.dtype == tf.float32
    assert np.all(np.isfinite(logits)) and np.all(np.isfinite(attention))


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_computes_in_the_low_precision(policy):
    """Every matmul of a mixed-precision model runs in its compute dtype, the
    vocabulary projection included (a float32 dropout layer once cast the
    embeddings and the decoder outputs back to float32)."""
    model = make_model(attention="luong", tie_embeddings=True, dropout=0.1, dtype=policy)
    source, target_in = batch()
    model((source, target_in))
    graph = (
        tf.function(lambda s, t: model((s, t), training=True))
        .get_concrete_function(tf.constant(source), tf.constant(target_in))
        .graph
    )
    matmuls = [op for op in graph.get_operations() if op.type in ("MatMul", "BatchMatMulV2")]
    compute = model.compute_dtype
    assert matmuls and all(op.outputs[0].dtype == compute for op in matmuls), [
        (op.name, op.outputs[0].dtype.name) for op in matmuls
    ]


def test_gradients_reach_every_weight():
    model = make_model(attention="bahdanau", tie_embeddings=True)
    source, target_in = batch()
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model((source, target_in), training=True) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    missing = [v.path for v, g in zip(model.trainable_variables, grads, strict=True) if g is None]
    assert not missing


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(attention="transformer"), "attention"),
        (dict(decoder="transformer"), "decoder"),
        (dict(deep_output="linear", attention="bahdanau"), "deep_output"),
        (dict(cell="rnn"), "cell"),
        (dict(embedding_dim=0), "embedding_dim"),
        (dict(dropout=1.5), "dropout"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_model(**kwargs)


def test_bad_inputs_raise_value_error():
    model = make_model()
    source, target_in = batch()
    with pytest.raises(ValueError, match="source_ids"):
        model((source[0], target_in))
    with pytest.raises(ValueError, match="source_ids, target_in"):
        model(source)


@pytest.mark.parametrize("path", sorted(SAVED_0_1.glob("*.keras")), ids=lambda p: p.stem)
def test_models_saved_by_0_1_reload_with_the_outputs_they_had(path):
    """`.keras` files of the 0.1.0 format (attention settings as flat arguments, see
    saved_0_1/README.md) load into today's classes with their weights and compute the
    logits and attention they computed when saved."""
    saved = np.load(path.with_suffix(".npz"))
    model = keras.saving.load_model(path)
    logits, attention = model.call_with_attention((saved["source"], saved["target_in"]))
    np.testing.assert_allclose(logits, saved["logits"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(attention, saved["attention"], rtol=1e-5, atol=1e-6)
    # And they save again in today's format.
    assert "decoder" in model.get_config() and "score" not in model.get_config()


def test_decoder_family_defaults_from_the_attention_layer():
    assert isinstance(make_model(attention="bahdanau").decoder, BahdanauDecoder)
    assert isinstance(make_model(attention="none").decoder, BahdanauDecoder)
    assert isinstance(make_model(attention=None).decoder, BahdanauDecoder)
    assert isinstance(make_model(attention="luong").decoder, LuongDecoder)
    assert isinstance(make_model(attention=luong("general")).decoder, LuongDecoder)
    assert isinstance(make_model(attention="bahdanau", decoder="luong").decoder, LuongDecoder)
    assert make_model(attention=None).decoder.attention_layer is None


def test_shortcuts_are_the_recipes_layers():
    """`"luong"` is the cosine score with its learned key strength (the recipe), whose
    `g` starts at sqrt(d); `"bahdanau"` the additive score with `decoder_units` units."""
    model = make_model(attention="luong", dtype="mixed_bfloat16")
    model.build()
    layer = model.decoder.attention_layer
    assert (layer.score, layer.scale, layer.scale_by_dimension) == ("cosine", True, False)
    assert layer.dtype_policy.name == "mixed_bfloat16"
    np.testing.assert_allclose(float(layer.score_scale.numpy()), 16**0.5)
    bahdanau = make_model(attention="bahdanau").decoder.attention_layer
    assert isinstance(bahdanau, BahdanauAttention) and bahdanau.units == 16


def test_luong_decoder_with_bahdanau_attention_is_the_concat_model():
    """The Luong decoder with Bahdanau's additive score equals the Luong decoder with
    LuongAttention(score="concat") given the same weights: the paper's concat model."""
    source, target_in = batch()
    additive = make_model(attention=BahdanauAttention(6), decoder="luong")
    concat = make_model(attention=LuongAttention(score="concat", units=6))
    for model in (additive, concat):
        model.build()
    rng = np.random.default_rng(3)
    for a, c in zip(additive.weights, concat.weights, strict=True):
        assert a.path.split("/")[-1] == c.path.split("/")[-1] and a.shape == c.shape
        value = rng.normal(scale=0.5, size=a.shape).astype("float32")
        a.assign(value)
        c.assign(value)
    for got, want in zip(
        additive.call_with_attention((source, target_in)),
        concat.call_with_attention((source, target_in)),
        strict=True,
    ):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_input_feeding_needs_the_luong_decoder():
    with pytest.raises(ValueError, match="input_feeding=True, decoder='bahdanau'"):
        make_model(attention="bahdanau", input_feeding=True)
    with pytest.raises(ValueError, match="Received: attention=None"):
        make_model(attention=None, decoder="luong")
    with pytest.raises(ValueError, match="conditional=True, decoder='luong'"):
        make_model(attention="luong", conditional=True)
    with pytest.raises(ValueError, match="cell='lstm'"):
        make_model(attention="bahdanau", conditional=True, cell="lstm")


def test_library_defaults_are_the_measured_recipe():
    """Luong attention, the cosine score with its learned key strength, no input feeding:
    the same in `TrainConfig` (resolved into config.json) and in `Seq2Seq`'s shortcut;
    the layer itself computes the plain equation unless asked."""
    import inspect

    from keras_attention.runs.train_config import TrainConfig

    config = TrainConfig()
    assert (config.attention, config.score, config.input_feeding) == ("luong", "cosine", False)
    assert (config.score_scale, config.scale_by_dimension) == (True, False)
    assert TrainConfig(score="general", decoder_units=256).scale_by_dimension is True
    assert TrainConfig(score="scaled_dot").score_scale is True
    parameters = inspect.signature(Seq2Seq.__init__).parameters
    assert (parameters["attention"].default, parameters["input_feeding"].default) == (
        "luong",
        False,
    )
    layer = LuongAttention()
    assert (layer.score, layer.scale, layer.scale_by_dimension) == ("cosine", False, False)
    # The budget: at most 16 x 500 steps, planned to fit the 20 minutes, cosine decay.
    assert (config.epochs, config.maximum_epochs, config.steps_per_epoch) == ("auto", 16, 500)
    assert (config.learning_rate_schedule, config.time_budget_minutes) == ("cosine", 20.0)
