"""Decoding over a vocabulary shortlist, against the whole vocabulary and NumPy references.

On the export tests' tiny trained run (`translator`): a shortlist holding every
target id decodes as no shortlist does; a small one decodes as the whole
vocabulary with the logits outside its candidates masked.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers.export_testing import SENTENCES
from helpers.reference_decoders import log_softmax

from keras_attention.export.weight_storage import WeightStorage
from keras_attention.models.seq2seq import Seq2Seq
from keras_attention.shortlist.vocabulary_shortlist import VocabularyShortlist

STRATEGIES = {
    "greedy": {},
    "beam": {"beam_width": 3},
    "beam_n_best": {"beam_width": 3, "n_best": 2},
    "constrained": {"beam_width": 3, "constraints": "le"},  # for the texts of even length
    "sample": {"sample": True, "seed": 7, "temperature": 1.5},
    "sample_top_k": {"sample": True, "seed": 3, "top_k": 50},  # more than the candidates
}


def every_id(translator) -> VocabularyShortlist:
    """A shortlist whose candidates are the whole target vocabulary."""
    size = translator.target_vectorizer.vocabulary_size
    rows = translator.source_vectorizer.vocabulary_size
    return VocabularyShortlist(np.tile(np.arange(size), (rows, 1)), [], size)


# The tiny run's corpus is word for word, so one target id per source id (its
# translation) and the most frequent one (".") leave these sentences about half of the
# 23 target ids; "Hello, world!" alone (unknown words) only 5.
SMALL_BATCH = ["I see the cat .", "she eat", "the dog", "apple", "Hello, world!"]


@pytest.fixture(scope="module")
def small(run_dir):
    """One target id per source id and the most frequent one, from the tiny run."""
    return VocabularyShortlist.from_run(run_dir, k=1, frequent=1)


def translate(translator, strategy_options, texts=SENTENCES):
    options = dict(strategy_options)
    phrase = options.pop("constraints", None)
    strategy = translator.strategy(**options)
    steering = {}
    if phrase is not None:  # by the text, so a sentence alone has the same
        rows = [[phrase if len(t) % 2 == 0 else ""] for t in texts]
        steering["constraints"] = tf.constant(rows)
    outputs = translator.translate(tf.constant(texts), strategy, **steering)
    return {key: value.numpy() for key, value in outputs.items()}


def assert_same_decoding(actual, expected):
    for key in ("translation", "tokens", "length", "source_tokens"):
        np.testing.assert_array_equal(actual[key], expected[key], err_msg=key)
    np.testing.assert_allclose(actual["score"], expected["score"], atol=1e-5)
    np.testing.assert_allclose(actual["attention"], expected["attention"], atol=1e-5)


@pytest.mark.parametrize("name", STRATEGIES)
def test_a_shortlist_of_every_id_decodes_as_none(translator, name):
    expected = translate(translator, STRATEGIES[name])
    actual = translate(translator.with_shortlist(every_id(translator)), STRATEGIES[name])
    assert_same_decoding(actual, expected)


@pytest.mark.parametrize("name", ("greedy", "beam", "sample"))
def test_int8_columns_of_every_id_decode_as_the_int8_model(translator, name):
    """`WeightStorage.gather` (int8 columns and their scales) gives what the dequantized
    whole matrix gives."""
    storage = WeightStorage(translator.model, "int8")
    shortlisted = translator.with_shortlist(every_id(translator), gather_weights=storage.gather)
    expected = storage.wrap(translate)(translator, STRATEGIES[name])
    actual = storage.wrap(translate)(shortlisted, STRATEGIES[name])
    assert_same_decoding(actual, expected)
    float32 = translate(translator, STRATEGIES[name])
    assert not np.array_equal(actual["score"], float32["score"]), "the weights were int8"


def candidates_of(translator, shortlist, texts=SMALL_BATCH) -> np.ndarray:
    source_ids, _ = translator.encode_source(tf.constant(texts))
    return shortlist.candidates(source_ids).numpy()


def masked(logits: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    keep = np.zeros(logits.shape[-1], bool)
    keep[candidates] = True
    return np.where(keep, logits, -np.inf)


def own_candidates(translator, shortlist, texts=SMALL_BATCH) -> list[np.ndarray]:
    """Each sentence's candidates, the shortlist's for that sentence alone."""
    return [candidates_of(translator, shortlist, [text]) for text in texts]


def numpy_greedy(translator, candidates, texts=SMALL_BATCH):
    """Greedy search in NumPy over the model's whole-vocabulary logits, each row masked
    to its `candidates[row]`: `(tokens, scores)` per sentence, the end token's log-prob
    included."""
    source_ids, _ = translator.encode_source(tf.constant(texts))
    state = translator.model.initial_decode_state(source_ids)
    target = translator.target_vectorizer
    previous = np.full(len(texts), target.start_id, np.int32)
    tokens = [[] for _ in texts]
    scores = np.zeros(len(texts))
    done = np.zeros(len(texts), bool)
    for step in range(translator.max_output_length):
        logits, state, _ = translator.next_logits(step, tf.constant(previous), state)
        log_probs = np.stack(
            [
                log_softmax(masked(row_logits, row_candidates))
                for row_logits, row_candidates in zip(logits.numpy(), candidates, strict=True)
            ]
        )
        previous = np.argmax(log_probs, axis=-1).astype(np.int32)
        for row, token in enumerate(previous):
            if not done[row]:
                scores[row] += log_probs[row, token]
                done[row] = token == target.end_id
                if not done[row]:
                    tokens[row].append(int(token))
        if done.all():
            break
    return tokens, scores


def token_ids(translator, outputs) -> list[list[int]]:
    """The ids of `translate`'s output tokens, up to each length."""
    vocabulary = translator.target_vectorizer.get_vocabulary()
    index = {token: i for i, token in enumerate(vocabulary)}
    return [
        [index[token.decode("utf-8")] for token in row[:length]]
        for row, length in zip(outputs["tokens"], outputs["length"], strict=True)
    ]


def test_a_small_shortlist_changes_the_search_space(translator, small):
    candidates = candidates_of(translator, small)
    assert candidates[:4].tolist() == [0, 1, 2, 3]
    assert candidates.size <= translator.target_vectorizer.vocabulary_size // 2 + 2
    per_sentence = [candidates_of(translator, small, [text]).size for text in SMALL_BATCH]
    assert max(per_sentence) < candidates.size  # the batch's candidates are their union
    assert per_sentence[-1] == 5  # padding, [UNK], [START], [END], "."


def test_greedy_over_a_small_shortlist_equals_masked_numpy(translator, small):
    candidates = own_candidates(translator, small)
    outputs = translate(translator.with_shortlist(small), STRATEGIES["greedy"], SMALL_BATCH)
    expected_tokens, expected_scores = numpy_greedy(translator, candidates)
    assert token_ids(translator, outputs) == expected_tokens
    np.testing.assert_allclose(outputs["score"], expected_scores, atol=1e-5)
    whole = translate(translator, STRATEGIES["greedy"], SMALL_BATCH)
    assert not np.allclose(outputs["score"], whole["score"]), "scores over the candidates only"


@pytest.mark.parametrize("n_best", (None, 2))
def test_beam_search_over_a_small_shortlist_equals_masked_logits(translator, small, n_best):
    """Beam search over the candidate columns = beam search over the whole vocabulary
    with the columns outside the sentence's own candidates at -inf."""
    options = {"beam_width": 3, "n_best": n_best}
    outputs = translate(translator.with_shortlist(small), options, SMALL_BATCH)
    vocabulary_size = translator.target_vectorizer.vocabulary_size
    for row, text in enumerate(SMALL_BATCH):
        source_ids, _ = translator.encode_source(tf.constant([text]))
        own = candidates_of(translator, small, [text])
        mask = tf.constant(masked(np.zeros(vocabulary_size), own))

        def masked_next_logits(step, ids, state, mask=mask):
            logits, state, attention = translator.next_logits(step, ids, state)
            return logits + tf.cast(mask, logits.dtype), state, attention

        expected = translator.strategy(**options)(
            masked_next_logits,
            translator.model.initial_decode_state(source_ids),
            tf.fill([1], translator.target_vectorizer.start_id),
        )
        lengths = expected.lengths.numpy().reshape(-1)
        ids = expected.tokens.numpy().reshape(lengths.size, -1)
        expected_ids = [ids[i, : lengths[i]].tolist() for i in range(lengths.size)]
        got = {
            "tokens": outputs["tokens"][row].reshape(lengths.size, -1),
            "length": outputs["length"][row].reshape(-1),
        }
        assert token_ids(translator, got) == expected_ids
        np.testing.assert_allclose(
            outputs["score"][row].reshape(-1), expected.scores.numpy().reshape(-1), atol=1e-5
        )


@pytest.mark.parametrize("name", ("greedy", "beam", "beam_n_best", "constrained"))
def test_a_translation_does_not_depend_on_its_batch_mates(translator, small, name):
    """A sentence alone, in a batch of 5 and in a batch of 64 (other sentences around it):
    the same tokens, lengths and scores (up to float32 rounding)."""
    shortlisted = translator.with_shortlist(small)
    alone = [translate(shortlisted, STRATEGIES[name], [text]) for text in SMALL_BATCH]
    large = (SMALL_BATCH + SENTENCES) * (64 // (len(SMALL_BATCH) + len(SENTENCES)) + 1)
    for batch in (SMALL_BATCH, large[:64]):
        together = translate(shortlisted, STRATEGIES[name], batch)
        for row, one in enumerate(alone):
            for key in ("translation", "length"):
                np.testing.assert_array_equal(together[key][row], one[key][0], err_msg=key)
            length = np.max(one["length"][0])
            np.testing.assert_array_equal(
                together["tokens"][row][..., :length], one["tokens"][0][..., :length]
            )
            np.testing.assert_allclose(together["score"][row], one["score"][0], atol=1e-5)
            np.testing.assert_allclose(together["confidence"][row], one["confidence"][0], atol=1e-5)
    # The batch's computed slice is larger than a sentence's own candidates.
    union = candidates_of(translator, small).size
    assert max(c.size for c in own_candidates(translator, small)) < union


def numpy_score(translator, candidates, text, ids, length):
    """The log-probability of `ids` (and the end token, when `length` is below the limit)
    over `candidates`, by teacher forcing in NumPy."""
    source_ids, _ = translator.encode_source(tf.constant([text]))
    state = translator.model.initial_decode_state(source_ids)
    target = translator.target_vectorizer
    emitted = ids[:length] + ([target.end_id] if length < translator.max_output_length else [])
    previous, score = target.start_id, 0.0
    for step, token in enumerate(emitted):
        logits, state, _ = translator.next_logits(step, tf.constant([previous]), state)
        score += log_softmax(masked(logits.numpy(), candidates))[0, token]
        previous = token
    return score


@pytest.mark.parametrize("name", ("sample", "sample_top_k"))
def test_sampling_over_a_small_shortlist_draws_candidates_with_their_scores(
    translator, small, name
):
    outputs = translate(translator.with_shortlist(small), STRATEGIES[name], SMALL_BATCH)
    drawn = token_ids(translator, outputs)
    for text, ids, length, score in zip(
        SMALL_BATCH, drawn, outputs["length"], outputs["score"], strict=True
    ):
        candidates = candidates_of(translator, small, [text])
        assert set(ids) <= set(candidates.tolist())
        expected = numpy_score(translator, candidates, text, ids, length)
        np.testing.assert_allclose(score, expected, atol=1e-4)


@pytest.mark.parametrize("tie_embeddings", (True, False))
def test_output_projection_gives_the_logits_columns(tie_embeddings):
    """`next_logits(..., projection=output_projection(ids))` = the whole logits' columns `ids`."""
    keras.utils.set_random_seed(0)
    model = Seq2Seq(
        30, 40, embedding_dim=8, encoder_units=8, decoder_units=16, tie_embeddings=tie_embeddings
    )
    if tie_embeddings:
        model.build()
        model.decoder.output_bias.assign(np.linspace(-1, 1, 40).astype(np.float32))
    source = tf.constant([[5, 6, 7], [8, 9, 0]])
    state = model.initial_decode_state(source)
    ids = tf.constant([0, 2, 3, 11, 39])
    previous = tf.constant([2, 2])
    whole, _, attention = model.next_logits(0, previous, state)
    columns, _, shortlist_attention = model.next_logits(
        0, previous, state, projection=model.output_projection(ids)
    )
    np.testing.assert_allclose(columns.numpy(), tf.gather(whole, ids, axis=1).numpy(), atol=1e-6)
    np.testing.assert_array_equal(shortlist_attention.numpy(), attention.numpy())
    kernel, bias = model.output_projection(ids)
    assert kernel.shape == (model.decoder.output_dim, 5) and bias.shape == (5,)


def test_a_shortlist_of_other_vocabularies_is_refused(translator):
    size = translator.target_vectorizer.vocabulary_size
    other = VocabularyShortlist(np.zeros((3, 2), np.int32), [], size)
    with pytest.raises(
        ValueError, match=r"vocabularies of 3 source and .* Build it from the same run"
    ):
        translator.with_shortlist(other)
