"""`SubwordVectorizer`: raw strings to SentencePiece ids and back, inside the graph."""

import base64
import os
import weakref

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from keras_attention.text.base_vectorizer import BaseVectorizer
from keras_attention.text.subword_model import check_subword_model
from keras_attention.text.tokenization import normalize
from keras_attention.text.vocabulary import PAD_ID, UNK_ID


@keras.saving.register_keras_serializable(package="keras_attention")
class SubwordVectorizer(BaseVectorizer):
    """Turns sentences into SentencePiece subword ids, and ids back into sentences.

    The same interface as `TextVectorizer` (`encode`, `decode`,
    `token_ids`, `ids_to_tokens`, the reserved ids), with a SentencePiece
    model (see `keras_attention.text.subword_model`) in place of a word
    vocabulary. Any language works: there are no language rules, the pieces
    are learned from the training text. The model runs in the graph with
    `tensorflow_text.SentencepieceTokenizer` (ops `SentencepieceOp`,
    `SentencepieceTokenizeOp`, `SentencepieceDetokenizeOp`,
    `SentencepieceIdToStringOp`, all in the tf-text op library that
    TensorFlow Serving links), so it works eagerly, inside `tf.function`,
    inside `tf.data`, and inside an exported SavedModel. The model is part of
    `get_config` (base64), so a `.keras` file carries it.

    Encoding (`call` / `encode`):

    1. `normalize(texts)` (the word tokenizer's normalization: UTF-8 repair,
       NFKC, spaces, apostrophes).
    2. SentencePiece splits the text into pieces; spaces belong to the
       pieces (`"▁Va"`, `"▁!"`). A character the model never saw is spelled
       as its UTF-8 bytes (`<0xC5>`), so no text gives `[UNK]`.
    3. As `TextVectorizer`: cut to `max_length`, `[START]`/`[END]` on
       request, padded with 0.

    Decoding (`decode`): ids after the first `[END]` are dropped, as are
    padding and `[START]`; SentencePiece joins the pieces, turning `▁` back
    into spaces, so `decode(encode(s))` is exactly `normalize(s)` (with the
    spacing of the text: `"Va !"` stays `"Va !"`, `"¿Dónde?"` stays
    `"¿Dónde?"`). The decoding strategies never emit `[UNK]`
    (`forbidden_output_ids`).

    Args:
        model: the serialized SentencePiece model (bytes, as returned by
            `train_subword_model`), or the path of a `.model` file.
        max_length: int or `None`, the most ids per sequence.
        pad_to_max_length: bool, whether to pad every batch to exactly
            `max_length` columns.
        **kwargs: base layer keyword arguments, such as `name`.

    Call arguments:
        inputs: string tensor `(batch_size,)` (or `(batch_size, 1)`).

    Returns:
        int32 tensor `(batch_size, T)`, `T <= max_length`, padded with 0.

    Example:

    >>> from keras_attention.text import train_subword_model
    >>> model = train_subword_model(["Où est le train ?", "Le train est là."] * 20, 300)
    >>> vectorizer = SubwordVectorizer(model)
    >>> ids = vectorizer.encode(tf.constant(["Où est le chat ?"]), add_end=True)
    >>> vectorizer.decode(ids).numpy()[0].decode("utf-8")
    'Où est le chat ?'
    """

    tokenizer = "subwords"

    def __init__(self, model, max_length=None, pad_to_max_length=False, **kwargs):
        super().__init__(max_length=max_length, pad_to_max_length=pad_to_max_length, **kwargs)
        if isinstance(model, (str, os.PathLike)):
            with open(model, "rb") as f:
                model, name = f.read(), repr(os.fspath(model))
        elif isinstance(model, bytes):
            name = "`model`"
        else:
            raise TypeError(
                "`model` must be the bytes of a SentencePiece model or a path. "
                f"Received: {type(model).__name__}"
            )
        self._vocabulary_size = check_subword_model(model, name=name)
        self._model = model
        self._graph_tokenizers = weakref.WeakKeyDictionary()
        self.built = True

    def _sentencepiece(self):
        """A `SentencepieceTokenizer` whose model resource lives in the current graph.

        tf-text's SentencePiece resource belongs to the kernel that creates
        it. Created once, eagerly, and captured by every function, it would
        vanish whenever TensorFlow clears its eager kernel cache (which
        `tf.random.set_seed` and `keras.utils.set_random_seed` do). So each
        graph (each traced function, `tf.data` function, exported
        signature) gets its own `SentencepieceOp` node, holding the model as
        an attribute, and eager calls make one on the fly (the eager kernel
        cache keeps it while it can).
        """
        if tf.executing_eagerly():
            return tf_text.SentencepieceTokenizer(model=self._model, out_type=tf.int32)
        graph = tf.compat.v1.get_default_graph()
        tokenizer = self._graph_tokenizers.get(graph)
        if tokenizer is None:
            tokenizer = tf_text.SentencepieceTokenizer(model=self._model, out_type=tf.int32)
            self._graph_tokenizers[graph] = tokenizer
        return tokenizer

    @property
    def model(self):
        """The serialized SentencePiece model (bytes)."""
        return self._model

    @property
    def vocabulary_size(self):
        """The number of pieces of the model, reserved ids and byte pieces included."""
        return self._vocabulary_size

    @property
    def forbidden_output_ids(self):
        """`(unk_id,)`: with byte fallback, no text needs `[UNK]`."""
        return (UNK_ID,)

    def token_ids(self, texts):
        """SentencePiece ids of `normalize(texts)`: ragged int32, no cutting."""
        return self._sentencepiece().tokenize(normalize(texts))

    def tokenize(self, texts):
        """The pieces of `texts` as strings (`"▁Va"`, `"▁!"`, `"<0xC5>"`)."""
        return self.ids_to_tokens(self.token_ids(texts))

    def ids_to_tokens(self, ids):
        """Maps ids to their pieces (`""` for padding, `[UNK]` for ids out of range).

        Args:
            ids: integer tensor or `tf.RaggedTensor` of any shape.

        Returns:
            A string tensor of the same shape.
        """
        if isinstance(ids, tf.RaggedTensor):
            return tf.ragged.map_flat_values(self.ids_to_tokens, ids)
        ids = tf.cast(ids, tf.int32)
        in_range = (ids >= 0) & (ids < self.vocabulary_size)
        ids = tf.where(in_range, ids, UNK_ID)
        pieces = self._sentencepiece().id_to_string(ids)
        return tf.where(ids == PAD_ID, "", pieces)

    def _join(self, ids):
        in_range = (ids >= 0) & (ids < self.vocabulary_size)
        ids = tf.where(in_range, ids, UNK_ID)
        # Padding, [START] and [END] are control pieces: they decode to nothing.
        return self._sentencepiece().detokenize(tf.RaggedTensor.from_tensor(ids, padding=PAD_ID))

    def get_config(self):
        config = super().get_config()
        config["model"] = base64.b64encode(self._model).decode("ascii")
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("model"), str):
            config["model"] = base64.b64decode(config["model"])
        return cls(**config)
