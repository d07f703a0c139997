import keras
import pytest
import tensorflow as tf

from keras_attention.decoding import BeamSearch, DecodingStrategy, GreedySearch, RandomSampling


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"max_steps": 0}, "max_steps=0"),
        ({"max_steps": -3}, "max_steps=-3"),
        ({"max_steps": 2.0}, "max_steps=2.0"),
        ({"end_id": -1}, "end_id=-1"),
        ({"end_id": "3"}, "end_id='3'"),
        ({"pad_id": False}, "pad_id=False"),
    ],
)
@pytest.mark.parametrize("cls", [GreedySearch, BeamSearch, RandomSampling])
def test_shared_arguments_are_validated(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls(**kwargs)


def test_numpy_integers_are_accepted():
    import numpy as np

    greedy = GreedySearch(max_steps=np.int64(7), end_id=np.int32(2))
    assert greedy.max_steps == 7 and type(greedy.max_steps) is int
    assert greedy.end_id == 2


def test_greedy_config_round_trip_and_repr():
    greedy = GreedySearch(max_steps=9, end_id=2, pad_id=1)
    assert greedy.get_config() == {"max_steps": 9, "end_id": 2, "pad_id": 1}
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(greedy))
    assert isinstance(restored, GreedySearch)
    assert restored.get_config() == greedy.get_config()
    assert repr(greedy) == "GreedySearch(max_steps=9, end_id=2, pad_id=1)"


def test_base_class_is_abstract():
    with pytest.raises(NotImplementedError, match="DecodingStrategy"):
        DecodingStrategy()(lambda *a: a, (), tf.constant([1]))


@pytest.mark.parametrize(
    "strategy",
    [
        GreedySearch(max_steps=3),
        GreedySearch(max_steps=3, drop_finished=True),
        BeamSearch(2, max_steps=3),
        BeamSearch(2, max_steps=3, drop_finished=True),
        RandomSampling(max_steps=3),
    ],
    ids=repr,
)
@pytest.mark.parametrize("in_function", [False, True])
def test_empty_batch(strategy, in_function):
    def next_fn(step, token_ids, state):
        return tf.one_hot(token_ids, 5), state, tf.ones([tf.shape(token_ids)[0], 4])

    def decode(start_ids):
        return strategy(next_fn, (), start_ids)

    if in_function:
        decode = tf.function(decode, input_signature=[tf.TensorSpec([None], tf.int32)])
    result = decode(tf.zeros([0], tf.int32))
    assert result.tokens.shape == (0, 1)
    assert result.attention.shape == (0, 1, 4)
    assert result.scores.shape == (0,) and result.lengths.shape == (0,)


def test_a_new_strategy_is_a_few_hooks():
    """A strategy that always takes the second most probable token, on the shared loop."""

    class SecondBest(GreedySearch):
        def select(self, step, log_probs, search):
            return tf.math.top_k(log_probs, k=2).indices[:, 1]

    # Logits favour id 4, then id 2 (then the end token, 3) at every step.
    def next_fn(step, token_ids, state):
        logits = tf.tile(tf.constant([[0.0, 0.0, 2.0, 1.0, 3.0]]), [tf.shape(token_ids)[0], 1])
        return logits, state, None

    result = SecondBest(max_steps=3)(next_fn, (), tf.constant([0, 0]))
    assert result.tokens.numpy().tolist() == [[2, 2, 2], [2, 2, 2]]
    assert result.lengths.numpy().tolist() == [3, 3]


def _random_table_next_fn(seed: int, vocab_size: int, max_steps: int, tv: int):
    """Logits from a random `(max_steps, V, V)` table; attention a function of the token
    fed and the state (which echoes the previous token), so rows that follow the wrong
    hypothesis show."""
    import numpy as np

    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=2.0, size=[max_steps, vocab_size, vocab_size])
    logits[..., 3] += np.arange(max_steps)[:, None] - 2.0  # END (3) likelier later
    table = tf.constant(logits, tf.float32)

    def next_fn(step, token_ids, state):
        attention = tf.nn.softmax(tf.one_hot(token_ids % tv, tv) + tf.one_hot(state % tv, tv))
        return tf.gather(table[step], token_ids), token_ids, attention

    return next_fn


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    "strategy",
    [
        GreedySearch(max_steps=6),
        BeamSearch(beam_width=3, max_steps=6),
        BeamSearch(beam_width=3, max_steps=6, n_best=2, length_penalty=1.0),
    ],
    ids=["greedy", "beam", "beam-n-best"],
)
def test_attention_recorded_without_tensor_arrays_is_the_same(strategy, seed):
    """`tensor_arrays=False` (a LiteRT export's loop) gives the default loop's results,
    and its graph has no TensorList op (which LiteRT lowers only for a fixed batch)."""
    import copy

    import numpy as np

    next_fn = _random_table_next_fn(seed, vocab_size=7, max_steps=6, tv=5)
    plain = copy.copy(strategy)
    plain.tensor_arrays = False
    state, start = tf.constant([4, 5, 6, 4], tf.int32), tf.fill([4], 2)
    want = strategy(next_fn, state, start)
    function = tf.function(lambda s, x: plain(next_fn, s, x), autograph=False)
    got = function(state, start)
    np.testing.assert_array_equal(got.tokens, want.tokens)
    np.testing.assert_array_equal(got.lengths, want.lengths)
    np.testing.assert_allclose(got.scores, want.scores, rtol=1e-6)
    np.testing.assert_allclose(got.attention, want.attention, rtol=1e-6, atol=1e-7)
    graph = function.get_concrete_function(state, start).graph
    ops = {op.type for op in graph.get_operations()}
    for function_def in graph.as_graph_def().library.function:
        ops |= {node.op for node in function_def.node_def}
    assert not {op for op in ops if op.startswith("TensorList")}
