"""`BaseVectorizer`: what every vectorizer shares (ids, `[START]`/`[END]`, padding, cutting)."""

import keras
import tensorflow as tf

from keras_attention.text.vocabulary import END_ID, PAD_ID, START_ID, UNK_ID


class BaseVectorizer(keras.layers.Layer):
    """Base class of the vectorizers: raw strings to padded ids and back, in the graph.

    A subclass supplies the tokenization only: `token_ids` (sentences to
    ragged ids), `tokenize` (sentences to ragged string tokens, for display),
    `ids_to_tokens`, `_join` (ids back to a sentence) and `vocabulary_size`.
    Everything else lives here, once: the reserved ids (0 padding, 1
    `[UNK]`, 2 `[START]`, 3 `[END]`, see `keras_attention.text.vocabulary`),
    cutting to `max_length`, adding `[START]`/`[END]`, padding, and dropping
    what follows `[END]` on decoding. The layer has no weights; it works
    eagerly, inside `tf.function`, inside `tf.data.Dataset.map` and inside a
    SavedModel written by `keras.export.ExportArchive` (track the layer).

    Args:
        max_length: int or `None`, the most ids per sequence. `None` keeps
            every token.
        pad_to_max_length: bool, whether to pad every batch to exactly
            `max_length` columns (a static shape) instead of to its longest
            sequence. Needs `max_length`.
        **kwargs: base layer keyword arguments, such as `name`.

    Call arguments:
        inputs: string tensor `(batch_size,)` (or `(batch_size, 1)`).

    Returns:
        int32 tensor `(batch_size, T)`, `T <= max_length`, padded with 0.
    """

    tokenizer = None
    """The `TrainConfig.tokenizer` name of the subclass (`"words"`, `"subwords"`)."""

    def __init__(self, max_length=None, pad_to_max_length=False, **kwargs):
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        # String inputs: Keras must not try to convert them to a float dtype.
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.supports_jit = False
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

    @property
    def vocabulary_size(self):
        """The number of ids, reserved ones included (the model's vocabulary size)."""
        raise NotImplementedError

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

    @property
    def forbidden_output_ids(self):
        """Ids a decoder must never emit for this vocabulary (e.g. `[UNK]` with byte fallback)."""
        return ()

    def token_ids(self, texts):
        """Sentences to token ids: no cutting, no `[START]`/`[END]`.

        Args:
            texts: string tensor `(batch_size,)`.

        Returns:
            int32 `tf.RaggedTensor` `(batch_size, None)`.
        """
        raise NotImplementedError

    def tokenize(self, texts):
        """Sentences to the string tokens `token_ids` looks up (for display).

        Args:
            texts: string tensor `(batch_size,)`.

        Returns:
            string `tf.RaggedTensor` `(batch_size, None)`, row `i` as long as
            `token_ids(texts)[i]`.
        """
        raise NotImplementedError

    def ids_to_tokens(self, ids):
        """Maps ids to their string tokens (ids out of range read as `[UNK]`).

        Args:
            ids: integer tensor or `tf.RaggedTensor` of any shape.

        Returns:
            A string tensor of the same shape (`""` for padding).
        """
        raise NotImplementedError

    def _join(self, ids):
        """Dense int32 ids `(batch_size, T)`, padded with 0, to sentences `(batch_size,)`."""
        raise NotImplementedError

    def call(self, inputs):
        return self.encode(inputs)

    def encode(self, texts, add_start=False, add_end=False, ragged=False):
        """Tokenizes sentences into ids, optionally adding `[START]`/`[END]`.

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
        ids = self.token_ids(texts)
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

    def decode(self, ids):
        """Turns ids back into sentences.

        Ids after the first `[END]` are ignored, padding and `[START]` are
        dropped, and the subclass joins the rest.

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
        return self._join(tf.where(keep, ids, PAD_ID))

    def _as_batch(self, texts):
        texts = tf.convert_to_tensor(texts, dtype=tf.string)
        if texts.shape.rank == 2 and texts.shape[-1] == 1:
            texts = tf.squeeze(texts, axis=-1)
        if texts.shape.rank != 1:
            raise ValueError(
                f"`{type(self).__name__}` expects a string tensor of shape (batch_size,). "
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
        config.update({"max_length": self.max_length, "pad_to_max_length": self.pad_to_max_length})
        return config
