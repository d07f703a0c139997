"""`TextVectorizer`: raw strings to token ids and back, inside the graph."""

import os

import keras
import tensorflow as tf

from keras_attention.text.base_vectorizer import BaseVectorizer
from keras_attention.text.spacing_rules import SpacingRules
from keras_attention.text.tokenization import detokenize, tokenize
from keras_attention.text.vocabulary import UNK_ID, load_vocabulary, validate_vocabulary


@keras.saving.register_keras_serializable(package="keras_attention")
class TextVectorizer(BaseVectorizer):
    """Turns sentences into padded token ids, and ids back into sentences.

    The layer holds a fixed vocabulary (see
    `keras_attention.text.vocabulary`) in a `tf.lookup.StaticHashTable`; it
    has no weights. Everything is TensorFlow ops (`tokenize`, a hash-table
    lookup, `tf.gather`, `detokenize`), so it works eagerly, inside
    `tf.function`, inside `tf.data.Dataset.map`, and inside a SavedModel
    written by `keras.export.ExportArchive` (track the layer, or a model that
    holds it) and run by TensorFlow Serving. The vocabulary is part of
    `get_config`, so a `.keras` file carries it.

    Encoding (`call` / `encode`):

    1. `tokenize(texts)` (normalization, cased word and punctuation tokens).
    2. Each token is looked up: its index in `vocabulary`, or `unk_id` (1)
       for a token not in it.
    3. Sequences are cut to `max_length` ids (counting `[START]` / `[END]`
       when `encode` adds them, so they always fit).
    4. `[START]` (2) / `[END]` (3) are added on request, and the batch is
       padded with `pad_id` (0) to its longest sequence (or to `max_length`
       with `pad_to_max_length=True`).

    Decoding (`decode`): ids after the first `[END]` are dropped, as are
    padding and `[START]`; the rest become tokens (`[UNK]` stays visible as
    the string `"[UNK]"`) and `detokenize` joins them with `spacing`.

    Args:
        vocabulary: list of tokens, the reserved tokens `["", "[UNK]",
            "[START]", "[END]"]` first (`build_vocabulary` makes one), or the
            path of a file written by `save_vocabulary`.
        max_length: int or `None`, the most ids per sequence. `None` keeps
            every token.
        pad_to_max_length: bool, whether to pad every batch to exactly
            `max_length` columns (a static shape) instead of to its longest
            sequence. Needs `max_length`.
        french_spacing: bool, the spacing `decode` writes when `spacing`
            is `None`: French typography (`Va !`, `« oui »`) or plain
            (`Go!`). Kept for configs written before `spacing`.
        spacing: a `SpacingRules` (or its config dict): the target
            language's spacing around `! ? : ; %` and inside `« »`, e.g.
            `SpacingRules.measure(training_targets)`. Overrides
            `french_spacing`.
        **kwargs: base layer keyword arguments, such as `name`.

    Call arguments:
        inputs: string tensor `(batch_size,)` (or `(batch_size, 1)`).

    Returns:
        int32 tensor `(batch_size, T)`, `T <= max_length`, padded with 0.

    Example:

    >>> vectorizer = TextVectorizer(["", "[UNK]", "[START]", "[END]", "Le", "chat", "."])
    >>> vectorizer(tf.constant(["Le chat.", "Le chien."])).numpy()
    array([[4, 5, 6],
           [4, 1, 6]], dtype=int32)
    >>> vectorizer.encode(tf.constant(["Le chat."]), add_start=True, add_end=True).numpy()
    array([[2, 4, 5, 6, 3]], dtype=int32)
    >>> vectorizer.decode(tf.constant([[4, 5, 6, 3, 0]])).numpy()
    array([b'Le chat.'], dtype=object)
    """

    tokenizer = "words"

    def __init__(
        self,
        vocabulary,
        max_length=None,
        pad_to_max_length=False,
        french_spacing=False,
        spacing=None,
        **kwargs,
    ):
        super().__init__(max_length=max_length, pad_to_max_length=pad_to_max_length, **kwargs)
        if isinstance(vocabulary, (str, os.PathLike)):
            vocabulary = load_vocabulary(vocabulary)
        self._vocabulary = tuple(validate_vocabulary(vocabulary))
        if spacing is None:
            spacing = SpacingRules.french() if french_spacing else SpacingRules.plain()
        elif isinstance(spacing, dict):
            spacing = SpacingRules.from_config(spacing)
        elif not isinstance(spacing, SpacingRules):
            raise TypeError(
                f"`spacing` must be a SpacingRules, a dict or None. Received: {spacing!r}"
            )
        self.spacing = spacing
        with tf.init_scope():
            initializer = tf.lookup.KeyValueTensorInitializer(
                tf.constant(self._vocabulary, dtype=tf.string),
                tf.range(len(self._vocabulary), dtype=tf.int64),
            )
            self.lookup_table = tf.lookup.StaticHashTable(initializer, default_value=UNK_ID)
        self.built = True

    @property
    def vocabulary(self):
        """The vocabulary list; the index of a token is its id."""
        return list(self._vocabulary)

    @property
    def vocabulary_size(self):
        """The number of entries of the vocabulary, reserved tokens included."""
        return len(self._vocabulary)

    def get_vocabulary(self):
        """A copy of the vocabulary list."""
        return list(self.vocabulary)

    def lookup(self, tokens):
        """Maps string tokens to ids (`unk_id` for unknown ones, 0 for `""`).

        Args:
            tokens: string tensor or `tf.RaggedTensor` of any shape.

        Returns:
            int32 ids of the same shape (ragged if `tokens` is ragged). No
            truncation.
        """
        if isinstance(tokens, tf.RaggedTensor):
            return tf.ragged.map_flat_values(self.lookup, tokens)
        ids = self.lookup_table.lookup(tf.convert_to_tensor(tokens, dtype=tf.string))
        return tf.cast(ids, tf.int32)

    def tokenize(self, texts):
        """The word and punctuation tokens of `texts` (`keras_attention.text.tokenize`)."""
        return tokenize(texts)

    def token_ids(self, texts):
        """`lookup(tokenize(texts))`: ragged int32 ids, no cutting, no `[START]`/`[END]`."""
        return self.lookup(tokenize(texts))

    def ids_to_tokens(self, ids):
        """Maps ids to their string tokens (ids out of range read as `[UNK]`).

        Args:
            ids: integer tensor or `tf.RaggedTensor` of any shape.

        Returns:
            A string tensor of the same shape (`""` for padding).
        """
        if isinstance(ids, tf.RaggedTensor):
            return tf.ragged.map_flat_values(self.ids_to_tokens, ids)
        ids = tf.cast(ids, tf.int32)
        in_range = (ids >= 0) & (ids < self.vocabulary_size)
        ids = tf.where(in_range, ids, UNK_ID)
        return tf.gather(tf.constant(self._vocabulary, dtype=tf.string), ids)

    def _join(self, ids):
        return detokenize(self.ids_to_tokens(ids), spacing=self.spacing)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary": list(self.vocabulary),
                "spacing": self.spacing.get_config(),
            }
        )
        return config
