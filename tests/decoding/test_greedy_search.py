import numpy as np
import pytest
import tensorflow as tf
from helpers.reference_decoders import END, PAD, START, PrefixModel, scripted_next_fn

from keras_attention.decoding import DecodeResult, GreedySearch
from keras_attention.decoding.decoding_strategy import in_xla_context


def run(strategy, next_fn, state, start_ids, mode):
    """Runs `strategy` eagerly, in tf.function, or in tf.function(jit_compile=True)."""
    if mode == "eager":
        return strategy(next_fn, state, start_ids)
    fn = tf.function(lambda s, x: strategy(next_fn, s, x), jit_compile=(mode == "xla"))
    return fn(state, start_ids)


MODES = ["eager", "function", "xla"]


@pytest.mark.parametrize("mode", MODES)
def test_scripted_ids_lengths_and_early_stop(mode):
    # Sentence 0 ends at step 2, sentence 1 at step 1, sentence 2 at step 3;
    # max_steps 8, so the loop must stop after 4 steps.
    script = np.array(
        [
            [5, 6, END, 7, 7, 7, 7, 7],
            [5, END, 8, 8, 8, 8, 8, 8],
            [9, 8, 7, END, 6, 6, 6, 6],
        ]
    )
    result = run(
        GreedySearch(max_steps=8),
        scripted_next_fn(script, vocab_size=10, tv=8),
        (),
        tf.fill([3], START),
        mode,
    )
    assert isinstance(result, DecodeResult)
    np.testing.assert_array_equal(
        result.tokens.numpy(), [[5, 6, PAD, PAD], [5, PAD, PAD, PAD], [9, 8, 7, PAD]]
    )
    np.testing.assert_array_equal(result.lengths.numpy(), [2, 1, 3])
    np.testing.assert_allclose(result.scores.numpy(), [0.0, 0.0, 0.0])
    # attention of step t is one_hot(t); rows >= length are zero.
    expected = np.zeros([3, 4, 8])
    for b, n in enumerate([2, 1, 3]):
        expected[b, np.arange(n), np.arange(n)] = 1.0
    np.testing.assert_array_equal(result.attention.numpy(), expected)
    assert result.tokens.dtype == tf.int32 and result.lengths.dtype == tf.int32
    assert result.scores.dtype == tf.float32 and result.attention.dtype == tf.float32


@pytest.mark.parametrize("mode", MODES)
def test_never_ending_sentence_stops_at_max_steps(mode):
    script = np.array([[4, 5, 6, 7, 8], [4, END, 6, 7, 8]])
    result = run(
        GreedySearch(max_steps=5),
        scripted_next_fn(script, vocab_size=9),
        (),
        tf.fill([2], START),
        mode,
    )
    np.testing.assert_array_equal(result.tokens.numpy(), [[4, 5, 6, 7, 8], [4, 0, 0, 0, 0]])
    np.testing.assert_array_equal(result.lengths.numpy(), [5, 1])


def test_scores_hand_computed_and_frozen_after_end():
    # Probabilities by step (rows: vocabulary 0..5); the greedy path is 2, 4, END.
    # After END the table still puts mass on 5, which must not reach the score.
    probs = np.array(
        [
            [0.05, 0.05, 0.5, 0.1, 0.2, 0.1],  # step 0: 2 (0.5)
            [0.05, 0.05, 0.1, 0.2, 0.4, 0.2],  # step 1: 4 (0.4)
            [0.05, 0.05, 0.1, 0.6, 0.1, 0.1],  # step 2: END (0.6)
            [0.05, 0.05, 0.1, 0.1, 0.1, 0.6],  # step 3: 5 (0.6), after END
        ]
    )
    table = tf.math.log(tf.constant(probs, tf.float32))

    def next_fn(step, token_ids, state):
        rows = tf.shape(token_ids)[0]
        # Sentence 1 sees step 3's row from the start: 5, 5, 5, 5.
        logits = tf.stack([table[step], table[3]])[:rows]
        return logits, state, tf.ones([rows, 2])

    result = GreedySearch(max_steps=4)(next_fn, (), tf.constant([START, START]))
    expected = [np.log(0.5) + np.log(0.4) + np.log(0.6), 4 * np.log(0.6)]
    np.testing.assert_allclose(result.scores.numpy(), expected, rtol=1e-6)
    np.testing.assert_array_equal(result.tokens.numpy(), [[2, 4, 0, 0], [5, 5, 5, 5]])
    np.testing.assert_array_equal(result.lengths.numpy(), [2, 4])
    # Each token's log-probability, the end token's at position `length`.
    np.testing.assert_allclose(
        np.exp(result.token_scores.numpy()), [[0.5, 0.4, 0.6, 1.0], [0.6, 0.6, 0.6, 0.6]], rtol=1e-6
    )


def test_previous_tokens_are_fed_back():
    # A chain: START -> 2 -> 4 -> 5 -> END, driven only by the fed token.
    successor = {START: 2, 2: 4, 4: 5, 5: END, END: 6, PAD: 6}
    table = np.full([7, 7], -5.0, np.float32)
    for prev, nxt in successor.items():
        table[prev, nxt] = 5.0
    fed = []

    def next_fn(step, token_ids, state):
        fed.append(token_ids)
        return tf.gather(table, token_ids), state, tf.zeros([tf.shape(token_ids)[0], 1])

    result = GreedySearch(max_steps=6)(next_fn, (), tf.constant([START]))
    np.testing.assert_array_equal(result.tokens.numpy(), [[2, 4, 5, 0]])
    # Eagerly, the loop body runs once per step: START, 2, 4, 5.
    assert [int(x[0]) for x in fed] == [START, 2, 4, 5]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_numpy_greedy_on_prefix_model(seed):
    model = PrefixModel(batch_size=3, max_steps=4, seed=seed)
    result = GreedySearch(max_steps=4)(model.next_fn, model.initial_state(), model.start_ids())
    refs = [model.greedy(b) for b in range(3)]
    steps = max(len(tokens) + int(ended) for tokens, ended in refs)
    assert result.tokens.shape[1] == steps
    for b, (tokens, ended) in enumerate(refs):
        model.assert_result_row(result, b, tokens, ended)


@pytest.mark.parametrize("batch_size", [1, 64])
def test_batch_sizes(batch_size):
    rng = np.random.default_rng(batch_size)
    script = rng.integers(4, 9, size=[batch_size, 6])
    ends = rng.integers(0, 6, size=[batch_size])
    script[np.arange(batch_size), ends] = END
    result = GreedySearch(max_steps=6)(
        scripted_next_fn(script, vocab_size=9), (), tf.fill([batch_size], START)
    )
    for b in range(batch_size):
        n = int(np.argmax(script[b] == END))
        assert int(result.lengths[b]) == n
        np.testing.assert_array_equal(result.tokens[b, :n].numpy(), script[b, :n])
        assert np.all(result.tokens[b, n:].numpy() == PAD)
    assert result.tokens.shape == (batch_size, int(ends.max()) + 1)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_unknown_tv_batch_and_nested_state_in_tf_function(jit_compile):
    """Tv and batch unknown statically; a nested state whose batch dim gets lost."""
    vocab_size = 6

    def decode(values, start_ids):
        # values: (batch, Tv, 2); attention = softmax over Tv of a step-dependent score.
        kernel = tf.constant([[1.0, 0.0, 2.0, 0.5, 0.0, 0.0], [0.0, 1.0, 0.0, -3.0, 0.2, 0.1]])

        def next_fn(step, token_ids, state):
            scores = values[..., 0] * tf.cast(step + 1, tf.float32)
            attention = tf.nn.softmax(scores, axis=-1)
            context = tf.einsum("bt,btd->bd", attention, values)
            logits = context @ kernel + state["bias"]
            counter = state["nested"][0] + 1
            # boolean_mask makes the batch dimension statically unknown.
            keep = tf.ones(tf.shape(counter)[:1], tf.bool)
            new_state = {
                "bias": state["bias"],
                "nested": (tf.boolean_mask(counter, keep), state["nested"][1]),
            }
            return logits, new_state, attention

        batch = tf.shape(start_ids)[0]
        state = {
            "bias": tf.zeros([batch, vocab_size]),
            "nested": (tf.zeros([batch], tf.int32), tf.ones([batch, 2, 2], tf.float16)),
        }
        return GreedySearch(max_steps=5)(next_fn, state, start_ids)

    signature = [
        tf.TensorSpec([None, None, 2], tf.float32),
        tf.TensorSpec([None], tf.int32),
    ]
    values = tf.constant(np.random.default_rng(0).normal(size=[2, 7, 2]), tf.float32)
    start_ids = tf.fill([2], START)
    compiled = tf.function(decode, input_signature=signature, jit_compile=jit_compile)
    got = compiled(values, start_ids)
    want = decode(values, start_ids)  # eager
    steps = int(want.tokens.shape[1])
    assert got.attention.shape == (2, steps, 7)
    np.testing.assert_array_equal(got.tokens.numpy(), want.tokens.numpy())
    np.testing.assert_array_equal(got.lengths.numpy(), want.lengths.numpy())
    np.testing.assert_allclose(got.scores.numpy(), want.scores.numpy(), rtol=1e-5)
    np.testing.assert_allclose(got.attention.numpy(), want.attention.numpy(), atol=1e-6)


def test_attention_none_and_low_precision_logits():
    script = np.array([[4, END, 4]])

    def next_fn(step, token_ids, state):
        logits, state, _ = scripted_next_fn(script, vocab_size=5)(step, token_ids, state)
        return tf.cast(logits / 1e7, tf.bfloat16), state, None

    result = GreedySearch(max_steps=3)(next_fn, (), tf.constant([START]))
    np.testing.assert_array_equal(result.tokens.numpy(), [[4, 0]])
    assert result.attention.shape == (1, 2, 0)
    assert result.scores.dtype == tf.float32


def test_bad_next_fn_outputs():
    def rank3_logits(step, token_ids, state):
        return tf.zeros([1, 2, 5]), state, tf.zeros([1, 1])

    with pytest.raises(ValueError, match="logits.shape"):
        GreedySearch(max_steps=2)(rank3_logits, (), tf.constant([START]))

    def two_outputs(step, token_ids, state):
        return tf.zeros([1, 5]), state

    with pytest.raises(ValueError, match="logits, new_state, attention"):
        GreedySearch(max_steps=2)(two_outputs, (), tf.constant([START]))

    with pytest.raises(ValueError, match="start_ids.shape"):
        GreedySearch(max_steps=2)(two_outputs, (), tf.constant([[START]]))


def test_in_xla_context():
    seen = {}

    def probe(name):
        seen[name] = in_xla_context()
        return tf.constant(0)

    probe("eager")
    tf.function(lambda: probe("function"))()
    tf.function(lambda: probe("xla"), jit_compile=True)()
    assert seen == {"eager": False, "function": False, "xla": True}


def test_drop_finished_config_and_validation():
    strategy = GreedySearch(max_steps=7, drop_finished=True)
    assert strategy.get_config() == {
        "max_steps": 7,
        "end_id": 3,
        "pad_id": 0,
        "drop_finished": True,
    }
    assert GreedySearch.from_config(strategy.get_config()).drop_finished is True
    assert strategy.with_options(max_steps=3).drop_finished is True
    assert "drop_finished" not in GreedySearch().get_config()
    with pytest.raises(ValueError, match="drop_finished"):
        GreedySearch(drop_finished=1)
