import math

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers.reference_decoders import (
    END,
    PAD,
    START,
    PrefixModel,
    normalized,
    scripted_next_fn,
    table_next_fn,
)

from keras_attention.decoding import BeamSearch, GreedySearch

MODES = ["eager", "function", "xla"]


def run(strategy, next_fn, state, start_ids, mode="eager"):
    """Runs `strategy` eagerly, in tf.function, or in tf.function(jit_compile=True)."""
    if mode == "eager":
        return strategy(next_fn, state, start_ids)
    fn = tf.function(lambda s, x: strategy(next_fn, s, x), jit_compile=(mode == "xla"))
    return fn(state, start_ids)


def assert_same_results(got, want):
    """Tokens and lengths equal; scores and attention up to float32 rounding (the
    log-softmax of a smaller batch may round differently: 1 ulp seen)."""
    np.testing.assert_array_equal(got.tokens, want.tokens)
    np.testing.assert_array_equal(got.lengths, want.lengths)
    np.testing.assert_allclose(got.scores, want.scores, rtol=1e-6)
    np.testing.assert_allclose(got.attention, want.attention, rtol=1e-6, atol=1e-7)


def markov_table(rows: dict, vocab_size: int, max_steps: int) -> np.ndarray:
    """Log-prob table (max_steps, V, V); `rows[(step, prev)]` = {token: prob}.

    Unlisted (step, prev) rows are uniform. Within a listed row, the mass not
    given to listed tokens is spread evenly over the others.
    """
    table = np.full([max_steps, vocab_size, vocab_size], 1.0 / vocab_size)
    for (step, prev), probs in rows.items():
        rest = [t for t in range(vocab_size) if t not in probs]
        remaining = 1.0 - sum(probs.values())
        assert remaining > 0  # a test table, not library code
        row = np.full([vocab_size], remaining / len(rest))
        for token, p in probs.items():
            row[token] = p
        steps = range(max_steps) if step is None else [step]
        for s in steps:
            table[s, prev] = row
    return np.log(table)


# Vocabulary of the hand-built tables: 0 pad, 1 start, 2 "a", 3 end, 4 "b", 5 "c".
A, B, C = 2, 4, 5


@pytest.mark.parametrize("mode", MODES)
def test_beam_beats_greedy_where_greedy_is_fooled(mode):
    # P(a) = .5 > P(b) = .4, but nothing is likely after a, while b -> END (.9).
    rows = {
        (None, START): {A: 0.5, B: 0.4, END: 0.05},
        (None, A): {A: 0.36, B: 0.34, END: 0.25},
        (None, B): {END: 0.9, A: 0.03, B: 0.03},
    }
    table = markov_table(rows, vocab_size=6, max_steps=3)
    next_fn = table_next_fn(table)
    greedy = run(GreedySearch(max_steps=3), next_fn, (), tf.constant([START]), mode)
    np.testing.assert_array_equal(greedy.tokens.numpy(), [[A, A, A]])
    np.testing.assert_allclose(greedy.scores.numpy(), [math.log(0.5 * 0.36 * 0.36)], rtol=1e-5)

    beam = run(
        BeamSearch(beam_width=2, length_penalty=0.0, max_steps=3),
        next_fn,
        (),
        tf.constant([START]),
        mode,
    )
    np.testing.assert_array_equal(beam.tokens.numpy()[:, :1], [[B]])
    assert np.all(beam.tokens.numpy()[:, 1:] == PAD)
    np.testing.assert_array_equal(beam.lengths.numpy(), [1])
    np.testing.assert_allclose(beam.scores.numpy(), [math.log(0.4 * 0.9)], rtol=1e-5)


# "a END" (score -1.0) against "b b b END" (score -1.2), everything else unlikely.
LENGTH_ROWS = {
    (0, START): {A: math.exp(-0.9), B: math.exp(-0.6)},
    (1, A): {END: math.exp(-0.1)},
    (1, B): {B: math.exp(-0.2)},
    (2, B): {B: math.exp(-0.15)},
    (3, B): {END: math.exp(-0.25)},
}


@pytest.mark.parametrize("alpha, expected", [(0.0, [A]), (1.0, [B, B, B])])
@pytest.mark.parametrize("mode", ["eager", "xla"])
def test_length_penalty_changes_the_choice(alpha, expected, mode):
    # Hand computation, len counting the end token:
    #   short: -1.0 / ((5 + 2) / 6) ** alpha   long: -1.2 / ((5 + 4) / 6) ** alpha
    #   alpha = 0: -1.0   > -1.2    -> short
    #   alpha = 1: -0.857 < -0.800  -> long
    short, long = normalized(-1.0, 2, alpha), normalized(-1.2, 4, alpha)
    assert (short > long) == (alpha == 0.0)
    table = markov_table(LENGTH_ROWS, vocab_size=6, max_steps=5)
    result = run(
        BeamSearch(beam_width=2, length_penalty=alpha, max_steps=5),
        table_next_fn(table),
        (),
        tf.constant([START]),
        mode,
    )
    n = len(expected)
    np.testing.assert_array_equal(result.tokens.numpy()[0, :n], expected)
    assert np.all(result.tokens.numpy()[0, n:] == PAD)
    np.testing.assert_array_equal(result.lengths.numpy(), [n])
    np.testing.assert_allclose(result.scores.numpy(), [-1.0 if n == 1 else -1.2], rtol=1e-5)
    # Both hypotheses finished by step 4, so the loop ran 4 of 5 steps.
    assert result.tokens.shape[1] == 4


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.5])
@pytest.mark.parametrize("drop_finished", [False, True])
def test_exhaustive_beam_finds_the_brute_force_best(seed, alpha, drop_finished):
    """With more beams than hypotheses nothing is pruned: beam == enumeration.

    PrefixModel's distribution depends on the whole prefix, kept in the state,
    so this also checks the state and the attention follow their hypotheses.
    """
    model = PrefixModel(batch_size=2, max_steps=4, seed=seed)
    # At most 16 running + 15 finished hypotheses over 2 content tokens.
    beam = BeamSearch(beam_width=32, length_penalty=alpha, max_steps=4, drop_finished=drop_finished)
    result = beam(model.next_fn, model.initial_state(), model.start_ids())
    for b in range(2):
        model.assert_result_row(result, b, *model.exhaustive_best(b, alpha))


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_beam_width_one_equals_greedy(seed):
    model = PrefixModel(batch_size=3, max_steps=5, seed=seed)
    args = (model.next_fn, model.initial_state(), model.start_ids())
    greedy = GreedySearch(max_steps=5)(*args)
    beam = BeamSearch(beam_width=1, length_penalty=0.6, max_steps=5)(*args)
    np.testing.assert_array_equal(beam.tokens.numpy(), greedy.tokens.numpy())
    np.testing.assert_array_equal(beam.lengths.numpy(), greedy.lengths.numpy())
    np.testing.assert_allclose(beam.scores.numpy(), greedy.scores.numpy(), rtol=1e-6)
    np.testing.assert_allclose(beam.attention.numpy(), greedy.attention.numpy(), atol=1e-7)


# Seeds whose best outputs are long enough (>= 3 tokens) to check t >= 2.
@pytest.mark.parametrize("seed", [0, 1, 2, 4, 5])
@pytest.mark.parametrize("drop_finished", [False, True])
def test_state_and_attention_follow_their_hypotheses(seed, drop_finished):
    """Attention = (one_hot(token fed now) + one_hot(state)) / 2.

    The state echoes the token fed one step earlier, so at step t the
    (reordered) state holds the token fed to this hypothesis' parent: PAD at
    t = 0, START at t = 1, then tokens[t - 2]; the token fed now is START at
    t = 0, then tokens[t - 1]. A state or an attention row that stayed with
    the wrong hypothesis shows up in the result.
    """
    rng = np.random.default_rng(seed)
    vocab_size, max_steps = 6, 5
    logits = rng.normal(scale=2.0, size=[max_steps, vocab_size, vocab_size])
    logits[..., PAD] = -np.inf
    logits[..., START] = -np.inf
    # End likelier at each step (impossible at step 0): varied lengths, most >= 2.
    logits[..., END] += 1.5 * (np.arange(max_steps)[:, np.newaxis] - 3.0)
    logits[0, :, END] = -np.inf
    table = tf.constant(logits, tf.float32)

    def next_fn(step, token_ids, state):
        attention = (tf.one_hot(token_ids, vocab_size) + tf.one_hot(state, vocab_size)) / 2
        return tf.gather(table[step], token_ids), token_ids, attention

    result = BeamSearch(beam_width=3, max_steps=max_steps, drop_finished=drop_finished)(
        next_fn, tf.fill([2], PAD), tf.fill([2], START)
    )
    for b in range(2):
        n = int(result.lengths[b])
        tokens = result.tokens[b].numpy()
        fed = [START] + list(tokens[: max(n - 1, 0)])
        previous = [PAD, START] + list(tokens[: max(n - 2, 0)])
        expected = np.zeros([result.tokens.shape[1], vocab_size])
        expected[np.arange(n), fed[:n]] += 0.5
        expected[np.arange(n), previous[:n]] += 0.5
        np.testing.assert_array_equal(result.attention[b].numpy(), expected)
    assert int(result.lengths.numpy().max()) >= 3  # the check reached t >= 2


@pytest.mark.parametrize("mode", MODES)
def test_scripted_per_sentence_early_stop(mode):
    script = np.array([[5, 6, END, 7, 7, 7], [5, END, 8, 8, 8, 8], [9, 8, 7, 6, END, 6]])
    result = run(
        BeamSearch(beam_width=3, max_steps=6),
        scripted_next_fn(script, vocab_size=10, tv=6),
        (),
        tf.fill([3], START),
        mode,
    )
    np.testing.assert_array_equal(
        result.tokens.numpy()[:, :4], [[5, 6, 0, 0], [5, 0, 0, 0], [9, 8, 7, 6]]
    )
    assert np.all(result.tokens.numpy()[:, 4:] == PAD)
    np.testing.assert_array_equal(result.lengths.numpy(), [2, 1, 4])
    np.testing.assert_allclose(result.scores.numpy(), [0.0, 0.0, 0.0])
    expected = np.zeros([3, result.tokens.shape[1], 6])
    for b, n in enumerate([2, 1, 4]):
        expected[b, np.arange(n), np.arange(n)] = 1.0
    np.testing.assert_array_equal(result.attention.numpy(), expected)


@pytest.mark.parametrize("batch_size", [1, 48])
def test_batch_sizes_match_per_sentence_decoding(batch_size):
    model = PrefixModel(batch_size=batch_size, max_steps=3, seed=batch_size)
    beam = BeamSearch(beam_width=3, length_penalty=0.6, max_steps=3)
    result = beam(model.next_fn, model.initial_state(), model.start_ids())
    # Decoding sentence b alone (its own table) must give the same answer.
    for b in sorted({0, batch_size // 2, batch_size - 1}):
        state = {"sentence": tf.constant([b]), "code": tf.constant([0])}
        alone = beam(model.next_fn, state, tf.constant([START]))
        n = int(alone.lengths[0])
        assert int(result.lengths[b]) == n
        np.testing.assert_array_equal(result.tokens[b, :n].numpy(), alone.tokens[0, :n].numpy())
        np.testing.assert_allclose(float(result.scores[b]), float(alone.scores[0]), rtol=1e-6)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_unknown_tv_and_batch_in_tf_function(jit_compile):
    model = PrefixModel(batch_size=2, max_steps=4, seed=7)

    def decode(values, start_ids):
        def next_fn(step, token_ids, state):
            logits, state, _ = model.next_fn(step, token_ids, state)
            # attention over Tv (unknown statically), depending on the hypothesis.
            scores = values * tf.cast(state["code"] % 7, tf.float32)[:, tf.newaxis]
            return logits, state, tf.nn.softmax(scores, axis=-1)

        state = {
            "sentence": tf.range(tf.shape(start_ids)[0]),
            "code": tf.zeros_like(start_ids),
        }
        return BeamSearch(beam_width=3, max_steps=4)(next_fn, state, start_ids)

    # values: (batch * beam, Tv) would need tiling; use one row broadcast to all.
    signature = [tf.TensorSpec([None], tf.float32), tf.TensorSpec([None], tf.int32)]
    values = tf.constant([0.1, -0.3, 0.7, 0.2, 0.0])
    start_ids = model.start_ids()
    got = tf.function(decode, input_signature=signature, jit_compile=jit_compile)(values, start_ids)
    want = decode(values, start_ids)
    assert got.attention.shape == (2, want.tokens.shape[1], 5)
    np.testing.assert_array_equal(got.tokens.numpy(), want.tokens.numpy())
    np.testing.assert_allclose(got.scores.numpy(), want.scores.numpy(), rtol=1e-5)
    np.testing.assert_allclose(got.attention.numpy(), want.attention.numpy(), atol=1e-6)
    # Rows >= length are zero, rows < length are distributions.
    for b in range(2):
        n = int(want.lengths[b])
        np.testing.assert_allclose(want.attention[b, :n].numpy().sum(-1), 1.0, rtol=1e-5)
        assert np.all(want.attention[b, n:].numpy() == 0)


def test_more_beams_than_candidates():
    # Vocabulary of 4 with pad and start impossible: 2 live tokens per step,
    # 8 beams -> some hypotheses are -inf from the start; they must not win
    # nor keep the loop running.
    logits = np.full([3, 4, 4], 0.0, np.float32)
    logits[..., PAD] = -np.inf
    logits[..., START] = -np.inf
    logits[:, :, END] = 1.0
    result = BeamSearch(beam_width=8, max_steps=3)(table_next_fn(logits), (), tf.constant([START]))
    np.testing.assert_array_equal(result.lengths.numpy(), [0])
    assert np.isfinite(result.scores.numpy()).all()
    np.testing.assert_allclose(result.scores.numpy(), [np.log(np.e / (np.e + 1))], rtol=1e-6)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"beam_width": 0}, "beam_width=0"),
        ({"beam_width": 2.5}, "beam_width=2.5"),
        ({"beam_width": True}, "beam_width=True"),
        ({"length_penalty": -0.1}, "length_penalty=-0.1"),
        ({"length_penalty": float("nan")}, "length_penalty=nan"),
        ({"length_penalty": "0.6"}, "length_penalty='0.6'"),
        ({"max_steps": 0}, "max_steps=0"),
        ({"end_id": -1}, "end_id=-1"),
        ({"pad_id": None}, "pad_id=None"),
    ],
)
def test_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        BeamSearch(**kwargs)


def test_config_round_trip():
    beam = BeamSearch(beam_width=5, length_penalty=1.0, max_steps=7, end_id=2, pad_id=1)
    config = beam.get_config()
    assert config == {
        "beam_width": 5,
        "length_penalty": 1.0,
        "max_steps": 7,
        "end_id": 2,
        "pad_id": 1,
    }
    assert BeamSearch.from_config(config).get_config() == config
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(beam))
    assert isinstance(restored, BeamSearch) and restored.get_config() == config


def test_runs_in_a_v1_session_from_a_saved_model(tmp_path):
    """The serving path: SavedModel loaded by tf.compat.v1 and run by a Session."""
    model = PrefixModel(batch_size=2, max_steps=4, seed=3)

    class Exported(tf.Module):
        def __init__(self):
            super().__init__()
            self.logits = tf.Variable(model.logits)
            self.attention = tf.Variable(model.attention_logits)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.int32, name="sentence")])
        def decode(self, sentence):
            def next_fn(step, token_ids, state):
                code = state["code"] * 6 + token_ids + 1
                index = tf.stack([state["sentence"], code], axis=1)
                attention = tf.nn.softmax(tf.gather_nd(self.attention, index), axis=-1)
                new_state = {"sentence": state["sentence"], "code": code}
                return tf.gather_nd(self.logits, index), new_state, attention

            state = {"sentence": sentence, "code": tf.zeros_like(sentence)}
            start = tf.fill(tf.shape(sentence), START)
            result = BeamSearch(beam_width=3, max_steps=4)(next_fn, state, start)
            return result._asdict()

    module = Exported()
    path = str(tmp_path / "1")
    tf.saved_model.save(module, path, signatures={"serving_default": module.decode})
    want = module.decode(tf.constant([0, 1]))

    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
        meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], path)
        signature = meta.signature_def["serving_default"]
        fetches = {key: info.name for key, info in signature.outputs.items()}
        got = sess.run(fetches, {signature.inputs["sentence"].name: np.array([0, 1], np.int32)})
    for key in ("tokens", "lengths", "scores", "attention"):
        np.testing.assert_allclose(got[key], want[key].numpy(), rtol=1e-6)


def ranked_hypotheses(model: PrefixModel, sentence: int, alpha: float):
    """Every (tokens, ended) of `model`, best first under the GNMT-normalized score."""
    import itertools

    hypotheses = []
    for n in range(model.max_steps + 1):
        ended = n < model.max_steps
        for tokens in itertools.product(model.content, repeat=n):
            score, _ = model.score(sentence, tokens, ended)
            hypotheses.append((normalized(score, n + 1 if ended else n, alpha), tokens, ended))
    hypotheses.sort(key=lambda h: -h[0])
    return [(tokens, ended) for _, tokens, ended in hypotheses]


@pytest.mark.parametrize("seed, alpha", [(0, 0.0), (1, 0.6), (2, 1.5)])
@pytest.mark.parametrize("drop_finished", [False, True])
def test_n_best_lists_the_enumerations_ranking(seed, alpha, drop_finished):
    """With beams for every hypothesis, the n-best list is the enumeration's top n."""
    model = PrefixModel(batch_size=2, max_steps=4, seed=seed)
    beam = BeamSearch(
        beam_width=32, length_penalty=alpha, max_steps=4, n_best=6, drop_finished=drop_finished
    )
    result = beam(model.next_fn, model.initial_state(), model.start_ids())
    assert result.tokens.shape[:2] == (2, 6) and result.attention.shape[:2] == (2, 6)
    for b in range(2):
        for rank, (tokens, ended) in enumerate(ranked_hypotheses(model, b, alpha)[:6]):
            row = type(result)(*(field[:, rank] for field in result))
            model.assert_result_row(row, b, tokens, ended)


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_n_best_one_is_the_best_hypothesis_with_an_axis(mode):
    model = PrefixModel(batch_size=3, max_steps=5, seed=2)
    args = (model.next_fn, model.initial_state(), model.start_ids())
    best = run(BeamSearch(beam_width=3, max_steps=5), *args, mode)
    listed = run(BeamSearch(beam_width=3, max_steps=5, n_best=1), *args, mode)
    for field, listed_field in zip(best, listed, strict=True):
        np.testing.assert_array_equal(listed_field.numpy()[:, 0], field.numpy())


@pytest.mark.parametrize("drop_finished", [False, True])
def test_tensor_options_in_one_graph_equal_python_values(drop_finished):
    """One traced graph, the beam width (and penalty, steps, n-best) fed as tensors."""
    model = PrefixModel(batch_size=3, max_steps=5, seed=4)
    state, start_ids = model.initial_state(), model.start_ids()
    strategy = BeamSearch(beam_width=2, max_steps=5, n_best=1, drop_finished=drop_finished)

    @tf.function(
        input_signature=[tf.TensorSpec([], tf.int32)] * 3 + [tf.TensorSpec([], tf.float32)]
    )
    def decode(beam_width, n_best, max_steps, length_penalty):
        return strategy(
            model.next_fn,
            state,
            start_ids,
            beam_width=beam_width,
            n_best=n_best,
            max_steps=max_steps,
            length_penalty=length_penalty,
        )

    for width, n_best, steps, alpha in [
        (1, 1, 5, 0.6),
        (3, 2, 5, 0.0),
        (5, 5, 3, 1.0),
        (8, 3, 4, 0.6),
    ]:
        got = decode(width, n_best, steps, alpha)
        want = BeamSearch(beam_width=width, length_penalty=alpha, max_steps=steps, n_best=n_best)(
            model.next_fn, state, start_ids
        )
        for got_field, want_field in zip(got, want, strict=True):
            np.testing.assert_array_equal(got_field.numpy(), want_field.numpy())
    assert decode.experimental_get_tracing_count() == 1


@pytest.mark.parametrize(
    "options, match",
    [
        ({"n_best": 3}, "n_best=3, beam_width=2"),
        ({"n_best": 0}, "n_best=0"),
        ({"max_steps": 6}, "max_steps=6"),
        ({"temperature": 1.0}, "call options"),
    ],
)
def test_invalid_call_options(options, match):
    model = PrefixModel(batch_size=1, max_steps=5, seed=0)
    with pytest.raises(ValueError, match=match):
        BeamSearch(beam_width=2, max_steps=5)(
            model.next_fn, model.initial_state(), model.start_ids(), **options
        )


def test_drop_finished_config():
    strategy = BeamSearch(beam_width=3, drop_finished=True)
    assert strategy.get_config()["drop_finished"] is True
    assert BeamSearch.from_config(strategy.get_config()).drop_finished is True
    assert "drop_finished" not in BeamSearch().get_config()
    with pytest.raises(ValueError, match="drop_finished"):
        BeamSearch(drop_finished="yes")
