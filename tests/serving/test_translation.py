"""Splitting padded batch outputs into Translations (hand-worked examples)."""

import json

import numpy as np
import pytest
from helpers.stand_in_export import reference_outputs

from keras_attention_client.client_base import split_batches
from keras_attention_client.wire.translation import TRANSLATION_OUTPUTS, Translation


def _padded_batch():
    # Row 0: 2 output tokens from 3 source tokens; row 1: empty input.
    attention = np.zeros((2, 3, 3), np.float32)
    attention[0, :2, :3] = [[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]]
    attention[0, 2, :] = 9.0  # padding row: must be dropped
    return {
        "translation": np.array([b"B A", b""], dtype=object),
        "score": np.array([-1.5, 0.0], np.float32),
        "length": np.array([2, 0], np.int32),
        "tokens": np.array([[b"B", b"A", b""], [b"", b"", b""]], dtype=object),
        "source_tokens": np.array([[b"a", b"b", "\u00e9".encode()], [b"", b"", b""]], dtype=object),
        "attention": attention,
    }


def test_rows_are_trimmed_of_padding():
    first, second = Translation.from_outputs(_padded_batch())
    assert first.text == "B A"
    assert first.score == -1.5
    assert first.length == 2
    assert first.tokens == ["B", "A"]
    assert first.source_tokens == ["a", "b", "\u00e9"]
    expected = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32)
    np.testing.assert_array_equal(first.attention, expected)
    assert first.attention.dtype == np.float32
    assert (second.text, second.length, second.tokens, second.source_tokens) == ("", 0, [], [])
    assert second.attention.shape == (0, 0)


def test_strings_may_be_str_and_values_nested_lists():
    outputs = {
        "translation": ["B A"],
        "score": [-1.5],
        "length": [2],
        "tokens": [["B", "A"]],
        "source_tokens": [["a", "b", ""]],
        "attention": [[[0.5, 0.5, 0.0], [0.25, 0.75, 0.0]]],
    }
    (translation,) = Translation.from_outputs(outputs)
    assert translation.source_tokens == ["a", "b"]
    assert translation.attention.shape == (2, 2)


def test_reference_batch_trims_to_each_sentence():
    texts = ["the cat sat", "a", ""]
    translations = Translation.from_outputs(reference_outputs(texts))
    for text, translation in zip(texts, translations, strict=True):
        words = text.split()
        assert translation.source_tokens == words
        assert translation.tokens == [w.upper() for w in reversed(words)]
        assert translation.attention.shape == (len(words), len(words))
        if words:
            np.testing.assert_allclose(translation.attention.sum(axis=1), 1.0, rtol=1e-6)


def test_missing_output_is_named():
    outputs = _padded_batch()
    del outputs["attention"]
    with pytest.raises(ValueError, match="attention"):
        Translation.from_outputs(outputs)


def test_batch_size_disagreement_is_reported():
    outputs = _padded_batch()
    outputs["score"] = np.array([1.0], np.float32)
    with pytest.raises(ValueError, match="batch size"):
        Translation.from_outputs(outputs)


def test_to_dict_is_json_and_equality_compares_attention():
    first, _ = Translation.from_outputs(_padded_batch())
    assert json.loads(json.dumps(first.to_dict()))["tokens"] == ["B", "A"]
    again, _ = Translation.from_outputs(_padded_batch())
    assert first == again
    changed = _padded_batch()
    changed["attention"][0, 0, 0] = 0.3
    assert first != Translation.from_outputs(changed)[0]


def test_contract_names():
    assert set(TRANSLATION_OUTPUTS) == {
        "translation",
        "score",
        "length",
        "tokens",
        "source_tokens",
        "attention",
        "token_scores",
        "confidence",
    }


def test_token_probabilities_and_confidence_are_read_when_present():
    outputs = _padded_batch()
    # Row 0: B 0.5, A 0.25, [END] 0.8 (position `length`), then padding.
    outputs["token_scores"] = np.log(np.array([[0.5, 0.25, 0.8], [1.0, 1.0, 1.0]], np.float32))
    outputs["confidence"] = np.array([0.1 ** (1 / 3), 1.0], np.float32)
    first, second = Translation.from_outputs(outputs)
    np.testing.assert_allclose(first.token_probabilities, [0.5, 0.25], rtol=1e-6)
    assert first.confidence == pytest.approx(0.1 ** (1 / 3))
    assert (second.token_probabilities, second.confidence) == ([], 1.0)
    assert json.loads(json.dumps(first.to_dict()))["confidence"] == pytest.approx(0.1 ** (1 / 3))
    # An export written before these outputs: the rest is read, confidence is None.
    (old, _) = Translation.from_outputs(_padded_batch())
    assert (old.token_probabilities, old.confidence) == (None, None)
    assert old != first
    outputs["confidence"] = np.array([0.5], np.float32)
    with pytest.raises(ValueError, match="batch size"):
        Translation.from_outputs(outputs)


def test_split_batches():
    assert split_batches(list(range(5)), 2) == [[0, 1], [2, 3], [4]]
    assert split_batches([], 3) == []
    with pytest.raises(ValueError, match="batch_size=0"):
        split_batches([1], 0)
