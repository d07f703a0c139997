import math

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers.reference_decoders import END, PAD, START, PrefixModel, log_softmax, scripted_next_fn

from keras_attention.decoding import GreedySearch, RandomSampling

MODES = ["eager", "function", "xla"]


def run(strategy, next_fn, state, start_ids, mode, **kwargs):
    """Runs `strategy` eagerly, in tf.function, or in tf.function(jit_compile=True)."""
    if mode == "eager":
        return strategy(next_fn, state, start_ids, **kwargs)
    fn = tf.function(lambda s, x: strategy(next_fn, s, x, **kwargs), jit_compile=(mode == "xla"))
    return fn(state, start_ids)


def copies_of_sentence(model: PrefixModel, sentence: int, rows: int):
    """`rows` copies of one PrefixModel sentence: state and start ids."""
    state = {
        "sentence": tf.fill([rows], sentence),
        "code": tf.zeros([rows], tf.int32),
    }
    return state, tf.fill([rows], START)


def assert_same_result(got, expected):
    np.testing.assert_array_equal(got.tokens.numpy(), expected.tokens.numpy())
    np.testing.assert_array_equal(got.lengths.numpy(), expected.lengths.numpy())
    np.testing.assert_allclose(got.scores.numpy(), expected.scores.numpy(), rtol=1e-6)
    np.testing.assert_allclose(got.attention.numpy(), expected.attention.numpy(), rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_scripted_logits_give_the_scripted_ids_and_early_stop(mode):
    # Logits one_hot * 1e9: every distribution is a point mass, so sampling
    # at any temperature must follow the script exactly.
    script = np.array([[5, 6, END, 7, 7], [5, END, 8, 8, 8], [9, 8, 7, END, 6]])
    next_fn = scripted_next_fn(script, vocab_size=10, tv=5)
    result = run(
        RandomSampling(temperature=2.0, seed=3, max_steps=5),
        next_fn,
        (),
        tf.fill([3], START),
        mode,
    )
    np.testing.assert_array_equal(
        result.tokens.numpy(), [[5, 6, PAD, PAD], [5, PAD, PAD, PAD], [9, 8, 7, PAD]]
    )
    np.testing.assert_array_equal(result.lengths.numpy(), [2, 1, 3])
    np.testing.assert_array_equal(result.scores.numpy(), [0.0, 0.0, 0.0])
    assert result.attention.shape == (3, 4, 5)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "kwargs", [{"top_k": 1}, {"temperature": 1e-4}, {"top_k": 1, "temperature": 5.0}]
)
def test_top_k_one_and_near_zero_temperature_are_greedy(kwargs, mode):
    model = PrefixModel(batch_size=6, max_steps=4, seed=1)
    args = (model.next_fn, model.initial_state(), model.start_ids())
    expected = GreedySearch(max_steps=4)(*args)
    got = run(RandomSampling(seed=0, max_steps=4, **kwargs), *args, mode)
    assert_same_result(got, expected)


def test_scores_and_attention_are_the_models_for_the_sampled_tokens():
    model = PrefixModel(batch_size=64, max_steps=4, seed=2)
    sampler = RandomSampling(temperature=1.5, seed=11, max_steps=4)
    result = sampler(model.next_fn, model.initial_state(), model.start_ids())
    tokens, lengths = result.tokens.numpy(), result.lengths.numpy()
    sampled = [tuple(int(t) for t in row[:n]) for row, n in zip(tokens, lengths, strict=True)]
    assert len(set(sampled)) > 5  # it does sample
    for b in range(64):
        # The score is untempered: the model's own log-probability.
        model.assert_result_row(result, b, sampled[b], ended=len(sampled[b]) < 4)


def expected_first_token_distribution(model, sentence, temperature=1.0, top_k=None):
    log_probs, _ = model._row(sentence, ())
    logits = log_probs / temperature
    if top_k is not None:
        cut = np.sort(logits)[-top_k]
        logits = np.where(logits >= cut, logits, -np.inf)
    return np.exp(log_softmax(logits))


@pytest.mark.parametrize(
    "temperature, top_k", [(1.0, None), (0.5, None), (2.0, None), (1.0, 2), (0.7, 2)]
)
def test_samples_follow_the_tempered_top_k_softmax(temperature, top_k):
    model = PrefixModel(batch_size=1, max_steps=3, seed=4)
    rows = 20000
    state, start_ids = copies_of_sentence(model, 0, rows)
    sampler = RandomSampling(temperature=temperature, top_k=top_k, seed=5, max_steps=1)
    result = sampler(model.next_fn, state, start_ids)
    # max_steps=1: one step; an end token is written as PAD (length 0).
    first = np.where(result.lengths.numpy() == 0, END, result.tokens.numpy()[:, 0])
    expected = expected_first_token_distribution(model, 0, temperature, top_k)
    observed = np.bincount(first, minlength=model.vocab_size) / rows
    # Each frequency within 5 standard errors of its probability (a false
    # alarm has probability < 1e-5 per id); impossible ids never drawn.
    bound = 5 * np.sqrt(expected * (1 - expected) / rows) + 1e-12
    assert np.all(np.abs(observed - expected) <= bound), (observed, expected)
    assert np.all(observed[expected == 0] == 0)


def test_the_same_seed_repeats_and_other_seeds_differ():
    model = PrefixModel(batch_size=1, max_steps=4, seed=3)
    state, start_ids = copies_of_sentence(model, 0, 200)

    def sample(**kwargs):
        return RandomSampling(max_steps=4, **kwargs)(model.next_fn, state, start_ids).tokens

    a, b, c = sample(seed=1), sample(seed=1), sample(seed=2)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(a.numpy(), c.numpy())
    # A seed given at call time replaces the constructor's.
    sampler = RandomSampling(seed=1, max_steps=4)
    np.testing.assert_array_equal(
        sampler(model.next_fn, state, start_ids, seed=tf.constant(2)).tokens.numpy(),
        c.numpy(),
    )


@pytest.mark.parametrize("jit_compile", [False, True])
def test_without_a_seed_every_call_draws_anew(jit_compile):
    model = PrefixModel(batch_size=1, max_steps=4, seed=3)
    state, start_ids = copies_of_sentence(model, 0, 200)
    sampler = RandomSampling(max_steps=4)
    decode = tf.function(lambda s, x: sampler(model.next_fn, s, x).tokens, jit_compile=jit_compile)
    first, second = decode(state, start_ids).numpy(), decode(state, start_ids).numpy()
    # 200 rows over three first tokens: equal by chance with probability ~0.
    assert not np.array_equal(first, second)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"temperature": 0}, "temperature=0"),
        ({"temperature": -1.0}, "temperature=-1.0"),
        ({"temperature": math.nan}, "temperature=nan"),
        ({"temperature": math.inf}, "temperature=inf"),
        ({"temperature": True}, "temperature=True"),
        ({"temperature": "1"}, "temperature='1'"),
        ({"top_k": 0}, "top_k=0"),
        ({"top_k": 2.0}, "top_k=2.0"),
        ({"seed": -1}, "seed=-1"),
        ({"seed": 2**31}, "seed=2147483648"),
        ({"seed": "7"}, "seed='7'"),
        ({"max_steps": 0}, "max_steps=0"),
    ],
)
def test_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RandomSampling(**kwargs)


def test_top_k_larger_than_the_vocabulary_samples_the_whole_vocabulary():
    script = np.array([[2, END]])
    result = RandomSampling(top_k=50, seed=0, max_steps=3)(
        scripted_next_fn(script, vocab_size=5), (), tf.fill([1], START)
    )
    np.testing.assert_array_equal(result.tokens.numpy(), [[2, PAD]])


def test_config_round_trip_and_repr():
    sampler = RandomSampling(temperature=0.7, top_k=5, seed=3, max_steps=9)
    assert sampler.get_config() == {
        "max_steps": 9,
        "end_id": 3,
        "pad_id": 0,
        "temperature": 0.7,
        "top_k": 5,
        "seed": 3,
    }
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(sampler))
    assert isinstance(restored, RandomSampling)
    assert restored.get_config() == sampler.get_config()
    assert repr(sampler) == (
        "RandomSampling(max_steps=9, end_id=3, pad_id=0, temperature=0.7, top_k=5, seed=3)"
    )


def expected_nucleus_distribution(model, sentence, temperature, top_k, top_p):
    """The tempered, top-k cut, then top-p cut distribution of the first token, in NumPy."""
    probs = expected_first_token_distribution(model, sentence, temperature, top_k)
    order = np.argsort(-probs, kind="stable")
    above = np.concatenate([[0.0], np.cumsum(probs[order])[:-1]])
    keep = np.zeros_like(probs, dtype=bool)
    keep[order] = above < top_p
    cut = np.where(keep, probs, 0.0)
    return cut / cut.sum()


@pytest.mark.parametrize(
    "temperature, top_k, top_p", [(1.0, None, 0.6), (0.7, 2, 0.5), (2.0, None, 0.9)]
)
def test_samples_follow_the_top_p_nucleus(temperature, top_k, top_p):
    model = PrefixModel(batch_size=1, max_steps=3, seed=4)
    rows = 20000
    state, start_ids = copies_of_sentence(model, 0, rows)
    sampler = RandomSampling(temperature=temperature, top_k=top_k, top_p=top_p, seed=6, max_steps=1)
    result = sampler(model.next_fn, state, start_ids)
    first = np.where(result.lengths.numpy() == 0, END, result.tokens.numpy()[:, 0])
    expected = expected_nucleus_distribution(model, 0, temperature, top_k, top_p)
    assert (expected == 0).sum() >= 1  # the cut removes something here
    observed = np.bincount(first, minlength=model.vocab_size) / rows
    bound = 5 * np.sqrt(expected * (1 - expected) / rows) + 1e-12
    assert np.all(np.abs(observed - expected) <= bound), (observed, expected)
    assert np.all(observed[expected == 0] == 0)


def test_tensor_options_equal_python_values():
    """temperature, top_k (0 = all), top_p (1 = no cut), seed fed as tensors to one graph."""
    model = PrefixModel(batch_size=8, max_steps=4, seed=2)
    state, start_ids = model.initial_state(), model.start_ids()
    sampler = RandomSampling(max_steps=4)

    @tf.function(
        input_signature=[
            tf.TensorSpec([], tf.float32),
            tf.TensorSpec([], tf.int32),
            tf.TensorSpec([], tf.float32),
            tf.TensorSpec([], tf.int32),
        ]
    )
    def sample(temperature, top_k, top_p, seed):
        return sampler(
            model.next_fn,
            state,
            start_ids,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            seed=seed,
        )

    for temperature, top_k, top_p, seed in [
        (1.0, 0, 1.0, 3),
        (0.8, 2, 1.0, 4),
        (1.3, 0, 0.7, 5),
        (1.0, 3, 0.8, 6),
    ]:
        got = sample(temperature, top_k, top_p, seed)
        want = RandomSampling(
            temperature=temperature,
            top_k=top_k or None,
            top_p=None if top_p == 1.0 else top_p,
            seed=seed,
            max_steps=4,
        )(model.next_fn, state, start_ids)
        assert_same_result(got, want)
    # A negative seed draws one per call.
    draws = {sample(1.0, 0, 1.0, -1).tokens.numpy().tobytes() for _ in range(5)}
    assert len(draws) > 1
