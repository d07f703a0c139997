"""`TextVectorizer`: raw strings to token ids and back, inside the graph."""

import os

import keras
import tensorflow as tf

from keras_attention.text.tokenization import detokenize, tokenize
from keras_attention.text.vocabulary import (
    END_ID,
    PAD_ID,
    START_ID,
    UNK_ID,
    load_vocabulary,
    validate_vocabulary,
)


@keras.saving.register_keras_serializable(package="keras_attention")
class TextVectorizer(keras.layers.Layer):
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
    the string `"[UNK]"`) and `detokenize` joins them.

    Args:
        vocabulary: list of tokens, the reserved tokens `["", "[UNK]",
            "[START]", "[END]"]` first (`build_vocabulary` makes one), or the
            path of a file written by `save_vocabulary`.
        max_length: int or `None`, the most ids per sequence. `None` keeps
            every token.
        pad_to_max_length: bool, whether to pad every batch to exactly
            `max_length` columns (a static shape) instead of to its longest
            sequence. Needs `max_length`.
        french_spacing: bool, whether `decode` writes French typography (a
            space before `! ? : ;` and inside `« »`). Use `True` for a
            French target vocabulary.
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

    def __init__(
        self,
        vocabulary,
        max_length=None,
        pad_to_max_length=False,
        french_spacing=False,
        **kwargs,
    ):
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        # String inputs: Keras must not try to convert them to a float dtype.
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.supports_jit = False
        if isinstance(vocabulary, (str, os.PathLike)):
            vocabulary = load_vocabulary(vocabulary)
        self._vocabulary = tuple(validate_vocabulary(vocabulary))
        if max_length is not None and (
            isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1
        ):
            raise ValueError(
                f"`max_length` must be a positive int or None. Received: max_length={max_length!r}"
            )
        if pad_to_max_length and max_length is None:
            raise ValueError(
                "`pad_to_max_length=True` needs a `max_length`. "
                f"Received: max_length={max_length!r}"
            )
        self.max_length = max_length
        self.pad_to_max_length = bool(pad_to_max_length)
        self.french_spacing = bool(french_spacing)
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

    @property
    def pad_id(self):
        return PAD_ID

    @property
    def unk_id(self):
        return UNK_ID

    @property
    def start_id(self):
        return START_ID

    @property
    def end_id(self):
        return END_ID

    def get_vocabulary(self):
        """A copy of the vocabulary list."""
        return list(self.vocabulary)

    def call(self, inputs):
        return self.encode(inputs)

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

    def encode(self, texts, add_start=False, add_end=False, ragged=False):
        """Tokenizes and looks up sentences, optionally adding `[START]`/`[END]`.

        Args:
            texts: string tensor `(batch_size,)` (or `(batch_size, 1)`).
            add_start: bool, whether to put `[START]` first.
            add_end: bool, whether to put `[END]` last.
            ragged: bool, whether to return a `tf.RaggedTensor` instead of
                a padded dense tensor.

        Returns:
            int32 ids `(batch_size, T)`: at most `max_length` per sequence,
            `[START]`/`[END]` included; padded with 0 (unless `ragged`).
        """
        texts = self._as_batch(texts)
        reserved = int(bool(add_start)) + int(bool(add_end))
        ids = self.lookup(tokenize(texts))
        if self.max_length is not None:
            if self.max_length < reserved:
                raise ValueError(
                    f"`max_length={self.max_length}` leaves no room for [START]/[END]."
                )
            ids = ids[:, : self.max_length - reserved]
        if reserved:
            ids = self._add_start_end(ids, add_start, add_end)
        if ragged:
            return ids
        shape = [None, self.max_length] if self.pad_to_max_length else None
        return ids.to_tensor(default_value=PAD_ID, shape=shape)

    @staticmethod
    def _add_start_end(ids, add_start, add_end):
        """Puts `[START]` before and/or `[END]` after each ragged row of ids."""
        lengths = ids.row_lengths()
        dense = ids.to_tensor(default_value=PAD_ID)
        if add_start:
            dense = tf.pad(dense, [[0, 0], [1, 0]], constant_values=START_ID)
            lengths += 1
        if add_end:
            dense = tf.pad(dense, [[0, 0], [0, 1]], constant_values=PAD_ID)
            at_end = tf.one_hot(lengths, tf.shape(dense)[1], on_value=True, off_value=False)
            dense = tf.where(at_end, END_ID, dense)
            lengths += 1
        return tf.RaggedTensor.from_tensor(dense, lengths=lengths)

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

    def decode(self, ids):
        """Turns ids back into sentences.

        Ids after the first `[END]` are ignored, padding and `[START]` are
        dropped, and the tokens are joined by `detokenize` (with
        `french_spacing`).

        Args:
            ids: integer tensor `(batch_size, T)` (dense or ragged).

        Returns:
            string tensor `(batch_size,)`.
        """
        if isinstance(ids, tf.RaggedTensor):
            ids = ids.to_tensor(default_value=PAD_ID)
        ids = tf.cast(ids, tf.int32)
        before_end = tf.math.cumsum(tf.cast(ids == END_ID, tf.int32), axis=-1) == 0
        keep = before_end & (ids != PAD_ID) & (ids != START_ID)
        tokens = tf.where(keep, self.ids_to_tokens(ids), "")
        return detokenize(tokens, french_spacing=self.french_spacing)

    def _as_batch(self, texts):
        texts = tf.convert_to_tensor(texts, dtype=tf.string)
        if texts.shape.rank == 2 and texts.shape[-1] == 1:
            texts = tf.squeeze(texts, axis=-1)
        if texts.shape.rank != 1:
            raise ValueError(
                "`TextVectorizer` expects a string tensor of shape (batch_size,). "
                f"Received: shape={texts.shape}"
            )
        return texts

    def compute_output_shape(self, input_shape):
        length = self.max_length if self.pad_to_max_length else None
        return (input_shape[0], length)

    def compute_output_spec(self, inputs):
        return keras.KerasTensor(self.compute_output_shape(inputs.shape), dtype="int32")

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary": list(self.vocabulary),
                "max_length": self.max_length,
                "pad_to_max_length": self.pad_to_max_length,
                "french_spacing": self.french_spacing,
            }
        )
        return config
