"""`LiteRTText` (no TensorFlow) against the SavedModel's in-graph text processing.

The reference is the vectorizers' own TensorFlow ops (`Translator.encode_source`,
the target vectorizer's `encode` / `decode`), which the SavedModel's signatures run.
"""

from __future__ import annotations

import pytest
import tensorflow as tf

from keras_attention.export.litert.text_files import write_text_files
from keras_attention.text import (
    SpacingRules,
    SubwordVectorizer,
    TextVectorizer,
    build_vocabulary,
    train_subword_model,
)
from keras_attention_client.litert_text import LiteRTText

# Sentences that exercise each rule: NFKC, no-break and thin spaces, apostrophe look-alikes,
# invisible characters, clitics, elision, hyphen pieces, numbers, abbreviations, quotes,
# guillemets, currency, control characters, other scripts, emoji, an ASCII boundary (\b)
# before a non-ASCII letter.
TRICKY = [
    "Qu'est-ce que c'est ?",
    "I don't know.",
    "Tom's dog isn't there, is it?",
    "L\u2019homme est l\u00e0\u202f!",
    "Va\u00a0!  Vite\u2009: \u00ab oui \u00bb",
    "Il est 10:30, \u00e7a co\u00fbte 3,5 \u20ac ou $5.",
    "The U.S. and the U.K. at 9 p.m.",
    "jusqu'\u00e0 aujourd'hui, quelqu'un d'autre",
    'He said "hello" and (quietly) left...',
    "zero\u200bwidth soft\u00adhyphen \ufeffbom",
    "tab\there\nnewline\r\nend",
    "\uff21\uff22\uff23 \ufb01 \u2460 \u2026",
    "\u03a9\u03bc\u03ad\u03b3\u03b1 \U0001f600 \u0167",
    "the boys' parents' car",
    "'s\u00e9rieux' l'\u00e9t\u00e9 'm",
    "a-t-il peut-\u00eatre Est-ce",
    "",
    "   ",
    "!!! ??? ?!",
    "\u00bfD\u00f3nde est\u00e1? \u00a1Hola!",
]


def _write(tmp_path, source, target, width=8):
    write_text_files(tmp_path, source, target, width)
    return LiteRTText(tmp_path)


def _check_side(text: LiteRTText, vectorizer, sentences, max_length):
    """Source ids and tokens as `encode_source` gives them (cut to max_length)."""
    ids = vectorizer(tf.constant(sentences)).numpy()
    tokens = vectorizer.tokenize(tf.constant(sentences)).to_list()
    for row, sentence in enumerate(sentences):
        got_ids, got_tokens = text.encode(sentence)
        assert got_ids == [int(i) for i in ids[row] if i], sentence
        assert got_tokens == [t.decode("utf-8") for t in tokens[row]][:max_length], sentence


def _check_decode(text: LiteRTText, vectorizer, sentences):
    ids = vectorizer.encode(tf.constant(sentences), add_start=True, add_end=True).numpy()
    expected = vectorizer.decode(ids).numpy()
    for row, sentence in enumerate(sentences):
        assert text.decode(ids[row]) == expected[row].decode("utf-8"), sentence
        tokens = vectorizer.ids_to_tokens(ids[row]).numpy()
        assert text.target_tokens(ids[row]) == [t.decode("utf-8") for t in tokens]


@pytest.mark.parametrize("spacing", [SpacingRules.french(), SpacingRules.plain()])
def test_words_match_the_graph(tmp_path, spacing):
    vocabulary = build_vocabulary(TRICKY * 2, max_size=60)  # small: unknown words occur
    source = TextVectorizer(vocabulary, max_length=9)
    target = TextVectorizer(vocabulary, max_length=12, spacing=spacing)
    text = _write(tmp_path, source, target)
    _check_side(text, source, TRICKY, 9)
    _check_decode(text, target, TRICKY)
    # Ids out of range read as [UNK]; decoding stops at the first [END].
    assert text.target_tokens([0, 999]) == ["", "[UNK]"]
    assert text.decode([2, 5, 3, 6]) == text.decode([5])


def test_subwords_match_the_graph(tmp_path):
    model = train_subword_model(TRICKY * 20, 400)
    source = SubwordVectorizer(model, max_length=20)
    target = SubwordVectorizer(model, max_length=24)
    text = _write(tmp_path, source, target)
    _check_side(text, source, TRICKY, 20)
    _check_decode(text, target, TRICKY)


@pytest.mark.slow
def test_words_match_the_graph_on_the_bundled_test_split(tmp_path):
    """Every source (and target) of the default run's test split of the bundled corpus."""
    from keras_attention.runs.run_data import sample_splits
    from keras_attention.runs.train_config import TrainConfig

    sample = sample_splits(TrainConfig())
    sources = sorted({source for source, _ in sample.test})
    targets = sorted({target for _, target in sample.test})
    assert len(sources) > 2000
    source = TextVectorizer(build_vocabulary(sources, max_size=3000), max_length=30)
    target = TextVectorizer(
        build_vocabulary(targets, max_size=3000), max_length=50, spacing=SpacingRules.french()
    )
    text = _write(tmp_path, source, target)
    for start in range(0, len(sources), 512):
        _check_side(text, source, sources[start : start + 512], 30)
    for start in range(0, len(targets), 512):
        _check_decode(text, target, targets[start : start + 512])
