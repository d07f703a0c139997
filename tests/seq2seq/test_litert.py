"""`keras_attention.seq2seq` decoders in LiteRT with builtin ops only (TFA's could not:
tensorflow/tensorflow#40507): a `BeamSearchDecoder` over an `AttentionWrapper` (with its
alignment history, and with the coverage penalty) and a `BasicDecoder` with
`GreedyEmbeddingSampler`, each in a `tf.function` of fixed inputs, converted by
`convert_function` and run in LiteRT's interpreter: the same ids, beams and lengths as
TensorFlow, and scores within 1e-4."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention import seq2seq

pytest.importorskip("ai_edge_litert")
from keras_attention.export.litert.function_converter import (  # noqa: E402
    convert_function,
)

pytestmark = pytest.mark.tensorflow_only

BATCH, BEAM, VOCAB, MEMORY_TIME, UNITS, STEPS, END = 2, 3, 11, 5, 8, 6, 1


def _inputs():
    rng = np.random.default_rng(3)
    memory = rng.normal(size=(BATCH, MEMORY_TIME, UNITS)).astype("float32")
    return memory, np.array([2, 4], np.int32)


def _signature():
    return [
        tf.TensorSpec([BATCH, MEMORY_TIME, UNITS], tf.float32),
        tf.TensorSpec([BATCH], tf.int32),
    ]


def _no_flex_or_custom_ops(converted):
    assert converted.ops["custom"] == [] and converted.ops["flex"] == []
    assert "WHILE" in converted.ops["builtin"]  # the decoding loop runs inside the model


@pytest.mark.parametrize("coverage_penalty_weight", [0.0, 0.3])
def test_beam_search_decoder_over_an_attention_wrapper(coverage_penalty_weight):
    keras.utils.set_random_seed(0)
    embedding = np.random.default_rng(4).normal(size=(VOCAB, 4)).astype("float32")
    mechanism = seq2seq.LuongAttention(UNITS)
    cell = seq2seq.AttentionWrapper(
        keras.layers.LSTMCell(UNITS), mechanism, attention_layer_size=UNITS, alignment_history=True
    )
    decoder = seq2seq.BeamSearchDecoder(
        cell,
        beam_width=BEAM,
        output_layer=keras.layers.Dense(VOCAB),
        maximum_iterations=STEPS,
        length_penalty_weight=0.6,
        coverage_penalty_weight=coverage_penalty_weight,
    )

    @tf.function(input_signature=_signature())
    def decode(memory, start_tokens):
        mechanism.setup_memory(seq2seq.tile_batch(memory, BEAM))
        state = cell.get_initial_state(batch_size=BATCH * BEAM, dtype=tf.float32)
        outputs, final_state, lengths = decoder(
            embedding, start_tokens=start_tokens, end_token=END, initial_state=state
        )
        return {
            "predicted_ids": outputs.predicted_ids,
            "parent_ids": outputs.beam_search_decoder_output.parent_ids,
            "scores": outputs.beam_search_decoder_output.scores,
            "lengths": lengths,
            "log_probs": final_state.log_probs,
            "alignment_history": final_state.cell_state.alignment_history,
        }

    memory, start_tokens = _inputs()
    decode.python_function(memory, start_tokens)  # builds the layers
    converted = convert_function(decode)
    _no_flex_or_custom_ops(converted)
    differences = converted.check(memory, start_tokens, atol=1e-4, rtol=1e-4)
    assert differences["predicted_ids"] == 0 and differences["parent_ids"] == 0
    results = converted(memory, start_tokens)
    steps = results["predicted_ids"].shape[1]
    assert results["predicted_ids"].shape == (BATCH, steps, BEAM)
    assert results["alignment_history"].shape == (steps, BATCH * BEAM, MEMORY_TIME)


def test_basic_decoder_with_greedy_embedding_sampler():
    keras.utils.set_random_seed(1)
    embedding = np.random.default_rng(5).normal(size=(VOCAB, 4)).astype("float32")
    mechanism = seq2seq.BahdanauAttention(UNITS)
    cell = seq2seq.AttentionWrapper(
        keras.layers.GRUCell(UNITS), mechanism, attention_layer_size=UNITS
    )
    decoder = seq2seq.BasicDecoder(
        cell,
        seq2seq.GreedyEmbeddingSampler(),
        output_layer=keras.layers.Dense(VOCAB),
        maximum_iterations=STEPS,
    )

    @tf.function(input_signature=_signature())
    def decode(memory, start_tokens):
        mechanism.setup_memory(memory)
        state = cell.get_initial_state(batch_size=BATCH, dtype=tf.float32)
        outputs, _, lengths = decoder(
            embedding, start_tokens=start_tokens, end_token=END, initial_state=state
        )
        return {"sample_id": outputs.sample_id, "logits": outputs.rnn_output, "lengths": lengths}

    memory, start_tokens = _inputs()
    eager = decode.python_function(memory, start_tokens)  # builds the layers
    converted = convert_function(decode)
    _no_flex_or_custom_ops(converted)
    converted.check(memory, start_tokens, atol=1e-5, rtol=1e-5)
    # The outputs stop at the steps run, as eagerly (all 0-padded to STEPS otherwise).
    np.testing.assert_array_equal(converted(memory, start_tokens)["sample_id"], eager["sample_id"])


def test_tfa_tflite_convertible_case_with_builtin_ops_only():
    """TFA's `test_dynamic_decode_tflite_conversion` (`enable_tflite_convertible=True`,
    batch 1, `maximum_iterations=5`), which TFA converted with Flex ops too."""
    keras.utils.set_random_seed(2)
    cell = keras.layers.LSTMCell(10)
    decoder = seq2seq.BasicDecoder(
        cell, seq2seq.GreedyEmbeddingSampler(), output_layer=keras.layers.Dense(20)
    )
    embeddings = np.random.default_rng(0).uniform(size=[20, 10]).astype("float32")

    @tf.function(input_signature=[tf.TensorSpec([1], tf.int32)])
    def decode(start_tokens):
        outputs, _, lengths = seq2seq.dynamic_decode(
            decoder,
            maximum_iterations=5,
            enable_tflite_convertible=True,
            decoder_init_input=embeddings,
            decoder_init_kwargs={
                "initial_state": cell.get_initial_state(batch_size=1),
                "start_tokens": start_tokens,
                "end_token": 1,
            },
        )
        return {"sample_id": outputs.sample_id, "logits": outputs.rnn_output, "lengths": lengths}

    start_tokens = np.array([3], np.int32)
    decode.python_function(start_tokens)  # builds the layers
    converted = convert_function(decode)
    _no_flex_or_custom_ops(converted)
    converted.check(start_tokens)


def test_a_function_without_a_signature_is_refused():
    with pytest.raises(ValueError, match="input_signature"):
        convert_function(tf.function(lambda x: x + 1))
