"""The attention-based encoder-decoder translation model."""

import keras

from keras_attention.attention_recipe import luong_scaling
from keras_attention.layers.bahdanau_attention import BahdanauAttention
from keras_attention.layers.base_attention import BaseAttention
from keras_attention.layers.luong_attention import LuongAttention
from keras_attention.models.bahdanau_decoder import BahdanauDecoder
from keras_attention.models.encoder import Encoder
from keras_attention.models.luong_decoder import LuongDecoder

DECODERS = {"bahdanau": BahdanauDecoder, "luong": LuongDecoder}
ATTENTION_SHORTCUTS = ("luong", "bahdanau", "none")


@keras.saving.register_keras_serializable(package="keras_attention")
class Seq2Seq(keras.Model):
    """An RNN encoder-decoder composed with an attention layer and a decoder family.

    Trained with plain `model.fit` on `((source_ids, target_in), target_out)`
    batches of int token ids (0 = padding); `call` returns float32 logits
    `(batch_size, Tt, target_vocabulary_size)`. For decoding, the model
    supplies the next-step logits and state (`initial_decode_state`,
    `next_logits`); the search strategy (`keras_attention.decoding`) runs the
    loop, so the model does not know the strategy.

    The attention is a layer object: any `BaseAttention`, a built-in
    configured as you like or your own subclass (registered with
    `keras.saving.register_keras_serializable` so that `.keras` files and
    exports round-trip it). The decoder family says where its query comes
    from: `"bahdanau"` queries with the previous state `s_{t-1}` and feeds
    the context into the cell (`BahdanauDecoder`); `"luong"` queries with the
    current state `s_t` and combines `h~_t = tanh(W_c [c_t; s_t])`
    (`LuongDecoder`). Any attention layer works with either family.

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
        attention: a `BaseAttention` layer; `None` (or `"none"`) for the
            plain encoder-decoder baseline with one fixed context vector; or a
            shortcut: `"luong"` = `LuongAttention(score="cosine", scale=True)`,
            `"bahdanau"` = `BahdanauAttention(decoder_units)`. A shortcut's
            layer takes the model's dtype policy. Defaults to `"luong"`.
        decoder: `"bahdanau"` or `"luong"`, the decoder family. Defaults to
            `None`: `"bahdanau"` for a `BahdanauAttention` layer and for no
            attention, `"luong"` otherwise.
        input_feeding: bool, Luong input feeding (feed `h~_{t-1}` to the
            cell); `"luong"` decoder only. Defaults to `False`.
        tie_embeddings: bool, tie the output projection to the target
            embedding matrix. Defaults to `False`.
        dropout: float, dropout rate. Defaults to `0.0`.
        deep_output: `"maxout"` or `"tanh"`, the output layer of the
            `"bahdanau"` decoder (see `BahdanauDecoder`). Defaults to
            `"maxout"`.
        conditional: bool, the `"bahdanau"` decoder queries with the state after
            reading the previous token (the conditional GRU, see
            `BahdanauDecoder`). Defaults to `False`.
        **kwargs: `keras.Model` keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: tuple `(source_ids, target_in)` of int tensors
            `(batch_size, Ts)` and `(batch_size, Tt)`, 0 = padding.
        training: bool, whether dropout is applied. Defaults to `False`.

    Returns:
        float32 logits `(batch_size, Tt, target_vocabulary_size)`
        (`call_with_attention` also returns the attention weights).

    Example:

    >>> model = Seq2Seq(100, 120, embedding_dim=8, encoder_units=8, decoder_units=16)
    >>> source = keras.ops.ones((2, 5), dtype="int32")
    >>> target_in = keras.ops.ones((2, 7), dtype="int32")
    >>> model((source, target_in)).shape
    TensorShape([2, 7, 120])
    >>> from keras_attention.layers import LuongAttention
    >>> general = Seq2Seq(100, 120, embedding_dim=8, encoder_units=8, decoder_units=16,
    ...                   attention=LuongAttention(score="general"), decoder="bahdanau")
    >>> general((source, target_in)).shape
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
        decoder=None,
        input_feeding=False,
        tie_embeddings=False,
        dropout=0.0,
        deep_output="maxout",
        conditional=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        attention = self._attention_layer(attention, decoder_units)
        if decoder is None:
            decoder = (
                "bahdanau"
                if attention is None or isinstance(attention, BahdanauAttention)
                else "luong"
            )
        if decoder not in DECODERS:
            raise ValueError(
                f"`decoder` must be one of {tuple(DECODERS)}. Received: decoder={decoder!r}"
            )
        if conditional and decoder != "bahdanau":
            raise ValueError(
                "`conditional` (the conditional GRU) is a Bahdanau decoder's query: it needs "
                f"decoder='bahdanau'. Received: conditional=True, decoder={decoder!r}"
            )
        if input_feeding and decoder != "luong":
            raise ValueError(
                "`input_feeding` feeds Luong's h~_t back into the cell: it needs "
                f"decoder='luong'. Received: input_feeding=True, decoder={decoder!r}"
            )
        self.source_vocabulary_size = source_vocabulary_size
        self.target_vocabulary_size = target_vocabulary_size
        self.embedding_dim = embedding_dim
        self.encoder_units = encoder_units
        self.decoder_units = decoder_units
        self.encoder_layers = encoder_layers
        self.cell = cell
        self.bidirectional = bidirectional
        # The attention layer lives in the decoder only (`decoder.attention_layer`):
        # `.keras` files store a layer's weights under the first attribute path that
        # reaches it, and old files have them under `decoder/attention_layer`.
        self.decoder_family = decoder
        self.input_feeding = input_feeding
        self.tie_embeddings = tie_embeddings
        self.dropout = dropout
        self.deep_output = deep_output
        self.conditional = conditional

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
        family_arguments = (
            {"input_feeding": input_feeding}
            if decoder == "luong"
            else {"deep_output": deep_output, "conditional": conditional}
        )
        self.decoder = DECODERS[decoder](
            target_vocabulary_size,
            attention=attention,
            embedding_dim=embedding_dim,
            units=decoder_units,
            cell=cell,
            tie_embeddings=tie_embeddings,
            dropout=dropout,
            dtype=self.dtype_policy,
            name="decoder",
            **family_arguments,
        )

    def _attention_layer(self, attention, decoder_units):
        """The layer for `attention`: itself, a shortcut's layer, or None."""
        if attention is None or attention == "none":
            return None
        if isinstance(attention, BaseAttention):
            return attention
        if isinstance(attention, dict):  # a serialized layer (`get_config`)
            return keras.saving.deserialize_keras_object(attention)
        if attention == "luong":
            return LuongAttention(
                score="cosine",
                **luong_scaling("cosine"),
                dtype=self.dtype_policy,
                name="attention",
            )
        if attention == "bahdanau":
            return BahdanauAttention(decoder_units, dtype=self.dtype_policy, name="attention")
        raise ValueError(
            "`attention` must be a BaseAttention layer, None, or one of "
            f"{ATTENTION_SHORTCUTS}. Received: attention={attention!r}"
        )

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
        so beam search can tile and reorder it. The source embeddings' rows
        are read through the current `WeightSlices` scope, if any.
        """
        if not self.decoder.built:
            self.build()
        annotations, summary = self.encoder(source_ids, training=False)
        source_mask = keras.ops.not_equal(source_ids, 0)
        return self.decoder.initial_state(annotations, source_mask, summary)

    def next_logits(self, step, token_ids, state, projection=None):
        """The next-step function that decoding strategies call.

        Args:
            step: scalar int, the step index (unused by this model).
            token_ids: int `(batch_size,)`, the previous tokens.
            state: the nest from `initial_decode_state` or a previous call.
            projection: `None`, or `output_projection(ids)` for the logits
                of the target ids `ids` only.

        Returns:
            `(logits, state, attention)`: float32 `(batch_size, V)` (`V =
            len(ids)` with `projection`), the new state, float32
            `(batch_size, Ts)`.
        """
        return self.step_function(state, projection)(step, token_ids, state)

    def step_function(self, state, projection=None):
        """`next_logits` with the decoder's weights read and cast once, here.

        Call it once per decoding, before the loop (`Translator` does): the
        returned `next_fn(step, token_ids, state)` gives `next_logits`'
        results to the bit, without casting a weight matrix at each step
        (`BaseDecoder.decoding_weights`, opened as a scope around each step).
        A step reads the target embeddings' rows it looks up with the `gather` of the `WeightSlices` scope open
        when this is called (an export's stored weights: `WeightStorage.gather`
        reads int8 rows and their scales, so that a request converts only those
        rows), or from the whole matrix outside any.

        Args:
            state: the nest from `initial_decode_state`.
            projection: as in `next_logits`.

        Returns:
            `next_fn(step, token_ids, state) -> (logits, state, attention)`, as
            `next_logits`.
        """
        if not self.decoder.built:
            self.build()
        weights = self.decoder.decoding_weights(state, projection)

        def next_fn(step, token_ids, state):
            del step
            with weights:  # the decoder reads the weights cast above
                embedded = self.decoder.embed(token_ids)
                output, state, attention = self.decoder.step(embedded, state)
                logits = self.decoder.logits(output)
            return logits, state, attention

        return next_fn

    def output_projection(self, ids):
        """The output projection restricted to the target ids `ids` `(C,)`:
        `(kernel (output_dim, C), bias (C,))` for `next_logits` (see
        `BaseDecoder.output_projection`; read through the current `WeightSlices`
        scope, if any)."""
        if not self.decoder.built:
            self.build()
        return self.decoder.output_projection(ids)

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
                "attention": keras.saving.serialize_keras_object(self.decoder.attention_layer),
                "decoder": self.decoder_family,
                "input_feeding": self.input_feeding,
                "tie_embeddings": self.tie_embeddings,
                "dropout": self.dropout,
                "deep_output": self.deep_output,
                "conditional": self.conditional,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        if "decoder" not in config:
            config = legacy_config(config)
        return cls(**config)


def require_registered(layer) -> None:
    """Raises `ValueError` unless `layer`'s class is registered with Keras.

    A saved model or run stores the attention layer by its registered name;
    an unregistered class would save but could not be loaded again.
    """
    cls = type(layer)
    if keras.saving.get_registered_object(keras.saving.get_registered_name(cls)) is not cls:
        raise ValueError(
            f"The attention layer class {cls.__name__} is not registered with Keras, so a "
            "saved model or an export of it could not be reloaded: decorate it with "
            "`@keras.saving.register_keras_serializable(package=...)`. "
            f"Received: {cls.__module__}.{cls.__qualname__}"
        )


def legacy_config(config):
    """A model config saved before 0.2.0 (attention and its settings as flat
    arguments) as today's, with the attention layer those models trained with.

    The settings here describe files that no longer change, so they are written
    out rather than taken from today's recipe (`keras_attention.attention_recipe`).
    """
    config = dict(config)
    attention = config.pop("attention", "luong")
    score = config.pop("score", "cosine")
    units = config.pop("attention_units", None) or config.get("decoder_units", 512)
    max_length = config.pop("max_source_length", None)
    normalize = config.pop("normalize", False)
    # Before `score_scale` existed only the cosine score learned its scale.
    score_scale = config.pop("score_scale", score == "cosine")
    # Models saved before `deep_output` existed had the tanh readout.
    config.setdefault("deep_output", "tanh")
    dtype = config.get("dtype")
    if attention == "luong":
        layer = LuongAttention(
            score=score,
            units=units if score == "concat" else None,
            max_length=max_length if score == "location" else None,
            scale=score in ("cosine", "scaled_dot") if score_scale is None else score_scale,
            scale_by_dimension=score == "general",
            dtype=dtype,
            name="attention",
        )
    elif attention == "bahdanau":
        layer = BahdanauAttention(units, normalize=normalize, dtype=dtype, name="attention")
    else:
        layer = None
    config["decoder"] = "luong" if attention == "luong" else "bahdanau"
    if config["decoder"] != "luong":
        config["input_feeding"] = False
    config["attention"] = layer
    return config
