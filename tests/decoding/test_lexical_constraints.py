"""`BeamSearch` with lexical constraints (dynamic beam allocation) on scripted bigram models.

References: a hand-worked example, and an exhaustive NumPy search over every output
that contains the phrases (on a vocabulary small enough to enumerate).
"""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from keras_attention.decoding import BeamSearch

PAD, START, END = 0, 1, 3
WORDS = (4, 5, 6)  # 2 is never emitted


def bigram_table(seed, vocab=7):
    """log P(next | previous) `(vocab, vocab)`: only the words and the end token possible."""
    rng = np.random.default_rng(seed)
    probs = np.zeros((vocab, vocab))
    probs[:, [*WORDS, END]] = rng.dirichlet(np.ones(len(WORDS) + 1) * 0.7, size=vocab)
    with np.errstate(divide="ignore"):
        return np.log(probs)


def next_fn_of(table):
    table = tf.constant(table, tf.float32)

    def next_fn(step, token_ids, state):
        return tf.gather(table, token_ids), state, tf.ones([tf.shape(token_ids)[0], 2])

    return next_fn


def contains(tokens, phrase):
    return any(tokens[i : i + len(phrase)] == phrase for i in range(len(tokens) - len(phrase) + 1))


def best_constrained(table, phrases, max_steps):
    """The most probable output (tokens before [END], log-prob) that contains every
    phrase, by enumeration: one that ends within `max_steps` steps, or (as beam search
    ranks it) one of `max_steps` tokens that never ended."""
    best = (None, -np.inf)
    for length in range(max_steps + 1):
        for tokens in itertools.product(WORDS, repeat=length):
            tokens = list(tokens)
            if not all(contains(tokens, list(p)) for p in phrases):
                continue
            path = [START, *tokens, END][: length + 2 if length < max_steps else length + 1]
            score = sum(table[a, b] for a, b in itertools.pairwise(path))
            if score > best[1]:
                best = (tokens, score)
    return best


def padded(rows):
    """Constraint ids `(batch, C, L)` padded with PAD from lists of phrases."""
    width = max([len(r) for r in rows] + [1])
    length = max([len(p) for r in rows for p in r] + [1])
    return tf.constant(
        [
            [[*p, *[PAD] * (length - len(p))] for p in r] + [[PAD] * length] * (width - len(r))
            for r in rows
        ],
        tf.int32,
    )


def test_a_hand_worked_example():
    # After [START]: word 4 0.6, word 5 0.3, [END] 0.1; after either word [END] 0.9.
    probs = np.full((7, 7), 1e-9)
    probs[START, [4, 5, END]] = [0.6, 0.3, 0.1]
    probs[4, [4, 5, END]] = [0.05, 0.05, 0.9]
    probs[5, [4, 5, END]] = [0.05, 0.05, 0.9]
    next_fn = next_fn_of(np.log(probs))
    beam = BeamSearch(beam_width=2, length_penalty=0.0, max_steps=4, end_id=END, pad_id=PAD)
    start = tf.constant([START, START])
    plain = beam(next_fn, (), start)
    assert plain.tokens.numpy()[:, 0].tolist() == [4, 4]
    result = beam(next_fn, (), start, constraints=padded([[[5]], [[5, 4]]]))
    # Row 0: "5" then [END] (0.3 * 0.9) beats every other output holding 5.
    assert result.tokens.numpy()[0, :2].tolist() == [5, PAD]
    assert result.lengths.numpy()[0] == 1
    np.testing.assert_allclose(result.scores.numpy()[0], np.log(0.3 * 0.9), rtol=1e-5)
    # Row 1: "5 4" then [END]: 0.3 * 0.05 * 0.9 (4 5 4 or 5 4 4 score less).
    assert result.tokens.numpy()[1, :3].tolist() == [5, 4, PAD]
    np.testing.assert_allclose(result.scores.numpy()[1], np.log(0.3 * 0.05 * 0.9), rtol=1e-5)


@pytest.mark.parametrize("seed", range(4))
def test_the_search_finds_the_best_output_that_holds_the_phrases(seed):
    table = bigram_table(seed)
    rng = np.random.default_rng(100 + seed)
    phrases = [list(rng.choice(WORDS, size=n)) for n in (1, 2)][: 1 + seed % 2]
    max_steps = 5
    want_tokens, want_score = best_constrained(table, phrases, max_steps)
    beam = BeamSearch(beam_width=8, length_penalty=0.0, max_steps=max_steps, end_id=END)
    result = beam(next_fn_of(table), (), tf.constant([START]), constraints=padded([phrases]))
    length = int(result.lengths.numpy()[0])
    tokens = result.tokens.numpy()[0, :length].tolist()
    for phrase in phrases:
        assert contains(tokens, [int(t) for t in phrase]), (tokens, phrases)
    assert tokens == want_tokens
    np.testing.assert_allclose(result.scores.numpy()[0], want_score, rtol=1e-5)


ROWS = [[[4, 6]], [], [[5], [6, 6]], []]


@pytest.mark.parametrize("drop_finished", [False, True])
@pytest.mark.parametrize("n_best", [None, 2])
def test_every_phrase_appears_and_rows_without_decode_as_plain_beam_search(drop_finished, n_best):
    table = bigram_table(7)
    next_fn = next_fn_of(table)
    beam = BeamSearch(
        beam_width=3, max_steps=12, end_id=END, n_best=n_best, drop_finished=drop_finished
    )
    start = tf.fill([len(ROWS)], START)
    plain = beam(next_fn, (), start)
    result = beam(next_fn, (), start, constraints=padded(ROWS))
    tokens, lengths = result.tokens.numpy(), result.lengths.numpy()
    for row, phrases in enumerate(ROWS):
        best = (row, 0) if n_best else (row,)
        if phrases:
            out = tokens[best][: lengths[best]].tolist()
            assert all(contains(out, p) for p in phrases), (out, phrases)
            assert lengths[best] < 12  # it ended: [END] came after every phrase
        else:
            steps = plain.tokens.shape[-1]  # the constrained batch may run longer
            for field in ("tokens", "token_scores"):
                got, want = getattr(result, field).numpy()[row], getattr(plain, field).numpy()[row]
                np.testing.assert_array_equal(got[..., :steps], want)
                assert not got[..., steps:].any()
            np.testing.assert_array_equal(result.lengths.numpy()[row], plain.lengths.numpy()[row])
            np.testing.assert_array_equal(result.scores.numpy()[row], plain.scores.numpy()[row])


def _searches():
    next_fn = next_fn_of(bigram_table(8))
    beam = BeamSearch(beam_width=3, max_steps=10, end_id=END)
    start = tf.fill([len(ROWS)], START)
    return next_fn, beam, start


def test_no_phrases_decode_as_plain_beam_search_and_a_graph_as_eagerly():
    next_fn, beam, start = _searches()
    plain = beam(next_fn, (), start)
    empty = beam(next_fn, (), start, constraints=tf.zeros([len(ROWS), 0, 0], tf.int32))
    np.testing.assert_array_equal(empty.tokens.numpy(), plain.tokens.numpy())
    np.testing.assert_array_equal(empty.scores.numpy(), plain.scores.numpy())
    eager = beam(next_fn, (), start, constraints=padded(ROWS))
    graph = tf.function(lambda ids: beam(next_fn, (), start, constraints=ids))(padded(ROWS))
    np.testing.assert_array_equal(graph.tokens.numpy(), eager.tokens.numpy())
    np.testing.assert_allclose(graph.scores.numpy(), eager.scores.numpy(), rtol=1e-6)


@pytest.mark.slow
def test_xla_compiles_the_constrained_search_to_the_same_results():
    next_fn, beam, start = _searches()
    eager = beam(next_fn, (), start, constraints=padded(ROWS))
    compiled = tf.function(lambda ids: beam(next_fn, (), start, constraints=ids), jit_compile=True)(
        padded(ROWS)
    )
    np.testing.assert_array_equal(compiled.tokens.numpy(), eager.tokens.numpy())
    np.testing.assert_allclose(compiled.scores.numpy(), eager.scores.numpy(), rtol=1e-6)
