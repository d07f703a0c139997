"""`BeamSearchDecoder`'s n-best and alignment history against NumPy references.

- n-best: every final beam, best first, in `FinalBeamSearchDecoderOutput.predicted_ids`
  `(batch, T, beam_width)`, its ranking score in the last step's
  `beam_search_decoder_output.scores` and its log-probability in the final state's
  `log_probs`. A cell whose logits are a fixed table (by sentence, step and previous
  token) is checked against an exhaustive enumeration of every hypothesis (a beam wide
  enough to hold them all) and against a plain NumPy beam search with TFA's rules.
- alignment history: with `AttentionWrapper(alignment_history=True)`, the final
  state's history (TFA's layout: time major, `(T, batch * beam_width, memory_time)`) is
  the step-order history with each final beam's rows taken from its ancestors, found
  by walking the recorded parent ids back in NumPy.
"""

import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention import seq2seq

pytestmark = pytest.mark.tensorflow_only


class TableCell(keras.layers.Layer):
    """Logits `table[sentence, step, previous_token]`; the state `[step, sentence]`, the
    input the previous token one-hot (an identity embedding)."""

    def __init__(self, table, **kwargs):
        super().__init__(**kwargs)
        self.table = tf.constant(table, tf.float32)
        self.state_size = 2
        self.output_size = table.shape[-1]

    def call(self, inputs, states, training=None):
        state = states[0]
        step, sentence = tf.cast(state[:, 0], tf.int32), tf.cast(state[:, 1], tf.int32)
        previous = tf.argmax(inputs, axis=-1, output_type=tf.int32)
        logits = tf.gather_nd(self.table, tf.stack([sentence, step, previous], axis=-1))
        return logits, [state + tf.constant([1.0, 0.0])]


def log_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def run_table_search(table, beam_width, length_penalty, start=1, end=0):
    batch, steps, vocab = table.shape[:3]
    decoder = seq2seq.BeamSearchDecoder(
        TableCell(table),
        beam_width=beam_width,
        maximum_iterations=steps,
        length_penalty_weight=length_penalty,
    )
    sentences = np.repeat(np.arange(batch, dtype=np.float32), beam_width)
    state = [tf.constant(np.stack([np.zeros_like(sentences), sentences], axis=-1))]
    outputs, final_state, _ = decoder(
        np.eye(vocab, dtype=np.float32),
        start_tokens=[start] * batch,
        end_token=end,
        initial_state=state,
    )
    return outputs, final_state


def hypotheses(log_probs, start, end):
    """Every hypothesis of `log_probs` `(T, V_prev, V)`: `(tokens, log_prob)`, those that
    end before T included (their tokens up to the end token)."""
    steps, _, vocab = log_probs.shape
    found = []
    for length in range(1, steps + 1):
        for tokens in itertools.product(range(vocab), repeat=length):
            if end in tokens[:-1] or (length < steps and tokens[-1] != end):
                continue
            previous = (start,) + tokens[:-1]
            score = sum(log_probs[t, previous[t], tokens[t]] for t in range(length))
            found.append((list(tokens), score))
    return found


def numpy_beam_search(log_probs, beam_width, alpha, start, end):
    """A plain beam search with TFA's rules: finished hypotheses stay in the beam at
    their score, the length penalty `((5 + n) / 6) ** alpha` counts the end token
    except on the step that emits it. Returns `(tokens, log_prob, score, length)`
    best first."""

    def penalty(n):
        return ((5.0 + n) / 6.0) ** alpha

    beams = [([], 0.0, 0, False)]  # tokens, log_prob, length, finished
    for t in range(log_probs.shape[0]):
        candidates = []
        for tokens, total, length, finished in beams:
            if finished:
                candidates.append((tokens + [end], total, length, True, total / penalty(length)))
                continue
            previous = tokens[-1] if tokens else start
            for token, value in enumerate(log_probs[t, previous]):
                ranked_length = length + 1 - (token == end)
                new_total = total + value
                score = new_total / penalty(ranked_length)
                candidates.append((tokens + [token], new_total, length + 1, token == end, score))
        candidates.sort(key=lambda c: -c[4])
        beams = [c[:4] for c in candidates[:beam_width]]
        scores = [c[4] for c in candidates[:beam_width]]
        if all(finished for *_, finished in beams):
            break
    return [(b[0], b[1], s, b[2]) for b, s in zip(beams, scores, strict=True)]


def test_n_best_is_every_hypothesis_sorted_by_log_probability():
    """Vocabulary 3 (end token 0), 3 steps: 15 hypotheses; a beam of 15 keeps them all,
    best first (no length penalty: the score is the log-probability)."""
    table = np.random.default_rng(7).normal(size=(2, 3, 3, 3)).astype(np.float32) * 2
    outputs, final_state = run_table_search(table, beam_width=15, length_penalty=0.0)
    for sentence in range(2):
        found = hypotheses(log_softmax(table[sentence].astype(np.float64)), start=1, end=0)
        assert len(found) == 15
        found.sort(key=lambda h: -h[1])
        expected_ids = np.array([tokens + [0] * (3 - len(tokens)) for tokens, _ in found]).T
        np.testing.assert_array_equal(outputs.predicted_ids[sentence], expected_ids)
        expected_scores = [score for _, score in found]
        np.testing.assert_allclose(final_state.log_probs[sentence], expected_scores, atol=1e-5)
        last_scores = outputs.beam_search_decoder_output.scores[sentence, -1]
        np.testing.assert_allclose(last_scores, expected_scores, atol=1e-5)


@pytest.mark.parametrize("length_penalty", [0.0, 0.8])
def test_n_best_matches_a_numpy_beam_search(length_penalty):
    """Vocabulary 4, beam 2, 5 steps, the end token likely: the beams, their ranking
    scores (last step), log-probabilities and lengths (end token counted)."""
    rng = np.random.default_rng(11)
    table = rng.normal(size=(3, 5, 4, 4)).astype(np.float32) * 2
    table[..., 0] += 1.0  # the end token (0)
    outputs, final_state = run_table_search(table, beam_width=2, length_penalty=length_penalty)
    predicted_ids = np.asarray(outputs.predicted_ids)
    last_scores = np.asarray(outputs.beam_search_decoder_output.scores)[:, -1]
    log_probs, lengths = np.asarray(final_state.log_probs), np.asarray(final_state.lengths)
    steps = predicted_ids.shape[1]
    for sentence in range(3):
        expected = numpy_beam_search(
            log_softmax(table[sentence].astype(np.float64)), 2, length_penalty, start=1, end=0
        )
        for beam, (tokens, log_prob, score, length) in enumerate(expected):
            padded = (tokens + [0] * steps)[:steps]
            np.testing.assert_array_equal(predicted_ids[sentence, :, beam], padded)
            assert log_probs[sentence, beam] == pytest.approx(log_prob, abs=1e-5)
            assert last_scores[sentence, beam] == pytest.approx(score, abs=1e-5)
            assert lengths[sentence, beam] == length
    assert len(set(lengths.ravel().tolist())) > 1  # some beams end early


def numpy_reordered_history(history, parent_ids, lengths):
    """Each final beam's alignment rows taken from its ancestors (walking the parent
    ids back from the last step); rows past a beam's length stay in place (TFA's
    `gather_tree_from_array`). `history` `(T, batch * beam, Tv)`, `parent_ids`
    `(batch, T, beam)`, `lengths` `(batch, beam)`."""
    steps, beam_width = parent_ids.shape[1], parent_ids.shape[2]
    reordered = history.copy()
    for sentence in range(parent_ids.shape[0]):
        for final_beam in range(beam_width):
            beam = final_beam
            for t in reversed(range(steps)):
                if t < lengths[sentence, final_beam]:
                    row = sentence * beam_width + final_beam
                    reordered[t, row] = history[t, sentence * beam_width + beam]
                beam = parent_ids[sentence, t, beam]
    return reordered


def test_alignment_history_follows_the_beams():
    batch, beam_width, vocab, memory_time, end = 2, 3, 7, 5, 2
    keras.utils.set_random_seed(3)
    memory = np.random.default_rng(5).normal(size=(batch, memory_time, 6)).astype("float32")
    mechanism = seq2seq.LuongAttention(6, memory=seq2seq.tile_batch(memory, beam_width))
    cell = seq2seq.AttentionWrapper(
        keras.layers.LSTMCell(6), mechanism, attention_layer_size=6, alignment_history=True
    )
    output_layer = keras.layers.Dense(
        vocab, bias_initializer=keras.initializers.Constant([0, 0, 2.0, 0, 0, 0, 0])
    )
    decoder = seq2seq.BeamSearchDecoder(
        cell, beam_width, output_layer=output_layer, maximum_iterations=6
    )
    embedding = np.random.default_rng(6).normal(size=(vocab, 4)).astype("float32")

    def run():
        state = cell.get_initial_state(batch_size=batch * beam_width, dtype=tf.float32)
        return decoder(embedding, start_tokens=[1] * batch, end_token=end, initial_state=state)

    outputs, final_state, _ = run()
    decoder.reorder_tensor_arrays = False
    _, unordered_state, _ = run()
    history = final_state.cell_state.alignment_history.numpy()
    step_order = unordered_state.cell_state.alignment_history.stack().numpy()
    steps = outputs.predicted_ids.shape[1]
    assert history.shape == (steps, batch * beam_width, memory_time)  # TFA's layout
    lengths = np.asarray(final_state.lengths)
    assert len(set(lengths.ravel().tolist())) > 1  # beams that ended early too
    parent_ids = np.asarray(outputs.beam_search_decoder_output.parent_ids)
    expected = numpy_reordered_history(step_order, parent_ids, lengths)
    np.testing.assert_allclose(history, expected, atol=1e-6)
    assert not np.allclose(history, step_order)  # the beams were reordered
    # Per beam: (batch, beam, T, memory_time).
    per_beam = np.transpose(history.reshape(steps, batch, beam_width, memory_time), [1, 2, 0, 3])
    within = np.arange(steps) < lengths[..., None]
    np.testing.assert_allclose(per_beam.sum(-1)[within], 1.0, atol=1e-5)
