"""`score_translation` against a NumPy teacher-forcing reference; XLA; arguments."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from helpers.export_testing import SENTENCES

from keras_attention.export import TranslationSignatures


def as_bytes(texts):
    return np.array([t.encode("utf-8") for t in texts], dtype=object)


def numpy_log_prob(translator, text, translation):
    """log p(translation | text): teacher-forced logits, log-softmax in NumPy."""
    source_ids = translator.source_vectorizer(tf.constant([text]))
    target = translator.target_vectorizer.encode(
        tf.constant([translation]), add_start=True, add_end=True
    ).numpy()[0]
    logits = translator.model((source_ids, tf.constant(target[np.newaxis, :-1])))
    logits = logits.numpy()[0].astype(np.float64)
    log_probs = logits - logits.max(-1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
    token_scores = log_probs[np.arange(len(target) - 1), target[1:]]
    return token_scores.sum(), token_scores


def test_score_translation_matches_teacher_forcing_in_numpy(exporter, serving_session):
    translator = exporter.translator
    pairs = [
        ("I see the cat .", "je vois le chat ."),
        ("the dog", "le chien ."),
        ("we like a big red apple .", "nous aimons une grosse pomme rouge ."),  # unknown words
        ("apple", "pomme"),
    ]
    texts, translations = zip(*pairs, strict=True)
    outputs = serving_session.run(
        "score_translation", {"text": as_bytes(texts), "translation": as_bytes(translations)}
    )
    for index, (text, translation) in enumerate(pairs):
        score, token_scores = numpy_log_prob(translator, text, translation)
        length = len(token_scores) - 1  # [END] is scored but not counted
        assert outputs["length"][index] == length
        np.testing.assert_allclose(outputs["score"][index], score, rtol=1e-5)
        np.testing.assert_allclose(
            outputs["token_scores"][index][: length + 1], token_scores, rtol=1e-5, atol=1e-6
        )
        assert np.all(outputs["token_scores"][index][length + 1 :] == 0.0)
        tokens = outputs["tokens"][index]
        assert b"" not in tokens[:length].tolist() and np.all(tokens[length:] == b"")
    assert outputs["tokens"][0][:5].tolist() == [b"je", b"vois", b"le", b"chat", b"."]
    assert outputs["tokens"][2][3].decode() == "[UNK]"  # "grosse" is not in the vocabulary


def test_score_of_the_greedy_translation_is_the_greedy_score(serving_session):
    texts = as_bytes(SENTENCES + ["", "  "])
    greedy = serving_session.run("serving_default", {"text": texts})
    scored = serving_session.run(
        "score_translation", {"text": texts, "translation": greedy["translation"]}
    )
    for index in range(len(texts)):
        if b"[UNK]" in greedy["tokens"][index].tolist() or greedy["length"][index] == 10:
            continue  # no round trip through the text, or no [END] emitted
        assert scored["length"][index] == greedy["length"][index]
        np.testing.assert_allclose(scored["score"][index], greedy["score"][index], rtol=1e-5)
        n = greedy["length"][index]
        np.testing.assert_array_equal(scored["tokens"][index][:n], greedy["tokens"][index][:n])
        np.testing.assert_array_equal(
            scored["source_tokens"][index], greedy["source_tokens"][index]
        )
    # A source with no token scores 0, as `translate` translates it to "".
    assert scored["score"][-2:].tolist() == [0.0, 0.0] and scored["length"][-2:].tolist() == [0, 0]


def test_score_translation_in_process_matches_the_session(exporter, serving_session, loaded):
    texts = ["I see the cat .", "", "the dog"]
    translations = ["je vois le chat .", "rien", ""]
    expected = exporter.signatures.score(tf.constant(texts), tf.constant(translations))
    session = serving_session.run(
        "score_translation", {"text": as_bytes(texts), "translation": as_bytes(translations)}
    )
    tf2 = loaded.signatures["score_translation"](
        text=tf.constant(texts), translation=tf.constant(translations)
    )
    for key, value in expected.items():
        if value.dtype.is_floating:
            np.testing.assert_allclose(session[key], value.numpy(), rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(session[key], value.numpy())
        assert tuple(tf2[key].shape) == tuple(value.shape)


def test_score_translation_rejects_mismatched_batches(serving_session):
    with pytest.raises(tf.errors.InvalidArgumentError, match="same batch size"):
        serving_session.run(
            "score_translation", {"text": as_bytes(["a", "b"]), "translation": as_bytes(["a"])}
        )


def test_empty_batch_scores_nothing(exporter):
    outputs = exporter.signatures.score(tf.constant([], tf.string), tf.constant([], tf.string))
    assert {k: tuple(v.shape) for k, v in outputs.items()} == {
        "score": (0,),
        "length": (0,),
        "tokens": (0, 0),
        "token_scores": (0, 0),
        "source_tokens": (0, 0),
        "attention": (0, 0, 0),
    }


@pytest.mark.slow
def test_jit_compiled_decoding_gives_the_same_translations(exporter):
    compiled = TranslationSignatures(exporter.translator, beam_width=3, jit_compile=True)
    texts = tf.constant(SENTENCES + [""])
    for plain_strategy, jit_strategy in (
        (exporter.signatures.greedy_strategy, compiled.greedy_strategy),
        (exporter.signatures.beam_strategy, compiled.beam_strategy),
    ):
        expected = exporter.signatures.translate_function(plain_strategy)(texts)
        actual = compiled.translate_function(jit_strategy)(texts)
        for key in ("translation", "tokens", "length"):
            np.testing.assert_array_equal(actual[key].numpy(), expected[key].numpy())
        np.testing.assert_allclose(actual["score"].numpy(), expected["score"].numpy(), atol=1e-5)


@pytest.mark.parametrize("beam_width", [1, 0, 2.5, True])
def test_beam_width_must_be_an_integer_of_at_least_two(translator, beam_width):
    with pytest.raises(ValueError, match=f"Received: beam_width={beam_width!r}"):
        TranslationSignatures(translator, beam_width=beam_width)


def test_length_penalty_is_validated(translator):
    with pytest.raises(ValueError, match="length_penalty"):
        TranslationSignatures(translator, beam_width=2, length_penalty=-1.0)
