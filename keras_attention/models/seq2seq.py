"""The attention-based encoder-decoder translation model."""

import keras

from keras_attention.models.attention_decoder import AttentionDecoder, saved_score_scale
from keras_attention.models.encoder import Encoder


@keras.saving.register_keras_serializable(package="keras_attention")
class Seq2Seq(keras.Model):
    """An RNN encoder-decoder with Bahdanau, Luong or no attention.

    Trained with plain `model.fit` on `((source_ids, target_in), target_out)`
    batches of int token ids (0 = padding); `call` returns float32 logits
    `(batch_size, Tt, target_vocabulary_size)`. For decoding, the model
    supplies the next-step logits and state (`initial_decode_state`,
    `next_logits`); the search strategy (`keras_attention.decoding`) runs the
    loop, so the model does not know the strategy.

    Args:
        source_vocabulary_size: int, number of source token ids (required).
        target_vocabulary_size: int, number of target token ids (required).
        embedding_dim: int, source and target embedding size. Defaults to
            `256`.
        encoder_units: int, encoder RNN units per direction. Defaults to
            `256`.
        decoder_units: int, decoder RNN units. Defaults to `512`.
        encoder_layers: int, stacked encoder RNN layers. Defaults to `1`.
        cell: `"gru"` or `"lstm"`. Defaults to `"gru"`.
        bidirectional: bool, bidirectional encoder. Defaults to `True`.
        attention: `"luong"`, `"bahdanau"` or `"none"` (the plain
            encoder-decoder baseline with one fixed context vector). Defaults
            to `"luong"`.
        score: the Luong score function (`"dot"`, `"general"`, `"concat"`,
            `"scaled_dot"`, `"cosine"`, `"location"`). Defaults to
            `"cosine"`.
        attention_units: int or None, units of the additive/concat score.
            Defaults to `None`: `decoder_units`.
        input_feeding: bool, Luong input feeding (feed `h~_{t-1}` to the
            cell). Defaults to `False` (see `AttentionDecoder`).
        tie_embeddings: bool, tie the output projection to the target
            embedding matrix. Defaults to `False`.
        dropout: float, dropout rate. Defaults to `0.0`.
        max_source_length: int or None, the longest source the model is used
            with (required by the `"location"` score). Defaults to `None`.
        deep_output: `"maxout"` or `"tanh"`, the output layer of the
            `"bahdanau"` and `"none"` decoders (see `AttentionDecoder`).
            Defaults to `"maxout"`.
        normalize: bool, weight-normalized Bahdanau score. Defaults to
            `False`.
        score_scale: bool or None, multiply the Luong scores by a learned
            scalar (see `AttentionDecoder`). Defaults to `None`: the score's
            default.
        **kwargs: `keras.Model` keyword arguments, such as `name`.

    Call arguments:
        inputs: tuple `(source_ids, target_in)` of int tensors
            `(batch_size, Ts)` and `(batch_size, Tt)`, 0 = padding.
        training: bool, whether dropout is applied. Defaults to `False`.

    Returns:
        float32 logits `(batch_size, Tt, target_vocabulary_size)`
        (`call_with_attention` also returns the attention weights).

    Measurements behind the defaults: docs/results.md and
    docs/research/model-notes.md.

    Example:

    >>> model = Seq2Seq(100, 120, embedding_dim=8, encoder_units=8, decoder_units=16)
    >>> source = keras.ops.ones((2, 5), dtype="int32")
    >>> target_in = keras.ops.ones((2, 7), dtype="int32")
    >>> model((source, target_in)).shape
    TensorShape([2, 7, 120])
    """

    def __init__(
        self,
        source_vocabulary_size,
        target_vocabulary_size,
        embedding_dim=256,
        encoder_units=256,
        decoder_units=512,
        encoder_layers=1,
        cell="gru",
        bidirectional=True,
        attention="luong",
        score="cosine",
        attention_units=None,
        input_feeding=False,
        tie_embeddings=False,
        dropout=0.0,
        max_source_length=None,
        deep_output="maxout",
        normalize=False,
        score_scale=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.source_vocabulary_size = source_vocabulary_size
        self.target_vocabulary_size = target_vocabulary_size
        self.embedding_dim = embedding_dim
        self.encoder_units = encoder_units
        self.decoder_units = decoder_units
        self.encoder_layers = encoder_layers
        self.cell = cell
        self.bidirectional = bidirectional
        self.attention = attention
        self.score = score
        self.attention_units = attention_units
        self.input_feeding = input_feeding
        self.tie_embeddings = tie_embeddings
        self.dropout = dropout
        self.max_source_length = max_source_length
        self.deep_output = deep_output
        self.normalize = normalize

        self.encoder = Encoder(
            source_vocabulary_size,
            embedding_dim=embedding_dim,
            units=encoder_units,
            num_layers=encoder_layers,
            cell=cell,
            bidirectional=bidirectional,
            dropout=dropout,
            dtype=self.dtype_policy,
            name="encoder",
        )
        self.decoder = AttentionDecoder(
            target_vocabulary_size,
            embedding_dim=embedding_dim,
            units=decoder_units,
            attention=attention,
            score=score,
            attention_units=attention_units,
            cell=cell,
            input_feeding=input_feeding,
            tie_embeddings=tie_embeddings,
            dropout=dropout,
            max_source_length=max_source_length,
            deep_output=deep_output,
            normalize=normalize,
            score_scale=score_scale,
            dtype=self.dtype_policy,
            name="decoder",
        )
        self.score_scale = self.decoder.score_scale

    def build(self, input_shape=None):
        # Run one tiny batch so every sublayer creates its weights; a
        # `.keras` file can then be loaded into a freshly built model.
        source = keras.ops.ones((1, 2), dtype="int32")
        self.call((source, source))

    def call(self, inputs, training=False):
        logits, _ = self.call_with_attention(inputs, training=training)
        return logits

    def call_with_attention(self, inputs, training=False):
        """Teacher-forced logits and attention weights.

        Args:
            inputs: tuple `(source_ids, target_in)` of int tensors
                `(batch_size, Ts)` and `(batch_size, Tt)`.

        Returns:
            `(logits, attention)`: float32 `(batch_size, Tt, V)` and
            `(batch_size, Tt, Ts)`.
        """
        if not isinstance(inputs, (tuple, list)) or len(inputs) != 2:
            raise ValueError(
                "Seq2Seq expects inputs `(source_ids, target_in)`. "
                f"Received: {type(inputs).__name__} of length "
                f"{len(inputs) if hasattr(inputs, '__len__') else 'n/a'}"
            )
        source_ids, target_in = inputs
        for name, tensor in (("source_ids", source_ids), ("target_in", target_in)):
            if len(tensor.shape) != 2:
                raise ValueError(
                    f"`{name}` must have shape (batch_size, length). Received: shape={tensor.shape}"
                )
        annotations, summary = self.encoder(source_ids, training=training)
        source_mask = keras.ops.not_equal(source_ids, 0)
        return self.decoder(target_in, annotations, source_mask, summary, training=training)

    def compute_mask(self, inputs, mask=None):
        return None

    # ------------------------------------------------------------- decoding

    def initial_decode_state(self, source_ids):
        """Encodes `source_ids` `(batch_size, Ts)` into the first decoding state.

        Every leaf of the returned nest has the batch as its first dimension,
        so beam search can tile and reorder it.
        """
        if not self.decoder.built:
            self.build()
        annotations, summary = self.encoder(source_ids, training=False)
        source_mask = keras.ops.not_equal(source_ids, 0)
        return self.decoder.initial_state(annotations, source_mask, summary)

    def next_logits(self, step, token_ids, state):
        """The next-step function that decoding strategies call.

        Args:
            step: scalar int, the step index (unused by this model).
            token_ids: int `(batch_size,)`, the previous tokens.
            state: the nest from `initial_decode_state` or a previous call.

        Returns:
            `(logits, state, attention)`: float32 `(batch_size, V)`, the new
            state, float32 `(batch_size, Ts)`.
        """
        del step
        embedded = self.decoder.embed(token_ids)
        output, state, attention = self.decoder.step(embedded, state)
        return self.decoder.logits(output), state, attention

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "source_vocabulary_size": self.source_vocabulary_size,
                "target_vocabulary_size": self.target_vocabulary_size,
                "embedding_dim": self.embedding_dim,
                "encoder_units": self.encoder_units,
                "decoder_units": self.decoder_units,
                "encoder_layers": self.encoder_layers,
                "cell": self.cell,
                "bidirectional": self.bidirectional,
                "attention": self.attention,
                "score": self.score,
                "attention_units": self.attention_units,
                "input_feeding": self.input_feeding,
                "tie_embeddings": self.tie_embeddings,
                "dropout": self.dropout,
                "max_source_length": self.max_source_length,
                "deep_output": self.deep_output,
                "normalize": self.normalize,
                "score_scale": self.score_scale,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        # Models saved before `deep_output` existed had the tanh readout.
        return super().from_config(
            {"deep_output": "tanh", "score_scale": saved_score_scale(config), **config}
        )
