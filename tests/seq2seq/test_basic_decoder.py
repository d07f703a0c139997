"""The cases of TFA 0.23's `basic_decoder_test.py` and `decoder_test.py`, with the
values they state (docs/research/tfa-seq2seq-cases.md lists them)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention import seq2seq
from keras_attention.seq2seq import sampler as sampler_module

pytestmark = pytest.mark.tensorflow_only

LENGTHS = [3, 4, 3, 1, 0]
BATCH, TIME, DEPTH, CELL = 5, 8, 7, 10


def assert_equal(expected, actual):
    np.testing.assert_equal(np.asarray(expected), np.asarray(actual))


def first_step(decoder, cell, inputs, **kwargs):
    state = cell.get_initial_state(batch_size=BATCH)
    first_finished, first_inputs, first_state = decoder.initialize(
        inputs, initial_state=state, **kwargs
    )
    step = decoder.step(tf.constant(0), first_inputs, first_state)
    return first_finished, first_state, step


@pytest.mark.parametrize("use_output_layer", [True, False])
@pytest.mark.parametrize("cell_class", [keras.layers.LSTMCell, keras.layers.GRUCell])
def test_training_sampler_step(cell_class, use_output_layer):
    inputs = np.random.default_rng(0).normal(size=(BATCH, TIME, DEPTH)).astype("float32")
    cell = cell_class(CELL)
    output_layer = keras.layers.Dense(3, use_bias=False) if use_output_layer else None
    depth = 3 if use_output_layer else CELL
    decoder = seq2seq.BasicDecoder(cell, seq2seq.TrainingSampler(), output_layer=output_layer)
    first_finished, first_state, (outputs, state, _, finished) = first_step(
        decoder, cell, tf.constant(inputs), sequence_length=LENGTHS
    )
    assert decoder.output_size == seq2seq.BasicDecoderOutput(depth, tf.TensorShape([]))
    assert decoder.output_dtype == seq2seq.BasicDecoderOutput(tf.float32, tf.int32)
    for part in tf.nest.flatten(first_state) + tf.nest.flatten(state):
        assert part.shape == (BATCH, CELL)
    assert type(outputs) is seq2seq.BasicDecoderOutput
    assert outputs[0].shape == (BATCH, depth) and outputs[1].shape == (BATCH,)
    if use_output_layer:
        assert len(output_layer.variables) == 1
    assert_equal([False, False, False, False, True], first_finished)
    assert_equal([False, False, False, True, True], finished)
    assert outputs.sample_id.dtype == tf.int32
    assert_equal(np.argmax(outputs.rnn_output, -1), outputs.sample_id)


@pytest.mark.parametrize("use_mask", [True, False, None])
def test_training_sampler_mask(use_mask):
    lengths = np.array([TIME] * BATCH if use_mask is None else LENGTHS, np.int32)
    mask = [[True] * n + [False] * (TIME - n) for n in lengths]
    inputs = np.random.default_rng(1).normal(size=(BATCH, TIME, DEPTH)).astype("float32")
    cell = keras.layers.LSTMCell(CELL)
    decoder = seq2seq.BasicDecoder(
        cell, seq2seq.TrainingSampler(), output_layer=keras.layers.Dense(3, use_bias=False)
    )
    kwargs = (
        {} if use_mask is None else ({"mask": mask} if use_mask else {"sequence_length": lengths})
    )
    first_finished, _, (outputs, _, _, finished) = first_step(decoder, cell, inputs, **kwargs)
    assert outputs[0].shape == (BATCH, 3)
    assert_equal(lengths == 0, first_finished)
    assert_equal(np.maximum(lengths - 1, 0) == 0, finished)
    assert_equal(np.argmax(outputs.rnn_output, -1), outputs.sample_id)


def embedding_decoder(sampler, vocabulary=7, depth=10, seed=2):
    rng = np.random.default_rng(seed)
    embeddings = rng.normal(size=(vocabulary, depth)).astype("float32")
    cell = keras.layers.LSTMCell(vocabulary)
    decoder = seq2seq.BasicDecoder(cell, sampler)
    start_tokens = rng.integers(0, vocabulary, size=BATCH)
    state = cell.get_initial_state(batch_size=BATCH)
    first = decoder.initialize(
        tf.constant(embeddings), start_tokens=start_tokens, end_token=1, initial_state=state
    )
    return embeddings, decoder, first


def test_greedy_embedding_step():
    embeddings, decoder, (first_finished, first_inputs, first_state) = embedding_decoder(
        seq2seq.GreedyEmbeddingSampler()
    )
    assert decoder.output_size == seq2seq.BasicDecoderOutput(7, tf.TensorShape([]))
    outputs, _, next_inputs, finished = decoder.step(tf.constant(0), first_inputs, first_state)
    expected_ids = np.argmax(outputs.rnn_output, -1)
    assert_equal([False] * BATCH, first_finished)
    assert_equal(expected_ids == 1, finished)
    assert_equal(expected_ids, outputs.sample_id)
    assert_equal(embeddings[expected_ids], next_inputs)


def test_sample_embedding_step():
    embeddings, decoder, (_, first_inputs, first_state) = embedding_decoder(
        seq2seq.SampleEmbeddingSampler(seed=0)
    )
    outputs, _, next_inputs, finished = decoder.step(tf.constant(0), first_inputs, first_state)
    ids = outputs.sample_id.numpy()
    assert ids.dtype == np.int32
    assert_equal(ids == 1, finished)
    assert_equal(embeddings[ids], next_inputs)


def test_scheduled_embedding_step():
    rng = np.random.default_rng(3)
    inputs = rng.normal(size=(BATCH, TIME, DEPTH)).astype("float32")
    embeddings = rng.normal(size=(10, DEPTH)).astype("float32")
    cell = keras.layers.LSTMCell(10)
    sampler = seq2seq.ScheduledEmbeddingTrainingSampler(sampling_probability=tf.constant(0.5))
    decoder = seq2seq.BasicDecoder(cell, sampler)
    first_finished, _, (outputs, _, next_inputs, finished) = first_step(
        decoder, cell, inputs, sequence_length=LENGTHS, embedding=embeddings
    )
    assert next_inputs.shape == (BATCH, DEPTH)
    assert_equal([False, False, False, False, True], first_finished)
    assert_equal([False, False, False, True, True], finished)
    ids = outputs.sample_id.numpy()
    sampling, not_sampling = np.where(ids > -1), np.where(ids == -1)
    assert_equal(next_inputs.numpy()[sampling], embeddings[ids[sampling]])
    assert_equal(next_inputs.numpy()[not_sampling], inputs[not_sampling][:, 1])


@pytest.mark.parametrize("use_auxiliary_inputs", [True, False])
@pytest.mark.parametrize("use_next_inputs_fn", [True, False])
@pytest.mark.parametrize("sampling_probability", [0.0, 0.5])
def test_scheduled_output_step(sampling_probability, use_next_inputs_fn, use_auxiliary_inputs):
    rng = np.random.default_rng(4)
    auxiliary = (
        rng.normal(size=(BATCH, TIME, 4)).astype("float32") if use_auxiliary_inputs else None
    )
    inputs = rng.normal(size=(BATCH, TIME, DEPTH)).astype("float32")
    cell = keras.layers.LSTMCell(DEPTH)

    def next_inputs_fn(outputs):
        return tf.one_hot(tf.argmax(outputs, axis=1), DEPTH, dtype=tf.float32)

    sampler = seq2seq.ScheduledOutputTrainingSampler(
        sampling_probability=tf.constant(sampling_probability),
        next_inputs_fn=next_inputs_fn if use_next_inputs_fn else None,
    )
    decoder = seq2seq.BasicDecoder(cell, sampler)
    first_finished, _, (outputs, _, next_inputs, finished) = first_step(
        decoder, cell, inputs, sequence_length=LENGTHS, auxiliary_inputs=auxiliary
    )
    assert_equal([False, False, False, False, True], first_finished)
    assert_equal([False, False, False, True, True], finished)
    ids = outputs.sample_id.numpy().astype(bool)
    sampling, not_sampling = np.where(ids), np.where(~ids)
    aux = auxiliary[:, 1] if use_auxiliary_inputs else np.zeros((BATCH, 0), "float32")
    sampled = (
        next_inputs_fn(outputs.rnn_output).numpy()
        if use_next_inputs_fn
        else outputs.rnn_output.numpy()
    )
    assert_equal(
        next_inputs.numpy()[sampling], np.concatenate((sampled[sampling], aux[sampling]), -1)
    )
    assert_equal(
        next_inputs.numpy()[not_sampling],
        np.concatenate((inputs[not_sampling][:, 1], aux[not_sampling]), -1),
    )


def inference_step(sampler, vocabulary=7):
    cell = keras.layers.LSTMCell(vocabulary)
    decoder = seq2seq.BasicDecoder(cell, sampler)
    start_inputs = tf.one_hot(np.zeros(BATCH, np.int32), vocabulary)
    _, first_inputs, first_state = decoder.initialize(
        start_inputs, initial_state=cell.get_initial_state(batch_size=BATCH)
    )
    return decoder, decoder.step(tf.constant(0), first_inputs, first_state)


def test_inference_sampler_categorical():
    sampler = seq2seq.InferenceSampler(
        lambda x: sampler_module.categorical_sample(logits=x),
        sample_shape=(),
        sample_dtype=tf.int32,
        end_fn=lambda ids: tf.equal(ids, 6),
        next_inputs_fn=lambda ids: tf.one_hot(ids, 7, dtype=tf.float32),
    )
    decoder, (outputs, _, next_inputs, finished) = inference_step(sampler)
    assert decoder.output_size == seq2seq.BasicDecoderOutput(7, tf.TensorShape([]))
    ids = outputs.sample_id.numpy()
    expected = np.zeros((BATCH, 7))
    expected[np.arange(BATCH), ids] = 1.0
    assert_equal(ids == 6, finished)
    assert_equal(expected, next_inputs)


def test_inference_sampler_multilabel():
    sampler = seq2seq.InferenceSampler(
        lambda x: sampler_module.bernoulli_sample(logits=x, dtype=tf.bool),
        sample_shape=[7],
        sample_dtype=tf.bool,
        end_fn=lambda ids: ids[:, 6],
        next_inputs_fn=lambda ids: tf.cast(ids, tf.float32),
    )
    decoder, (outputs, _, next_inputs, finished) = inference_step(sampler)
    assert decoder.output_size == seq2seq.BasicDecoderOutput(7, 7)
    assert decoder.output_dtype == seq2seq.BasicDecoderOutput(tf.float32, tf.bool)
    ids = outputs.sample_id.numpy()
    assert outputs.sample_id.shape == (BATCH, 7)
    assert_equal(ids[:, 6], finished)
    assert_equal(ids.astype(np.float32), next_inputs)


def test_decoder_accepts_unset_wrapper():
    cell = seq2seq.AttentionWrapper(keras.layers.LSTMCell(32), seq2seq.LuongAttention(32))
    seq2seq.BasicDecoder(cell, seq2seq.TrainingSampler(), output_layer=keras.layers.Dense(100))


def test_right_padded_check():
    sampler_module._check_sequence_is_right_padded(
        [[True, True, False, False], [True, True, True, False]], False
    )
    with pytest.raises(tf.errors.InvalidArgumentError):
        sampler_module._check_sequence_is_right_padded(
            [[False, False, True, True], [False, True, True, True]], False
        )


@pytest.mark.parametrize("maximum_iterations", [None, 1, "tensor"])
@pytest.mark.parametrize("time_major", [True, False])
def test_dynamic_decode_rnn(time_major, maximum_iterations):
    if maximum_iterations == "tensor":
        maximum_iterations = tf.constant(1, dtype=tf.int32)
    cell = keras.layers.LSTMCell(CELL)
    decoder = seq2seq.BasicDecoder(
        cell,
        seq2seq.TrainingSampler(time_major=time_major),
        output_time_major=time_major,
        maximum_iterations=maximum_iterations,
    )

    @tf.function(
        input_signature=(
            tf.TensorSpec([None, None, DEPTH], tf.float32),
            tf.TensorSpec([None], tf.int32),
        )
    )
    def decode(inputs, sequence_length):
        state = cell.get_initial_state(batch_size=tf.shape(sequence_length)[0])
        return decoder(inputs, initial_state=state, sequence_length=sequence_length)

    inputs = tf.random.normal([BATCH, TIME, DEPTH])
    if time_major:
        inputs = tf.transpose(inputs, [1, 0, 2])
    outputs, _, lengths = decode(inputs, tf.constant(LENGTHS))
    steps, expected = max(LENGTHS), LENGTHS
    if maximum_iterations is not None:
        steps = min(steps, 1)
        expected = [min(n, 1) for n in LENGTHS]
    shape = (steps, BATCH) if time_major else (BATCH, steps)
    assert tuple(lengths.shape) == (BATCH,)
    assert outputs.rnn_output.shape == shape + (CELL,)
    assert outputs.sample_id.shape == shape
    np.testing.assert_array_equal(expected, lengths)


def test_tflite_convertible_needs_batch_one():
    cell = keras.layers.LSTMCell(10)
    decoder = seq2seq.BasicDecoder(cell, seq2seq.GreedyEmbeddingSampler())
    embeddings = tf.random.uniform([20, 10])

    @tf.function
    def decode(start_tokens, end_token):
        state = cell.get_initial_state(batch_size=tf.size(start_tokens))
        return seq2seq.dynamic_decode(
            decoder,
            maximum_iterations=5,
            enable_tflite_convertible=True,
            decoder_init_input=embeddings,
            decoder_init_kwargs={
                "initial_state": state,
                "start_tokens": start_tokens,
                "end_token": end_token,
            },
        )

    outputs, _, _ = decode(tf.constant([3]), tf.constant(1))
    assert outputs.rnn_output.shape[0] == 1
    with pytest.raises(tf.errors.InvalidArgumentError, match="batch size"):
        decode(tf.constant([3, 4]), tf.constant(1))


@pytest.mark.parametrize("use_sequence_length", [True, False])
def test_matches_keras_rnn(use_sequence_length):
    inputs = tf.constant(np.random.default_rng(5).normal(size=(BATCH, TIME, DEPTH)), tf.float32)
    cell = keras.layers.LSTMCell(CELL)
    zero_state = cell.get_initial_state(batch_size=BATCH)
    decoder = seq2seq.BasicDecoder(
        cell, seq2seq.TrainingSampler(), impute_finished=use_sequence_length
    )
    outputs, state, _ = decoder(inputs, initial_state=zero_state, sequence_length=LENGTHS)
    rnn = keras.layers.RNN(cell, return_sequences=True, return_state=True)
    mask = tf.sequence_mask(LENGTHS, maxlen=TIME) if use_sequence_length else None
    rnn_outputs, *rnn_state = rnn(inputs, mask=mask, initial_state=zero_state)
    if use_sequence_length:
        rnn_outputs *= tf.cast(tf.expand_dims(mask, -1), rnn_outputs.dtype)
    np.testing.assert_allclose(outputs.rnn_output, rnn_outputs[:, : max(LENGTHS)], atol=1e-6)
    if use_sequence_length:
        np.testing.assert_allclose(state, rnn_state, atol=1e-6)


def test_scheduled_embedding_decode_dtype():
    cell = keras.layers.LSTMCell(CELL)
    sampler = seq2seq.ScheduledEmbeddingTrainingSampler(
        sampling_probability=tf.constant(1.0), embedding_fn=keras.layers.Embedding(12, DEPTH)
    )
    decoder = seq2seq.BasicDecoder(cell, sampler)
    outputs, _, _ = decoder(
        tf.random.uniform([4, 4, DEPTH]),
        initial_state=cell.get_initial_state(batch_size=4),
        sequence_length=[3, 4, 3, 1],
    )
    assert outputs.rnn_output.dtype == tf.float32


def test_dynamic_decode_under_xla_matches_eager():
    cell = keras.layers.LSTMCell(6)
    decoder = seq2seq.BasicDecoder(cell, seq2seq.TrainingSampler(), maximum_iterations=4)
    inputs = tf.constant(np.random.default_rng(8).normal(size=(3, 4, 5)), tf.float32)

    def decode(inputs):
        state = cell.get_initial_state(batch_size=3)
        return decoder(inputs, initial_state=state, sequence_length=[4, 4, 4])

    expected, _, _ = decode(inputs)
    outputs, _, lengths = tf.function(decode, jit_compile=True)(inputs)
    np.testing.assert_allclose(expected.rnn_output, outputs.rnn_output, atol=1e-5)
    assert_equal([4, 4, 4], lengths)
