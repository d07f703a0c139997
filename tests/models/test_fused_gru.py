"""The encoder's GRU (`fused_gru.gru_sequence`) against Keras' own GRU layers.

The reference is the layer the encoder holds, called as Keras calls it
(`Bidirectional(GRU)(x, mask=mask)`): outputs, final states and the gradients
of every weight and of the inputs must agree.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.models.encoder import Encoder
from keras_attention.models.fused_gru import gru_layer_weights


def source_batch(seed=0):
    rng = np.random.default_rng(seed)
    source = rng.integers(1, 30, (4, 7)).astype("int32")
    source[1, 5:] = 0
    source[2, 1:] = 0
    source[3, 3:] = 0
    return tf.constant(source)


def keras_encoder_call(encoder, source_ids):
    """`Encoder.call` as it ran before: Keras' layers do the recurrence. (A
    unidirectional Keras GRU repeats the last output on padding, Bidirectional
    returns zeros there, as the encoder now always does.)"""
    mask = keras.ops.not_equal(source_ids, 0)
    x = encoder.embedding(source_ids)
    for rnn in encoder.rnns:
        outputs = rnn(x, mask=mask)
        x = outputs[0] * keras.ops.cast(mask[..., None], outputs[0].dtype)
        states = outputs[1:]
    return x, keras.ops.concatenate(list(states), axis=-1)


def loss_and_gradients(call, encoder, source_ids, seed=1):
    """A loss that weighs every output and summary unit differently, its value and
    gradients with respect to the encoder's weights."""
    with tf.GradientTape() as tape:
        annotations, summary = call(encoder, source_ids)
        rng = np.random.default_rng(seed)
        w_a = tf.constant(rng.normal(size=annotations.shape[1:]), tf.float32)
        w_s = tf.constant(rng.normal(size=summary.shape[1:]), tf.float32)
        loss = tf.reduce_sum(tf.cast(annotations, tf.float32) * w_a) + tf.reduce_sum(
            tf.cast(summary, tf.float32) * w_s
        )
    variables = encoder.trainable_variables
    return (annotations, summary), tape.gradient(loss, variables), variables


ENCODERS = [
    dict(bidirectional=True, num_layers=1),
    dict(bidirectional=False, num_layers=1),
    dict(bidirectional=True, num_layers=2),
]


@pytest.mark.parametrize(
    "options", ENCODERS, ids=lambda o: f"bi={o['bidirectional']}-layers={o['num_layers']}"
)
def test_encoder_gru_equals_keras_gru_with_gradients(options):
    """In training the encoder runs `gru_sequence` (its written-out backward pass);
    in inference Keras' layers: both equal Keras' GRU, zero on padding."""
    keras.utils.set_random_seed(0)
    encoder = Encoder(30, embedding_dim=6, units=5, **options)
    source_ids = source_batch()
    (annotations, summary), grads, variables = loss_and_gradients(
        lambda e, s: e(s, training=True), encoder, source_ids
    )
    inference_annotations, inference_summary = encoder(source_ids, training=False)
    np.testing.assert_allclose(inference_annotations, annotations, atol=1e-6)
    np.testing.assert_allclose(inference_summary, summary, atol=1e-6)
    (ref_annotations, ref_summary), ref_grads, _ = loss_and_gradients(
        keras_encoder_call, encoder, source_ids
    )
    np.testing.assert_allclose(annotations, ref_annotations, atol=1e-6)
    np.testing.assert_allclose(summary, ref_summary, atol=1e-6)
    # Masked steps give zero annotations, as Keras' Bidirectional returns them.
    assert np.all(annotations.numpy()[2, 1:] == 0)
    assert len(grads) == len(variables) == len(ref_grads)
    for variable, grad, ref_grad in zip(variables, grads, ref_grads, strict=True):
        np.testing.assert_allclose(
            tf.convert_to_tensor(grad),
            tf.convert_to_tensor(ref_grad),
            atol=1e-5,
            err_msg=variable.path,
        )


def test_encoder_gru_gradients_under_xla_and_in_bfloat16():
    keras.utils.set_random_seed(0)
    encoder = Encoder(30, embedding_dim=6, units=5)
    source_ids = source_batch()
    _, ref_grads, _ = loss_and_gradients(keras_encoder_call, encoder, source_ids)

    @tf.function(jit_compile=True)
    def xla_gradients(source_ids):
        return loss_and_gradients(lambda e, s: e(s, training=True), encoder, source_ids)[1]

    for grad, ref_grad in zip(xla_gradients(source_ids), ref_grads, strict=True):
        np.testing.assert_allclose(
            tf.convert_to_tensor(grad), tf.convert_to_tensor(ref_grad), atol=1e-5
        )

    mixed = Encoder(30, embedding_dim=6, units=5, dtype="mixed_bfloat16")
    mixed(source_ids)
    mixed.set_weights(encoder.get_weights())
    (annotations, _), grads, _ = loss_and_gradients(
        lambda e, s: e(s, training=True), mixed, source_ids
    )
    (ref_annotations, _), mixed_ref_grads, _ = loss_and_gradients(
        keras_encoder_call, mixed, source_ids
    )
    assert annotations.dtype == tf.bfloat16
    np.testing.assert_allclose(
        tf.cast(annotations, tf.float32), tf.cast(ref_annotations, tf.float32), atol=2e-2
    )
    for grad, ref_grad in zip(grads, mixed_ref_grads, strict=True):
        grad, ref_grad = tf.convert_to_tensor(grad), tf.convert_to_tensor(ref_grad)
        assert grad.dtype == tf.float32
        scale = float(tf.reduce_max(tf.abs(ref_grad)))
        np.testing.assert_allclose(grad, ref_grad, atol=3e-2 * max(scale, 1e-3))


@pytest.mark.parametrize(
    "options", ENCODERS, ids=lambda o: f"bi={o['bidirectional']}-layers={o['num_layers']}"
)
def test_bfloat16_inference_runs_gru_sequence_and_equals_keras_gru(options):
    """Under mixed_bfloat16 inference runs `gru_sequence` too (Keras' GRU layers cast
    their kernels at every step): the same annotations as Keras' layers, to bf16
    rounding, and no kernel cast inside the recurrence."""
    keras.utils.set_random_seed(0)
    encoder = Encoder(30, embedding_dim=6, units=5, dtype="mixed_bfloat16", **options)
    source_ids = source_batch()
    annotations, summary = encoder(source_ids, training=False)
    ref_annotations, ref_summary = keras_encoder_call(encoder, source_ids)
    assert annotations.dtype == tf.bfloat16
    for value, reference in ((annotations, ref_annotations), (summary, ref_summary)):
        np.testing.assert_allclose(
            tf.cast(value, tf.float32), tf.cast(reference, tf.float32), atol=2e-2
        )
    assert np.all(annotations.numpy()[2, 1:] == 0)

    def loop_casts(call):
        graph = tf.function(lambda: call(encoder, source_ids)).get_concrete_function().graph
        casts = []
        for op in graph.get_operations():
            if op.type in ("While", "StatelessWhile"):
                body = graph._get_function(op.get_attr("body").name).graph
                casts += [o for o in body.get_operations() if o.type == "Cast"]
        return [o for o in casts if o.inputs[0].shape.num_elements() == 5 * 15]

    assert not loop_casts(lambda e, s: e(s, training=False))
    assert loop_casts(keras_encoder_call)  # Keras' layers: the recurrent kernel at each step


def test_float32_inference_keeps_keras_layers():
    """In float32 inference calls Keras' layers (two directions side by side were
    faster there): the outputs equal them exactly."""
    keras.utils.set_random_seed(0)
    encoder = Encoder(30, embedding_dim=6, units=5)
    source_ids = source_batch()
    annotations, summary = encoder(source_ids, training=False)
    ref_annotations, ref_summary = keras_encoder_call(encoder, source_ids)
    np.testing.assert_array_equal(annotations.numpy(), ref_annotations.numpy())
    np.testing.assert_array_equal(summary.numpy(), ref_summary.numpy())


def test_gru_layer_weights_refuses_a_gru_it_does_not_compute():
    layer = keras.layers.GRU(4, reset_after=False)
    layer.build((None, 3, 2))
    with pytest.raises(ValueError, match="reset_after"):
        gru_layer_weights(layer)


@pytest.mark.parametrize("dtype", ["float32", "mixed_bfloat16"])
def test_decoder_gru_recurrence_equals_its_step_loop(dtype):
    """Luong's decoder without input feeding trains its GRU as one `gru_sequence`:
    the same states and gradients as `recurrent_step` in the decoder's loop."""
    from keras_attention.models.seq2seq import Seq2Seq

    keras.utils.set_random_seed(0)
    model = Seq2Seq(30, 40, embedding_dim=8, encoder_units=8, decoder_units=16, dtype=dtype)
    source_ids = source_batch()
    target_in = tf.constant(np.random.default_rng(2).integers(1, 40, (4, 6)), tf.int32)
    model((source_ids, target_in))
    decoder = model.decoder
    assert decoder._recurrence_is_a_gru

    def states_and_gradients(recurrence):
        with tf.GradientTape() as tape:
            state = model.initial_decode_state(source_ids)
            cell_weights = decoder._cell_weights(state, split=True)
            projected = decoder._input_projection(decoder.embed(target_in), cell_weights)
            outputs = recurrence(projected, {"rnn": state["rnn"]}, cell_weights)
            weights = np.random.default_rng(3).normal(size=outputs.shape[1:])
            loss = tf.reduce_sum(tf.cast(outputs, tf.float32) * weights)
        variables = model.trainable_variables
        grads = tape.gradient(loss, variables)
        return outputs, [
            (v.path, g) for v, g in zip(variables, grads, strict=True) if g is not None
        ]

    outputs, grads = states_and_gradients(
        lambda *args: decoder._gru_recurrence(*args, training=True)
    )
    ref_outputs, ref_grads = states_and_gradients(
        lambda *args: decoder._loop_recurrence(*args[:2], {}, args[2])[0]
    )
    tolerance = 1e-5 if dtype == "float32" else 2e-2
    np.testing.assert_allclose(
        tf.cast(outputs, tf.float32), tf.cast(ref_outputs, tf.float32), atol=tolerance
    )
    assert [path for path, _ in grads] == [path for path, _ in ref_grads]
    assert any("gru_cell" in path and "recurrent_kernel" in path for path, _ in grads)
    for (path, grad), (_, ref_grad) in zip(grads, ref_grads, strict=True):
        grad, ref_grad = tf.convert_to_tensor(grad), tf.convert_to_tensor(ref_grad)
        scale = max(float(tf.reduce_max(tf.abs(ref_grad))), 1e-3)
        np.testing.assert_allclose(grad, ref_grad, atol=tolerance * scale, err_msg=path)


def test_gru_sequence_forward_pass_alone_equals_the_training_pass():
    """`training=False` (no gates kept, autodiff) gives the same outputs, final states
    and gradients as the written-out backward pass, with masks in both directions."""
    from keras_attention.models.fused_gru import gru_sequence

    rng = np.random.default_rng(4)
    steps, directions, batch, units = 5, 2, 3, 4
    projected = tf.constant(rng.normal(size=(steps, directions, batch, 3 * units)), tf.float32)
    kernel = tf.constant(rng.normal(size=(directions, units, 3 * units)) * 0.5, tf.float32)
    bias = tf.constant(rng.normal(size=(directions, 3 * units)) * 0.1, tf.float32)
    mask = tf.constant(rng.random((steps, directions, batch)) > 0.3)
    initial = tf.constant(rng.normal(size=(directions, batch, units)), tf.float32)
    weights = tf.constant(rng.normal(size=(steps, directions, batch, units)), tf.float32)

    def run(training):
        inputs = [projected, kernel, bias, initial]
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            outputs, final = gru_sequence(projected, kernel, bias, mask, initial, training=training)
            loss = tf.reduce_sum(outputs * weights) + tf.reduce_sum(final)
        return [outputs, final, *tape.gradient(loss, inputs)]

    for alone, written_out in zip(run(False), run(True), strict=True):
        np.testing.assert_allclose(alone, written_out, atol=1e-5)
    outputs = run(False)[0].numpy()
    assert np.all(outputs[~mask.numpy()] == 0)
