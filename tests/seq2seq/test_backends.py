"""`keras_attention.seq2seq` on the current Keras backend (CI runs this file with
`KERAS_BACKEND=tensorflow`, `jax` and `torch`): the attention mechanisms,
`AttentionWrapper` and `BasicDecoder` with `TrainingSampler` give TFA's golden numbers,
the wrapper inside `keras.layers.RNN` matches a NumPy reference and trains with
`model.fit`, and the TensorFlow-only parts raise an error naming the backend."""

import keras
import numpy as np
import pytest
from helpers.copy_task import train_copy_model
from helpers.tfa_golden import (
    assert_matches_golden,
    flatten_state,
    golden_weights,
    load,
    make_wrapper,
    mechanism_outputs,
    names,
)
from keras import ops

from keras_attention import seq2seq

BACKEND = keras.backend.backend()
not_tensorflow = pytest.mark.skipif(BACKEND == "tensorflow", reason="TensorFlow runs them")


def numpy_tree(structure):
    return keras.tree.map_structure(ops.convert_to_numpy, structure)


@pytest.mark.parametrize("name", names("mechanism_"))
def test_mechanism_gives_tfa_numbers(name):
    arrays, config = load(name)
    _, ours = mechanism_outputs(arrays, config)
    assert_matches_golden(arrays, ours, name)


@pytest.mark.parametrize("name", names("wrapper_"))
def test_wrapper_in_basic_decoder_gives_tfa_numbers(name):
    """Teacher forcing through `BasicDecoder` on the golden inputs cut to the longest
    length (where TFA's loop stops), without the alignment history (a TensorArray)."""
    arrays, config = load(name)
    wrapper_kwargs = dict(
        config.get("wrapper_kwargs") or {"attention_layer_size": config["attention_layer_size"]},
        alignment_history=False,
    )
    tfa_case = name.startswith("wrapper_tfa_")
    mechanism, cell = make_wrapper(
        config["mechanism"],
        config["mechanism_kwargs"],
        wrapper_kwargs,
        config.get("units") or config["depth"],
        query_layer=config.get("create_query_layer", False),
        cell_units=9 if tfa_case else 8,
    )
    decoder = seq2seq.BasicDecoder(cell, seq2seq.TrainingSampler())
    lengths = arrays["in_sequence_length"]
    inputs = arrays["in_inputs"][:, : lengths.max()]

    def run():
        mechanism.setup_memory(
            arrays["in_memory"], memory_sequence_length=arrays["in_memory_sequence_length"]
        )
        state = cell.get_initial_state(batch_size=inputs.shape[0], dtype="float32")
        return decoder(inputs, initial_state=state, sequence_length=lengths)

    run()
    decoder.set_weights(golden_weights(arrays))
    outputs, state, decoded_lengths = run()
    ours = {
        "rnn_output": outputs.rnn_output,
        "sample_id": outputs.sample_id,
        "lengths": decoded_lengths,
        **flatten_state("state", state),
    }
    assert_matches_golden(arrays, ours, name)


def numpy_wrapper_sequence(inputs, memory, weights, mechanism):
    """NumPy reference of `RNN(AttentionWrapper(SimpleRNNCell, mechanism,
    attention_layer_size), return_sequences=True)`: the attention at every step.

    `weights` in the wrapper's order: the attention layer's kernel, the cell's kernel,
    recurrent kernel and bias, then the mechanism's (Luong with `scale=True`: `g`, the
    memory kernel; Bahdanau with `normalize=True`: `v`, `g`, `b`, the query kernel and
    the memory kernel).
    """
    attention_kernel, cell_kernel, recurrent, bias, *mechanism_weights = weights
    keys = memory @ mechanism_weights[-1]
    batch, steps, _ = inputs.shape
    hidden = np.zeros((batch, recurrent.shape[0]))
    attention = np.zeros((batch, attention_kernel.shape[1]))
    outputs = []
    for t in range(steps):
        cell_inputs = np.concatenate([inputs[:, t], attention], -1)
        hidden = np.tanh(cell_inputs @ cell_kernel + hidden @ recurrent + bias)
        if mechanism == "luong":
            score = mechanism_weights[0] * np.einsum("bd,btd->bt", hidden, keys)
        else:
            v, g, b, query_kernel, _ = mechanism_weights
            processed = (hidden @ query_kernel)[:, None, :]
            score = np.tanh(keys + processed + b) @ (g * v / np.linalg.norm(v))
        alignments = np.exp(score - score.max(-1, keepdims=True))
        alignments /= alignments.sum(-1, keepdims=True)
        context = np.einsum("bt,btd->bd", alignments, memory)
        attention = np.concatenate([hidden, context], -1) @ attention_kernel
        outputs.append(attention)
    return np.stack(outputs, 1)


@pytest.mark.parametrize("mechanism_name", ["luong", "bahdanau"])
def test_wrapper_in_keras_rnn_matches_numpy(mechanism_name):
    rng = np.random.default_rng(3)
    memory = rng.normal(size=(2, 5, 4)).astype("float32")
    inputs = rng.normal(size=(2, 3, 3)).astype("float32")
    if mechanism_name == "luong":
        mechanism = seq2seq.LuongAttention(6, memory=memory, scale=True)
    else:
        mechanism = seq2seq.BahdanauAttention(6, memory=memory, normalize=True)
    cell = seq2seq.AttentionWrapper(
        keras.layers.SimpleRNNCell(6), mechanism, attention_layer_size=7
    )
    layer = keras.layers.RNN(cell, return_sequences=True)
    layer(inputs)
    weights = [rng.normal(scale=0.5, size=w.shape).astype("float32") for w in layer.weights]
    layer.set_weights(weights)
    mechanism.setup_memory(memory)  # keys from the new memory kernel
    outputs = ops.convert_to_numpy(layer(inputs))
    expected = numpy_wrapper_sequence(inputs, memory, weights, mechanism_name)
    np.testing.assert_allclose(outputs, expected, atol=1e-5)


def test_basic_decoder_impute_finished_matches_masked_keras_rnn():
    """TFA's `test_dynamic_decode_rnn_with_training_helper_matches_dynamic_rnn`: with
    `impute_finished`, the outputs are the masked RNN's (zeros past each length) and
    the final states hold at each length."""
    rng = np.random.default_rng(4)
    inputs = rng.normal(size=(5, 4, 7)).astype("float32")
    lengths = np.array([3, 4, 3, 1, 0], "int32")
    cell = keras.layers.LSTMCell(10)
    decoder = seq2seq.BasicDecoder(cell, seq2seq.TrainingSampler(), impute_finished=True)
    state = cell.get_initial_state(batch_size=5)
    outputs, final_state, decoded_lengths = decoder(
        inputs, initial_state=state, sequence_length=lengths
    )
    rnn = keras.layers.RNN(
        cell, return_sequences=True, return_state=True, zero_output_for_mask=True
    )
    mask = np.arange(4)[None, :] < lengths[:, None]
    expected_outputs, *expected_state = rnn(inputs, mask=mask)
    np.testing.assert_allclose(
        ops.convert_to_numpy(outputs.rnn_output), ops.convert_to_numpy(expected_outputs), atol=1e-6
    )
    expected_ids = np.argmax(ops.convert_to_numpy(outputs.rnn_output), -1)
    np.testing.assert_array_equal(ops.convert_to_numpy(outputs.sample_id), expected_ids)
    np.testing.assert_array_equal(ops.convert_to_numpy(decoded_lengths), lengths)
    for ours, theirs in zip(numpy_tree(final_state), numpy_tree(expected_state), strict=True):
        np.testing.assert_allclose(ours, theirs, atol=1e-6)


@pytest.mark.parametrize(
    "mechanism",
    [lambda: seq2seq.LuongAttention(8, scale=True), lambda: seq2seq.BahdanauAttention(8)],
    ids=["luong", "bahdanau"],
)
def test_model_with_wrapper_in_keras_rnn_trains(mechanism):
    losses = train_copy_model(mechanism())
    assert all(later < earlier for earlier, later in zip(losses[:-1], losses[1:], strict=True))
    assert losses[-1] < 0.95 * losses[0], losses


@not_tensorflow
@pytest.mark.parametrize(
    "use",
    [
        "alignment_history",
        "greedy_sampler",
        "scheduled_sampler",
        "beam_search",
        "dynamic_decode",
        "gather_tree",
        "sequence_loss",
        "sigmoid_noise",
    ],
)
def test_tensorflow_only_parts_name_the_backend(use):
    memory = np.ones((2, 3, 4), "float32")
    cell = keras.layers.LSTMCell(4)
    state = cell.get_initial_state(batch_size=2)
    inputs = np.ones((2, 3, 4), "float32")
    uses = {
        "alignment_history": lambda: seq2seq.AttentionWrapper(
            cell, seq2seq.LuongAttention(4, memory=memory), alignment_history=True
        ),
        "greedy_sampler": lambda: seq2seq.BasicDecoder(cell, seq2seq.GreedyEmbeddingSampler())(
            np.ones((5, 4), "float32"), start_tokens=[0, 0], end_token=1, initial_state=state
        ),
        "scheduled_sampler": lambda: seq2seq.BasicDecoder(
            cell, seq2seq.ScheduledOutputTrainingSampler(0.5)
        )(inputs, initial_state=state),
        "beam_search": lambda: seq2seq.BeamSearchDecoder(cell, beam_width=2)(
            np.ones((5, 4), "float32"), start_tokens=[0, 0], end_token=1, initial_state=state
        ),
        "dynamic_decode": lambda: seq2seq.dynamic_decode(
            seq2seq.BasicDecoder(cell, seq2seq.TrainingSampler()),
            decoder_init_input=inputs,
            decoder_init_kwargs={"initial_state": state},
        ),
        "gather_tree": lambda: seq2seq.gather_tree(
            np.ones((2, 1, 2), "int32"), np.zeros((2, 1, 2), "int32"), [2], 1
        ),
        "sequence_loss": lambda: seq2seq.sequence_loss(
            np.ones((2, 3, 4), "float32"), np.ones((2, 3), "int32"), np.ones((2, 3), "float32")
        ),
        "sigmoid_noise": lambda: seq2seq.BahdanauMonotonicAttention(
            4, memory=memory, sigmoid_noise=1.0
        )([np.ones((2, 4), "float32"), np.ones((2, 3), "float32")]),
    }
    with pytest.raises(NotImplementedError, match=f"TensorFlow backend.*'{BACKEND}'"):
        uses[use]()
