"""Training, saving and checking the SentencePiece models of `SubwordVectorizer`.

A subword model is a serialized SentencePiece `ModelProto` (the bytes of a
`.model` file), trained by the `sentencepiece` package on normalized text
(`keras_attention.text.normalize`) and run in the graph by
`tensorflow_text.SentencepieceTokenizer`. The settings are fixed so every
model keeps the project's contracts:

- ids 0-3 are the reserved ids of `keras_attention.text.vocabulary`
  (`[PAD]` 0, `[UNK]` 1, `[START]` 2, `[END]` 3);
- `character_coverage=1.0` and `byte_fallback=True`: every character of the
  training text is a piece, and any other character is spelled as its UTF-8
  bytes (`<0xC5>`), so no text ever encodes to `[UNK]`;
- the text is normalized before it reaches SentencePiece, by the same
  `normalize` as the word tokenizer, and SentencePiece's own normalization
  changes nothing in it, so decoding gives back exactly the normalized text.
  Spaces are pieces (`▁`), so the spacing of the training text (`Va !`,
  `¿Dónde?`) is what the model writes.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Iterable

import tensorflow as tf

from keras_attention.text.tokenization import normalize
from keras_attention.text.vocabulary import (
    END_ID,
    END_TOKEN,
    PAD_ID,
    START_ID,
    START_TOKEN,
    UNK_ID,
    UNK_TOKEN,
)

MODEL_TYPES = ("bpe", "unigram")
PAD_PIECE = "[PAD]"
BYTE_PIECES = 256
"""With byte fallback every model holds the 256 pieces `<0x00>` ... `<0xFF>`."""

_THREADS = 4  # fixed: the unigram trainer's result depends on its thread count
_BATCH = 4096


def minimum_vocabulary_size(texts: Iterable[str]) -> int:
    """The smallest vocabulary a subword model of `texts` can have.

    The 4 reserved ids, the 256 byte pieces, and one piece per distinct
    character (a space counts as the `▁` piece).
    """
    characters = set()
    for text in texts:
        characters.update(text)
    characters.discard(" ")
    return 4 + BYTE_PIECES + len(characters) + 1


def _normalized(texts: Iterable[str]) -> list[str]:
    texts = list(texts)
    normalized = []
    for start in range(0, len(texts), _BATCH):
        batch = tf.constant(texts[start : start + _BATCH], dtype=tf.string)
        normalized.extend(t.decode("utf-8") for t in normalize(batch).numpy())
    return [text for text in normalized if text]


def train_subword_model(
    texts: Iterable[str], vocabulary_size: int, model_type: str = "bpe"
) -> bytes:
    """Trains a SentencePiece model on `texts` (see the module docstring).

    Args:
        texts: the training sentences (normalized here with `normalize`).
        vocabulary_size: int, the most ids of the model, reserved ids and
            the 256 byte pieces included. A corpus too small to fill it gives
            a smaller model (`SubwordVectorizer.vocabulary_size` tells).
        model_type: `"bpe"` or `"unigram"`. Defaults to `"bpe"`, which
            gives fewer pieces per sentence on the bundled corpus; on a small
            or repetitive corpus unigram can fall back to nearly one piece per
            character. Measurements: docs/research/model-notes.md.

    Returns:
        The serialized `ModelProto` (bytes): the contents of a `.model` file.

    Raises:
        ValueError: `texts` holds no text, or `vocabulary_size` is too small
            for its alphabet (the message says the minimum).

    Example:

    >>> from keras_attention.text import SubwordVectorizer
    >>> model = train_subword_model(["Le chat dort.", "Le chien dort."] * 10, 300)
    >>> vectorizer = SubwordVectorizer(model)
    >>> vectorizer.decode(vectorizer(tf.constant(["Le chat dort."]))).numpy()
    array([b'Le chat dort.'], dtype=object)
    """
    import sentencepiece

    if model_type not in MODEL_TYPES:
        raise ValueError(f"`model_type` must be one of {MODEL_TYPES}. Received: {model_type!r}")
    if isinstance(vocabulary_size, bool) or not isinstance(vocabulary_size, int):
        raise ValueError(f"`vocabulary_size` must be an int. Received: {vocabulary_size!r}")
    texts = _normalized(texts)
    if not texts:
        raise ValueError("No text to train a subword model on: every sentence is empty.")
    minimum = minimum_vocabulary_size(texts)
    if vocabulary_size < minimum:
        raise ValueError(
            f"A subword vocabulary of {vocabulary_size} is too small for this text: the 4 "
            f"reserved ids, {BYTE_PIECES} byte pieces and {minimum - 4 - BYTE_PIECES} distinct "
            f"characters need at least {minimum}. Received: vocabulary_size={vocabulary_size}"
        )
    model = io.BytesIO()
    with tempfile.TemporaryDirectory() as directory:
        # SentencePiece's own normalization: one rule that changes nothing in
        # normalized text (it drops U+200B, which `normalize` removed already).
        # With no rule at all, tf-text's kernel logs a notice for every model
        # it loads.
        rules = os.path.join(directory, "rules.tsv")
        with open(rules, "w", encoding="utf-8") as f:
            f.write("200B\t\n")
        _train(sentencepiece, texts, model, vocabulary_size, model_type, rules)
    return model.getvalue()


def _train(sentencepiece, texts, model, vocabulary_size, model_type, rules) -> None:
    try:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(texts),
            model_writer=model,
            vocab_size=vocabulary_size,
            model_type=model_type,
            character_coverage=1.0,
            byte_fallback=True,
            normalization_rule_tsv=rules,
            pad_id=PAD_ID,
            unk_id=UNK_ID,
            bos_id=START_ID,
            eos_id=END_ID,
            pad_piece=PAD_PIECE,
            unk_piece=UNK_TOKEN,
            bos_piece=START_TOKEN,
            eos_piece=END_TOKEN,
            unk_surface=UNK_TOKEN,
            hard_vocab_limit=False,
            num_threads=_THREADS,
            minloglevel=2,
        )
    except RuntimeError as error:
        raise ValueError(f"SentencePiece could not train a subword model: {error}") from None


def check_subword_model(model: bytes, name: str = "model") -> int:
    """Checks that `model` is a SentencePiece model with the project's settings.

    Returns:
        Its number of pieces.

    Raises:
        ValueError: not a SentencePiece model, or its reserved ids or byte
            fallback differ from `train_subword_model`'s.
    """
    import sentencepiece

    processor = sentencepiece.SentencePieceProcessor()
    try:
        processor.LoadFromSerializedProto(model)
    except (RuntimeError, TypeError, OSError) as error:
        raise ValueError(f"{name} is not a SentencePiece model: {error}") from None
    reserved = (processor.pad_id(), processor.unk_id(), processor.bos_id(), processor.eos_id())
    if reserved != (PAD_ID, UNK_ID, START_ID, END_ID):
        raise ValueError(
            f"{name} must have pad, unk, bos and eos ids {(PAD_ID, UNK_ID, START_ID, END_ID)} "
            f"(train it with `train_subword_model`). Received: {reserved}"
        )
    if not all(processor.IsByte(i) for i in range(4, 4 + BYTE_PIECES)):
        raise ValueError(
            f"{name} has no byte fallback pieces at ids 4-259 (train it with `train_subword_model`)."
        )
    return processor.GetPieceSize()


def save_subword_model(model: bytes, path: str | os.PathLike) -> None:
    """Writes a model as a `.model` file (`sentencepiece` and `spm_encode` read it too)."""
    with open(path, "wb") as f:
        f.write(model)


def load_subword_model(path: str | os.PathLike) -> bytes:
    """Reads and checks a `.model` file.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a SentencePiece model with the project's settings.
    """
    with open(path, "rb") as f:
        model = f.read()
    check_subword_model(model, name=repr(os.fspath(path)))
    return model
