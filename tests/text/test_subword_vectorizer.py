"""`SubwordVectorizer` and `train_subword_model`: round trip, no [UNK], serialization, errors."""

import io
import random

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.data import load_corpus
from keras_attention.text import (
    END_ID,
    START_ID,
    UNK_ID,
    SubwordVectorizer,
    TextVectorizer,
    minimum_vocabulary_size,
    normalize,
    train_subword_model,
)

SPANISH = [
    "¿Dónde está el tren?",
    "¡Qué bonito día!",
    "El niño comió una manzana.",
    "¿Cuántos años tienes?",
    "No sé qué hacer.",
    "Mañana vamos a la playa, ¿verdad?",
]


@pytest.fixture(scope="module")
def corpus_sample():
    """1,200 random pairs of the bundled corpus: 1,000 to train on, 200 held out."""
    pairs = load_corpus().pairs
    sample = random.Random(0).sample(pairs, 1200)
    return sample[:1000], sample[1000:]


@pytest.fixture(scope="module", params=[0, 1], ids=["english", "french"])
def side(request, corpus_sample):
    train, held_out = corpus_sample
    index = request.param
    texts = [pair[index] for pair in train]
    return (
        texts,
        [pair[index] for pair in held_out],
        SubwordVectorizer(train_subword_model(texts, 1000)),
    )


def _decoded(vectorizer, texts):
    ids = vectorizer.encode(tf.constant(texts), add_start=True, add_end=True)
    return [t.decode("utf-8") for t in vectorizer.decode(ids).numpy()], ids.numpy()


def test_round_trip_restores_the_normalized_corpus_exactly(side):
    train, held_out, vectorizer = side
    for texts in (train, held_out):
        decoded, _ = _decoded(vectorizer, texts)
        expected = [t.decode("utf-8") for t in normalize(tf.constant(texts)).numpy()]
        mismatches = [(e, d) for e, d in zip(expected, decoded, strict=True) if e != d]
        assert not mismatches, mismatches[:5]


def test_no_unk_for_training_characters_nor_unseen_ones(side):
    train, _, vectorizer = side
    alphabet = sorted(set("".join(train)) - {" "})
    unseen = ["Ωμέγα жёлтый 東京 😀 ŧ", "\u0301e\u0301", "ÆØÅ ﬁ ½ №"]
    texts = ["".join(alphabet)] + alphabet + unseen
    decoded, ids = _decoded(vectorizer, texts)
    assert not np.any(ids == UNK_ID)
    expected = [t.decode("utf-8") for t in normalize(tf.constant(texts)).numpy()]
    assert decoded == expected
    # Unseen characters are spelled as byte pieces.
    pieces = vectorizer.tokenize(tf.constant(["😀"])).to_list()[0]
    assert [p.decode() for p in pieces if p.startswith(b"<0x")] == [
        "<0xF0>",
        "<0x9F>",
        "<0x98>",
        "<0x80>",
    ]


@pytest.mark.parametrize(
    "texts",
    [["Va !", "Où est le train ?", "« Bonjour ! »", "Il a dit : non."], SPANISH],
    ids=["french", "spanish"],
)
def test_spacing_comes_from_the_training_text(texts):
    vectorizer = SubwordVectorizer(train_subword_model(texts * 5, 400))
    decoded, _ = _decoded(vectorizer, texts)
    assert decoded == texts


def test_same_interface_as_the_word_vectorizer():
    texts = ["le chat dort .", "le chien dort !"] * 10
    vectorizer = SubwordVectorizer(train_subword_model(texts, 300), max_length=3)
    assert vectorizer.tokenizer == "subwords" and TextVectorizer.tokenizer == "words"
    assert (vectorizer.pad_id, vectorizer.unk_id, vectorizer.start_id, vectorizer.end_id) == (
        0,
        1,
        2,
        3,
    )
    ids = vectorizer.token_ids(tf.constant(["le chat dort ."]))
    full = ids.to_list()[0]
    assert len(full) > 3
    encoded = vectorizer.encode(tf.constant(["le chat dort .", ""]), add_start=True, add_end=True)
    np.testing.assert_array_equal(
        encoded.numpy(), [[START_ID, full[0], END_ID], [START_ID, END_ID, 0]]
    )
    # Pieces as strings, "" for padding; ids after [END] are ignored on decoding.
    tokens = vectorizer.ids_to_tokens(tf.constant([full + [0]])).numpy()[0]
    assert tokens[-1] == b"" and b"".join(tokens).replace("▁".encode(), b" ").strip() == (
        b"le chat dort ."
    )
    decoded = vectorizer.decode(tf.constant([full + [END_ID] + full]))
    assert decoded.numpy()[0] == b"le chat dort ."
    assert vectorizer.forbidden_output_ids == (UNK_ID,)


def test_works_in_tf_data_and_tf_function_after_the_seed_is_reset():
    texts = ["le chat dort .", "le chien dort !"] * 10
    vectorizer = SubwordVectorizer(train_subword_model(texts, 300))
    expected = vectorizer.token_ids(tf.constant(texts[:2])).to_list()
    # Resetting the seed clears TensorFlow's eager kernel cache: a model
    # resource created once, eagerly, would be gone.
    keras.utils.set_random_seed(3)
    dataset = tf.data.Dataset.from_tensor_slices(texts[:2]).batch(2).map(vectorizer.token_ids)
    assert next(iter(dataset)).to_list() == expected
    assert tf.function(vectorizer.token_ids)(tf.constant(texts[:2])).to_list() == expected
    assert vectorizer.token_ids(tf.constant(texts[:2])).to_list() == expected


def test_config_and_keras_file_carry_the_model(tmp_path):
    texts = ["le chat dort .", "le chien dort !"] * 10
    vectorizer = SubwordVectorizer(train_subword_model(texts, 300), max_length=7, name="target")
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(vectorizer)
    )
    assert isinstance(restored, SubwordVectorizer) and restored.model == vectorizer.model
    assert restored.max_length == 7 and restored.name == "target"

    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, vectorizer(inputs))
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    texts = tf.constant(["le chien dort .", "😀"])
    np.testing.assert_array_equal(loaded(texts).numpy(), vectorizer(texts).numpy())


def test_model_from_a_file(tmp_path):
    from keras_attention.text import load_subword_model, save_subword_model

    model = train_subword_model(["le chat dort ."] * 5, 300)
    save_subword_model(model, tmp_path / "x.model")
    assert load_subword_model(tmp_path / "x.model") == model
    assert SubwordVectorizer(str(tmp_path / "x.model")).model == model


def test_vocabulary_too_small_for_the_alphabet_is_a_clear_error():
    texts = ["abc déf", "xyz!"]
    minimum = minimum_vocabulary_size(texts)
    assert minimum == 4 + 256 + len(set("abcdéfxyz!")) + 1
    with pytest.raises(ValueError, match=f"too small.*at least {minimum}"):
        train_subword_model(texts, minimum - 1)
    assert SubwordVectorizer(train_subword_model(texts, minimum)).vocabulary_size <= minimum


def test_no_text_is_a_clear_error():
    with pytest.raises(ValueError, match="every sentence is empty"):
        train_subword_model(["", "  \u200b "], 300)


def test_bad_models_are_refused():
    with pytest.raises(ValueError, match="not a SentencePiece model"):
        SubwordVectorizer(b"not a model")
    with pytest.raises(TypeError, match="bytes of a SentencePiece model"):
        SubwordVectorizer(123)

    import sentencepiece

    # A model with SentencePiece's own default ids (unk 0, bos 1, eos 2).
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(["le chat dort ."] * 5),
        model_writer=model,
        vocab_size=20,
        hard_vocab_limit=False,
        minloglevel=2,
    )
    with pytest.raises(ValueError, match="pad, unk, bos and eos ids"):
        SubwordVectorizer(model.getvalue())
