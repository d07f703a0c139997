"""`BeamSearchDecoder`: TFA 0.23's `beam_search_decoder_test.py` cases with their stated
values, run through the one beam search step (`keras_attention.decoding.BeamSearch`
with TFA's options), and the golden outputs of TFA's decoder for TFA's weights."""

import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers.tfa_golden import golden_weights, load, make_cell, make_wrapper, max_difference

from keras_attention import seq2seq
from keras_attention.decoding import BeamSearch

pytestmark = pytest.mark.tensorflow_only

NEG_INF = -np.inf


def tfa_step(log_probs, lengths, finished, logits, length_penalty=0.6, all_scores=False):
    """One step of our beam search with TFA's options from TFA's beam state;
    returns `(records, search)`."""
    batch, beam, vocab = logits.shape
    strategy = BeamSearch(
        beam_width=beam, length_penalty=length_penalty, max_steps=4, end_id=0, pad_id=0
    )
    strategy.tfa_scoring = True
    strategy.record_steps = True
    strategy.record_all_scores = all_scores
    search = {
        "log_probs": tf.constant(log_probs, tf.float32),
        "lengths": tf.constant(lengths, tf.int32),
        "finished": tf.constant(finished, tf.bool),
        "tokens": tf.zeros([batch, beam, 4], tf.int32),
        "token_scores": tf.zeros([batch, beam, 4], tf.float32),
        "ancestry": tf.zeros([batch, beam, 4], tf.int32),
    }
    step_log_probs = tf.reshape(logits, [batch * beam, vocab])
    _, _, search, records = strategy.step(
        tf.constant(2), step_log_probs, (), tf.zeros([batch * beam, 0]), search
    )
    return records, search


def stated_logits(beam_width=3, changes=None):
    logits = np.full([2, beam_width, 5], 0.0001, np.float32)
    values = {
        (0, 0, 2): 1.9,
        (0, 0, 3): 2.1,
        (0, 1, 3): 3.1,
        (0, 1, 4): 0.9,
        (1, 0, 1): 0.5,
        (1, 1, 2): 2.7,
        (1, 2, 2): 10.0,
        (1, 2, 3): 0.2,
    }
    values.update(changes or {})
    for index, value in values.items():
        logits[index] = value
    return logits


def test_beam_step():
    logits = stated_logits()
    previous = tf.nn.log_softmax(tf.ones([2, 3])).numpy()
    records, search = tfa_step(
        previous, np.full([2, 3], 2), np.zeros([2, 3], bool), tf.nn.log_softmax(logits)
    )
    np.testing.assert_equal(records["ids"].numpy(), [[3, 3, 2], [2, 2, 1]])
    np.testing.assert_equal(records["parents"].numpy(), [[1, 0, 0], [2, 1, 0]])
    np.testing.assert_equal(search["lengths"].numpy(), [[3, 3, 3], [3, 3, 3]])
    np.testing.assert_equal(search["finished"].numpy(), np.zeros([2, 3], bool))
    log_probs = tf.nn.log_softmax(logits).numpy()
    expected = previous.copy()
    for (b, k), (parent, token) in {
        (0, 0): (1, 3),
        (0, 1): (0, 3),
        (0, 2): (0, 2),
        (1, 0): (2, 2),
        (1, 1): (1, 2),
        (1, 2): (0, 1),
    }.items():
        expected[b, k] += log_probs[b, parent, token]
    np.testing.assert_allclose(search["log_probs"].numpy(), expected, rtol=1e-6)


def test_step_with_eos():
    logits = stated_logits(changes={(1, 1, 2): 5.7, (1, 2, 2): 1.0})
    previous = tf.nn.log_softmax(tf.ones([2, 3])).numpy()
    finished = np.array([[False, True, False], [False, False, True]])
    records, search = tfa_step(
        previous, [[2, 1, 2], [2, 2, 1]], finished, tf.nn.log_softmax(logits)
    )
    np.testing.assert_equal(records["parents"].numpy(), [[1, 0, 0], [1, 2, 0]])
    np.testing.assert_equal(records["ids"].numpy(), [[0, 3, 2], [2, 0, 1]])
    np.testing.assert_equal(search["lengths"].numpy(), [[1, 3, 3], [3, 1, 3]])
    np.testing.assert_equal(
        search["finished"].numpy(), [[True, False, False], [False, True, False]]
    )
    log_probs = tf.nn.log_softmax(logits).numpy()
    expected = previous.copy()
    expected[0, 1] += log_probs[0, 0, 3]
    expected[0, 2] += log_probs[0, 0, 2]
    expected[1, 0] += log_probs[1, 1, 2]
    expected[1, 2] += log_probs[1, 0, 1]
    np.testing.assert_allclose(search["log_probs"].numpy(), expected, rtol=1e-6)


def test_large_beam_step():
    beam_width = 8
    previous = np.where(np.arange(beam_width) == 0, 0.0, NEG_INF) * np.ones([2, 1])
    finished = np.tile(np.arange(beam_width) > 0, [2, 1])
    lengths = np.zeros([2, beam_width], np.int32)
    lengths[:, 0] = 2
    logits = stated_logits(beam_width)
    records, search = tfa_step(previous, lengths, finished, tf.nn.log_softmax(logits))
    ids = records["ids"].numpy()
    assert ids[0, 0] == 3 and ids[0, 1] == 2 and ids[1, 0] == 1
    log_probs, lengths = search["log_probs"].numpy(), search["lengths"].numpy()
    np.testing.assert_equal(log_probs[:, -3:], np.full([2, 3], NEG_INF))
    assert (log_probs[:, :-3] > NEG_INF).all()
    assert (lengths[:, :-3] > 0).all()
    np.testing.assert_equal(lengths[:, -3:], np.zeros([2, 3]))


def test_eos_masking():
    """TFA's `_mask_probs`: a finished beam's end token costs 0, any other token the
    float32 minimum (read from the step's all scores, no penalty, from log prob 0)."""
    probs = np.array(
        [
            [[-0.2, -0.2, -0.2, -0.2, -0.2], [-0.3, -0.3, -0.3, 3, 0], [5, 6, 0, 0, 0]],
            [[-0.2, -0.2, -0.2, -0.2, 0], [-0.3, -0.3, -0.1, 3, 0], [5, 6, 3, 0, 0]],
        ],
        np.float32,
    )
    finished = np.array([[0, 1, 0], [0, 1, 1]], bool)
    records, _ = tfa_step(
        np.zeros([2, 3]), np.zeros([2, 3]), finished, probs, length_penalty=0.0, all_scores=True
    )
    masked = records["scores"].numpy()
    np.testing.assert_equal(masked[0][0], probs[0][0])
    np.testing.assert_equal(masked[0][2], probs[0][2])
    np.testing.assert_equal(masked[1][0], probs[1][0])
    for b, k in ((0, 1), (1, 1), (1, 2)):
        assert masked[b][k][0] == 0
        np.testing.assert_equal(masked[b][k][1:], np.finfo("float32").min)


def test_missing_embedding_fn():
    cell = keras.layers.LSTMCell(5)
    decoder = seq2seq.BeamSearchDecoder(cell, beam_width=3, maximum_iterations=3)
    state = cell.get_initial_state(batch_size=6)
    with pytest.raises(ValueError, match="embedding"):
        decoder(None, start_tokens=[0, 0], end_token=1, initial_state=state)


@pytest.mark.parametrize(
    "cell_kind, time_major, has_attention, with_history, all_scores",
    # TFA's 32 combinations (the history is asked for, and ignored, without attention too).
    list(itertools.product(["lstm", "gru"], *[[False, True]] * 4)),
)
def test_beam_search_decoder(cell_kind, time_major, has_attention, with_history, all_scores):
    """TFA's `test_beam_search_decoder`: batch 5, beam 3, vocabulary 20, 3 steps, coverage
    penalty 0.2 with attention; the output shapes and `output_size`."""
    batch, beam, vocab, memory_time = 5, 3, 20, 4
    cell = make_cell(cell_kind, 9)
    if has_attention:
        memory = np.random.default_rng(0).normal(size=(batch, memory_time, 6)).astype("float32")
        mechanism = seq2seq.BahdanauAttention(
            7,
            memory=seq2seq.tile_batch(memory, beam),
            memory_sequence_length=seq2seq.tile_batch(np.array([4, 3, 4, 2, 1]), beam),
        )
        cell = seq2seq.AttentionWrapper(
            cell, mechanism, attention_layer_size=8, alignment_history=with_history
        )
        state = cell.get_initial_state(batch_size=batch * beam, dtype=tf.float32)
    else:
        state = cell.get_initial_state(batch_size=batch * beam)
    decoder = seq2seq.BeamSearchDecoder(
        cell,
        beam_width=beam,
        output_layer=keras.layers.Dense(vocab),
        length_penalty_weight=0.0,
        coverage_penalty_weight=0.2 if has_attention else 0.0,
        output_time_major=time_major,
        maximum_iterations=3,
        output_all_scores=all_scores,
    )
    embedding = np.random.default_rng(1).normal(size=(vocab, 5)).astype("float32")
    outputs, final_state, lengths = decoder(
        embedding, start_tokens=[0] * batch, end_token=1, initial_state=state
    )
    steps = int(np.max(lengths.numpy()))
    shape = (steps, batch, beam) if time_major else (batch, steps, beam)
    assert tuple(outputs.predicted_ids.shape) == shape
    assert tuple(outputs.beam_search_decoder_output.predicted_ids.shape) == shape
    scores_shape = shape + (vocab,) if all_scores else shape
    assert tuple(outputs.beam_search_decoder_output.scores.shape) == scores_shape
    assert tuple(decoder.output_size.scores) == ((beam, vocab) if all_scores else (beam,))
    assert isinstance(final_state, seq2seq.BeamSearchDecoderState)
    if with_history and has_attention:
        history = final_state.cell_state.alignment_history  # reordered: a tensor
        assert tuple(history.shape) == (steps, batch * beam, memory_time)


BEAM_CASES = ["beam_plain", "beam_length_penalty", "beam_coverage_penalty", "beam_coverage_ended"]


def golden_beam_case(name, reorder=True):
    arrays, config = load(name)
    mechanism, cell = make_wrapper(
        "BahdanauAttention", {}, {"attention_layer_size": 6, "alignment_history": True}, 8
    )
    penalties = {key: value for key, value in config.items() if key.endswith("_weight")}
    beam = config["beam_width"]
    decoder = seq2seq.BeamSearchDecoder(
        cell,
        beam_width=beam,
        output_layer=keras.layers.Dense(arrays["in_embedding"].shape[0]),
        maximum_iterations=config["maximum_iterations"],
        reorder_tensor_arrays=reorder,
        **penalties,
    )
    memory = seq2seq.tile_batch(arrays["in_memory"], beam)
    memory_length = seq2seq.tile_batch(arrays["in_memory_sequence_length"], beam)
    for attempt in range(2):  # build, then run with TFA's weights
        if attempt:
            assert [tuple(w.shape) for w in decoder.weights] == [
                w.shape for w in golden_weights(arrays)
            ]
            decoder.set_weights(golden_weights(arrays))
        mechanism.setup_memory(memory, memory_sequence_length=memory_length)
        state = cell.get_initial_state(
            batch_size=len(arrays["in_start_tokens"]) * beam, dtype=tf.float32
        )
        results = seq2seq.dynamic_decode(
            decoder,
            maximum_iterations=config["maximum_iterations"],
            decoder_init_input=arrays["in_embedding"],
            decoder_init_kwargs={
                "start_tokens": arrays["in_start_tokens"],
                "end_token": arrays["in_end_token"],
                "initial_state": state,
            },
        )
    return arrays, results


@pytest.mark.parametrize("name", BEAM_CASES)
def test_against_tfa(name):
    arrays, (outputs, state, lengths) = golden_beam_case(name)
    step = outputs.beam_search_decoder_output
    ours = {
        "predicted_ids": outputs.predicted_ids,
        "scores": step.scores,
        "step_predicted_ids": step.predicted_ids,
        "parent_ids": step.parent_ids,
        "lengths": lengths,
        "log_probs": state.log_probs,
        "final_lengths": state.lengths,
        "finished": state.finished,
    }
    for key, value in ours.items():
        expected = arrays[f"out_{key}"]
        difference = max_difference(expected, value)
        if np.issubdtype(expected.dtype, np.floating):
            assert difference <= 1e-4, f"{name} {key}: {difference}"
        else:
            assert difference == 0, f"{name} {key}"
            assert np.asarray(value).dtype == expected.dtype, key


@pytest.mark.parametrize("name", BEAM_CASES)
def test_the_loops_ids_are_gather_tree_of_the_steps(name):
    """The loop's token history equals TFA's `gather_tree` of the per-step ids, and the
    reordered alignment history equals `gather_tree_from_array` of the unordered one."""
    _, (outputs, state, _) = golden_beam_case(name)
    _, (_, unordered, _) = golden_beam_case(name, reorder=False)
    step = outputs.beam_search_decoder_output
    time_major = [tf.transpose(x, [1, 0, 2]) for x in (step.predicted_ids, step.parent_ids)]
    max_lengths = tf.reduce_max(tf.cast(state.lengths, tf.int32), axis=1)
    expected = seq2seq.gather_tree(*time_major, max_lengths, end_token=0)
    np.testing.assert_equal(np.transpose(expected.numpy(), [1, 0, 2]), outputs.predicted_ids)
    history = unordered.cell_state.alignment_history.stack()
    reordered = seq2seq.gather_tree_from_array(history, time_major[1], state.lengths)
    np.testing.assert_allclose(state.cell_state.alignment_history, reordered)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_in_a_graph_and_under_xla(jit_compile):
    """The decoder in `tf.function` (and compiled by XLA, which TFA's custom op could
    not be) gives TFA's ids and scores."""
    arrays, _ = load("beam_coverage_penalty")
    mechanism, cell = make_wrapper(
        "BahdanauAttention", {}, {"attention_layer_size": 6, "alignment_history": True}, 8
    )
    decoder = seq2seq.BeamSearchDecoder(
        cell,
        beam_width=3,
        output_layer=keras.layers.Dense(9),
        maximum_iterations=7,
        length_penalty_weight=0.6,
        coverage_penalty_weight=0.4,
    )
    memory = seq2seq.tile_batch(arrays["in_memory"], 3)
    memory_length = seq2seq.tile_batch(arrays["in_memory_sequence_length"], 3)

    def run():
        mechanism.setup_memory(memory, memory_sequence_length=memory_length)
        state = cell.get_initial_state(batch_size=9, dtype=tf.float32)
        outputs, _, _ = decoder(
            arrays["in_embedding"],
            start_tokens=arrays["in_start_tokens"],
            end_token=0,
            initial_state=state,
        )
        return outputs.predicted_ids, outputs.beam_search_decoder_output.scores

    run()
    decoder.set_weights(golden_weights(arrays))
    predicted_ids, scores = tf.function(run, jit_compile=jit_compile)()
    np.testing.assert_equal(predicted_ids.numpy(), arrays["out_predicted_ids"])
    assert max_difference(arrays["out_scores"], scores) <= 1e-4


def test_config_round_trip_with_an_embedding_layer():
    decoder = seq2seq.BeamSearchDecoder(
        keras.layers.GRUCell(8),
        beam_width=3,
        embedding_fn=keras.layers.Embedding(6, 5),
        output_layer=keras.layers.Dense(6),
        maximum_iterations=4,
        length_penalty_weight=0.5,
        coverage_penalty_weight=0.0,
        output_all_scores=True,
    )
    restored = seq2seq.BeamSearchDecoder.from_config(decoder.get_config())
    assert restored.get_config() == decoder.get_config()
    state = restored.cell.get_initial_state(batch_size=6)
    outputs, _, lengths = restored(None, start_tokens=[1, 1], end_token=0, initial_state=state)
    steps = int(np.max(lengths.numpy()))
    assert tuple(outputs.beam_search_decoder_output.scores.shape) == (2, steps, 3, 6)
