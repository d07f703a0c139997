"""`keras_attention.seq2seq` under the `mixed_float16` policy (TensorFlow backend): float32
variables, float16 outputs and states (the policy's compute dtype, as TFA's
`run_with_mixed_precision_policy` cases state), beam scores in float32, and results
close to float32 ones with the same weights."""

import contextlib

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers.copy_task import train_copy_model
from helpers.tfa_golden import golden_weights, load, max_difference, tfa_case_wrapper

from keras_attention import seq2seq

pytestmark = [
    pytest.mark.tensorflow_only,
    pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TensorFlow only"),
]

# float16 keeps 11 significant bits (relative steps of about 1e-3): a Luong score near
# 10 moves by about 1e-2, and the alignments (softmax of the scores) with it.
FLOAT16_TOLERANCE = 2e-2


@contextlib.contextmanager
def policy(name):
    """Keras' global dtype policy set to `name`, restored afterwards."""
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(name)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)


MECHANISMS = {
    "bahdanau_normalize": lambda: seq2seq.BahdanauAttention(6, normalize=True),
    "luong_scale": lambda: seq2seq.LuongAttention(6, scale=True),
    "bahdanau_monotonic_recursive": lambda: seq2seq.BahdanauMonotonicAttention(6, mode="recursive"),
    "luong_monotonic_parallel": lambda: seq2seq.LuongMonotonicAttention(6, mode="parallel"),
}


def run_mechanism(make, weights=None):
    rng = np.random.default_rng(1)
    memory = rng.normal(size=(2, 5, 4)).astype("float32")
    query = rng.normal(size=(2, 6)).astype("float32")
    mechanism = make()
    mechanism.setup_memory(memory, memory_sequence_length=[5, 3])
    state = mechanism.initial_state(2, mechanism.compute_dtype)
    mechanism([query, state])
    if weights is not None:
        mechanism.set_weights(weights)
        mechanism.setup_memory(memory, memory_sequence_length=[5, 3])
    return mechanism, mechanism([query, state])[0]


@pytest.mark.parametrize("name", MECHANISMS)
def test_mechanism_in_float16(name):
    reference, expected = run_mechanism(MECHANISMS[name])
    with policy("mixed_float16"):
        mechanism, alignments = run_mechanism(MECHANISMS[name], reference.get_weights())
    assert alignments.dtype == tf.float16
    assert mechanism.keys.dtype == tf.float16 and mechanism.values.dtype == tf.float16
    assert {w.dtype for w in mechanism.weights} == {"float32"}
    assert max_difference(expected, alignments) < FLOAT16_TOLERANCE
    assert float(tf.reduce_max(alignments[1, 3:])) == 0.0  # padding still gets nothing


@pytest.mark.parametrize(
    "name", ["wrapper_tfa_bahdanau_not_normalized", "wrapper_tfa_luong_not_normalized"]
)
def test_tfa_mixed_precision_cases_with_tfa_weights(name):
    """The two `_test_with_attention` cases TFA also ran under `mixed_float16`: float16
    outputs and state, TFA's float32 numbers within float16's precision."""
    arrays, config = load(name)
    with policy("mixed_float16"):
        mechanism, cell = tfa_case_wrapper(config)
        decoder = seq2seq.BasicDecoder(cell, seq2seq.TrainingSampler())

        def run():
            mechanism.setup_memory(
                arrays["in_memory"], memory_sequence_length=arrays["in_memory_sequence_length"]
            )
            return decoder(
                arrays["in_inputs"],
                initial_state=cell.get_initial_state(batch_size=5),
                sequence_length=arrays["in_sequence_length"],
            )

        run()
        assert {w.dtype for w in decoder.weights} == {"float32"}
        decoder.set_weights(golden_weights(arrays))
        outputs, state, lengths = run()
    assert outputs.rnn_output.dtype == tf.float16 and outputs.sample_id.dtype == tf.int32
    floats = {
        "rnn_output": outputs.rnn_output,
        "state_cell_state_0": state.cell_state[0],
        "state_cell_state_1": state.cell_state[1],
        "state_attention": state.attention,
        "state_alignments": state.alignments,
        "state_attention_state": state.attention_state,
    }
    if config["alignment_history"]:
        floats["state_alignment_history"] = state.alignment_history.stack()
    for key, value in floats.items():
        assert value.dtype == tf.float16, key
        assert max_difference(arrays[f"out_{key}"], value) < FLOAT16_TOLERANCE, key
    np.testing.assert_array_equal(lengths, arrays["out_lengths"])


def run_wrapper_in_rnn(weights=None):
    rng = np.random.default_rng(2)
    memory = rng.normal(size=(2, 5, 4)).astype("float32")
    mechanism = seq2seq.BahdanauAttention(6, memory=memory, normalize=True)
    cell = seq2seq.AttentionWrapper(keras.layers.LSTMCell(6), mechanism, attention_layer_size=5)
    layer = keras.layers.RNN(cell, return_sequences=True)
    inputs = rng.normal(size=(2, 3, 4)).astype("float32")
    outputs = layer(inputs)
    if weights is not None:
        layer.set_weights(weights)
        mechanism.setup_memory(memory)
        outputs = layer(inputs)
    return layer, outputs


def test_wrapper_in_keras_rnn_in_float16():
    reference, expected = run_wrapper_in_rnn()
    with policy("mixed_float16"):
        layer, outputs = run_wrapper_in_rnn(reference.get_weights())
    assert outputs.dtype == tf.float16
    assert {w.dtype for w in layer.weights} == {"float32"}
    assert max_difference(expected, outputs) < FLOAT16_TOLERANCE


def run_beam_search(weights=None):
    rng = np.random.default_rng(5)
    memory = seq2seq.tile_batch(rng.normal(size=(2, 5, 4)).astype("float32"), 3)
    mechanism = seq2seq.LuongAttention(6, memory=memory)
    cell = seq2seq.AttentionWrapper(keras.layers.LSTMCell(6), mechanism, attention_layer_size=5)
    decoder = seq2seq.BeamSearchDecoder(
        cell, beam_width=3, output_layer=keras.layers.Dense(7), maximum_iterations=4
    )
    embedding = rng.normal(size=(7, 4)).astype("float32")

    def run():
        return decoder(
            embedding,
            start_tokens=[0, 0],
            end_token=1,
            initial_state=cell.get_initial_state(batch_size=6),
        )

    result = run()
    if weights is not None:
        decoder.set_weights(weights)
        mechanism.setup_memory(memory)  # keys from the new memory kernel
        result = run()
    return decoder, result


def test_beam_search_in_float16():
    """Ids as in float32 and scores (summed log-probabilities) kept in float32."""
    reference, (expected, _, expected_lengths) = run_beam_search()
    with policy("mixed_float16"):
        decoder, (outputs, _, lengths) = run_beam_search(reference.get_weights())
    assert {w.dtype for w in decoder.weights} == {"float32"}
    assert outputs.predicted_ids.dtype == tf.int32
    scores = outputs.beam_search_decoder_output.scores
    assert scores.dtype == tf.float32
    np.testing.assert_array_equal(outputs.predicted_ids, expected.predicted_ids)
    np.testing.assert_array_equal(lengths, expected_lengths)
    assert max_difference(expected.beam_search_decoder_output.scores, scores) < FLOAT16_TOLERANCE


def test_scheduled_embedding_decode_in_float16():
    """TFA's `test_dynamic_decode_rnn_with_scheduled_embedding_training_sampler` under
    `mixed_float16`: `rnn_output` in the policy's compute dtype."""
    with policy("mixed_float16"):
        embedding = keras.layers.Embedding(7, 4)
        sampler = seq2seq.ScheduledEmbeddingTrainingSampler(1.0, embedding_fn=embedding)
        cell = keras.layers.LSTMCell(6)
        decoder = seq2seq.BasicDecoder(cell, sampler, output_layer=keras.layers.Dense(7))
        outputs, _, _ = decoder(
            embedding(np.ones((2, 3), "int32")),
            initial_state=cell.get_initial_state(batch_size=2),
            sequence_length=[3, 3],
        )
    assert outputs.rnn_output.dtype == tf.float16


def test_model_with_wrapper_trains_in_float16():
    """`model.fit` under `mixed_float16` (Keras' loss scaling): the loss falls every epoch."""
    with policy("mixed_float16"):
        losses = train_copy_model(seq2seq.BahdanauAttention(8, normalize=True))
    assert all(np.isfinite(losses))
    assert all(later < earlier for earlier, later in zip(losses[:-1], losses[1:], strict=True))
