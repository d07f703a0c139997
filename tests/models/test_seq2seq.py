"""Seq2Seq: shapes, training loop == decoding steps, save/load, padding, errors."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.models.seq2seq import Seq2Seq

VARIANTS = [
    dict(attention="bahdanau"),
    dict(attention="bahdanau", cell="lstm", tie_embeddings=True),
    dict(attention="luong", score="general", input_feeding=True),
    dict(attention="luong", score="dot", input_feeding=False),
    dict(attention="luong", score="concat", tie_embeddings=True),
    dict(attention="luong", score="scaled_dot"),
    dict(attention="luong", score="cosine"),
    dict(attention="luong", score="location"),
    dict(attention="none"),
    dict(attention="bahdanau", encoder_layers=2, bidirectional=False),
]


def make_model(**kwargs):
    options = dict(
        embedding_dim=8,
        encoder_units=8,
        decoder_units=16,
        max_source_length=12,
    )
    options.update(kwargs)
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
    return "-".join(f"{k}={v}" for k, v in variant.items())


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


@pytest.mark.parametrize("variant", VARIANTS[:3] + VARIANTS[-2:], ids=variant_id)
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
    "variant", [VARIANTS[0], VARIANTS[1], VARIANTS[4], VARIANTS[8]], ids=variant_id
)
def test_keras_save_and_load_reproduce_outputs(tmp_path, variant):
    model = make_model(**variant)
    source, target_in = batch()
    expected = model((source, target_in))
    path = tmp_path / "model.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    assert isinstance(restored, Seq2Seq)
    assert restored.get_config() == model.get_config()
    np.testing.assert_array_equal(restored((source, target_in)), expected)


@pytest.mark.parametrize("variant", VARIANTS[:4] + VARIANTS[-2:-1], ids=variant_id)
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
    model = make_model(attention="luong", score="concat", dropout=0.2, tie_embeddings=True)
    clone = Seq2Seq.from_config(model.get_config())
    assert clone.get_config() == model.get_config()


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


def test_configs_saved_before_deep_output_reload_with_the_tanh_readout():
    """A `.keras` file from before `deep_output` existed has no such key: it reloads with
    the tanh readout it was trained with (weights of the same shapes), new ones with maxout."""
    config = make_model(attention="bahdanau").get_config()
    assert config["deep_output"] == "maxout"
    assert Seq2Seq.from_config(config).deep_output == "maxout"
    del config["deep_output"]
    old = Seq2Seq.from_config(config)
    assert old.deep_output == "tanh"
    old.build()
    assert tuple(old.decoder.readout.kernel.shape)[-1] == old.decoder_units  # not 2x (maxout)


@pytest.mark.parametrize(
    "score, scale", [("scaled_dot", True), ("cosine", True), ("dot", False), ("general", False)]
)
def test_score_scale_defaults_per_score_and_is_saved_resolved(tmp_path, score, scale):
    """`score_scale=None` is the score's default (a learned `g`, starting at 1, for
    scaled_dot; from sqrt(d) for cosine), saved as resolved; `False` gives the paper's
    fixed score, with no weight to learn."""
    model = make_model(attention="luong", score=score)
    model.build()
    assert model.score_scale is scale and model.get_config()["score_scale"] is scale
    layer = model.decoder.attention_layer
    assert layer.scale is scale
    if score == "scaled_dot":
        assert float(layer.score_scale.numpy()) == 1.0  # the paper's score to start with
        fixed = make_model(attention="luong", score=score, score_scale=False)
        fixed.build()
        assert fixed.decoder.attention_layer.score_scale is None
        assert len(fixed.weights) == len(model.weights) - 1
    path = tmp_path / "model.keras"
    model.save(path)
    assert keras.saving.load_model(path).get_config()["score_scale"] is scale


def test_configs_saved_before_score_scale_reload_as_they_were_trained():
    """Before `score_scale`, only cosine learned its scale: an old scaled_dot model (no
    such key) reloads with the fixed score and the weights it has; the key is None for
    Bahdanau and the baseline."""
    for score, scale in (("scaled_dot", False), ("cosine", True), ("dot", False)):
        config = make_model(attention="luong", score=score).get_config()
        del config["score_scale"]
        old = Seq2Seq.from_config(config)
        assert old.score_scale is scale and old.decoder.attention_layer.scale is scale
    config = make_model(attention="bahdanau").get_config()
    assert config["score_scale"] is None
    del config["score_scale"]
    assert Seq2Seq.from_config(config).score_scale is None


def test_library_defaults_are_the_measured_recipe():
    """Luong attention, the cosine score with its learned key strength, no input feeding
    (benchmarks/RESULTS.md, r9 and the variants table): the same in `TrainConfig`,
    `Seq2Seq`, `AttentionDecoder` and `LuongAttention`."""
    import inspect

    from keras_attention.layers import LuongAttention
    from keras_attention.models.attention_decoder import AttentionDecoder
    from keras_attention.training.train_config import TrainConfig

    expected = {"attention": "luong", "score": "cosine", "input_feeding": False}
    config = TrainConfig()
    assert {name: getattr(config, name) for name in expected} == expected
    for cls in (Seq2Seq, AttentionDecoder):
        parameters = inspect.signature(cls.__init__).parameters
        assert {name: parameters[name].default for name in expected} == expected
    layer = LuongAttention()
    assert (layer.score, layer.scale) == ("cosine", True)
    # scaled_dot learns its scale too (r18, benchmarks/RESULTS.md).
    assert LuongAttention(score="scaled_dot").scale is True
    assert config.score_scale is None
    # The measured budget (r8): 8 x 500 steps, cosine decay, inside the 20 minutes.
    assert (config.epochs, config.steps_per_epoch, config.learning_rate_schedule) == (
        8,
        500,
        "cosine",
    )
