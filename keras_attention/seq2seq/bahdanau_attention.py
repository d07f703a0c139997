"""TFA-style Bahdanau (additive) attention mechanisms, the score shared with
`keras_attention.layers.BahdanauAttention` (`additive_scores`)."""

import functools
import math

import keras
from keras import ops

from keras_attention.layers.bahdanau_attention import additive_scores
from keras_attention.seq2seq.attention_mechanism import AttentionMechanism, dirac_alignments
from keras_attention.seq2seq.probability import MONOTONIC_MODES, monotonic_probability_fn


@keras.saving.register_keras_serializable(package="keras_attention.seq2seq")
class BahdanauAttention(AttentionMechanism):
    """Bahdanau-style (additive) attention mechanism, TFA's `BahdanauAttention`.

    `score_i = v . tanh(keys_i + query_layer(query))` with `keys = memory_layer(memory)`
    (Bahdanau et al., 2015). With `normalize=True` (Salimans & Kingma weight
    normalization): `score_i = (g v / ||v||) . tanh(keys_i + query_layer(query) + b)`.
    Then `alignments = probability_fn(score)` over the unpadded memory positions.

    Variables, in order: `attention_v` `(units,)`, with `normalize=True`
    `attention_g` `()` and `attention_b` `(units,)`, then `query_layer` and
    `memory_layer` (each `Dense(units, use_bias=False)` unless given).

    Args:
        units: The depth of the query and memory layers.
        memory: Optional memory `(batch_size, max_time, depth)` to bind now.
        memory_sequence_length: Optional lengths `(batch_size,)` of the memory.
        normalize: Boolean, use the weight-normalized score. Defaults to `False`.
        probability_fn: `"softmax"` or `"hardmax"`. Defaults to `"softmax"`.
        kernel_initializer: Initializer of `attention_v`. Defaults to
            `"glorot_uniform"`.
        dtype: The dtype of the layers.
        name: Layer name. Defaults to `"BahdanauAttention"`.
        **kwargs: `query_layer`, `memory_layer` and base layer keyword arguments.

    Example:

    >>> import numpy as np
    >>> memory = np.random.rand(2, 5, 6).astype("float32")
    >>> mechanism = BahdanauAttention(4, memory=memory, memory_sequence_length=[5, 3])
    >>> alignments, _ = mechanism([np.ones((2, 3), "float32"), None])
    >>> alignments.shape
    TensorShape([2, 5])
    """

    def __init__(
        self,
        units,
        memory=None,
        memory_sequence_length=None,
        normalize=False,
        probability_fn="softmax",
        kernel_initializer="glorot_uniform",
        dtype=None,
        name="BahdanauAttention",
        **kwargs,
    ):
        self.probability_fn_name = probability_fn
        fn = self._process_probability_fn(probability_fn)
        query_layer = kwargs.pop("query_layer", None) or keras.layers.Dense(
            units, name="query_layer", use_bias=False, dtype=dtype
        )
        memory_layer = kwargs.pop("memory_layer", None) or keras.layers.Dense(
            units, name="memory_layer", use_bias=False, dtype=dtype
        )
        self.units = units
        self.normalize = normalize
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.attention_v = None
        self.attention_g = None
        self.attention_b = None
        super().__init__(
            memory=memory,
            memory_sequence_length=memory_sequence_length,
            query_layer=query_layer,
            memory_layer=memory_layer,
            probability_fn=lambda score, _: fn(score),
            name=name,
            dtype=dtype,
            **kwargs,
        )

    def _build_normalization(self):
        if self.normalize:
            self.attention_g = self.add_weight(
                name="attention_g",
                shape=(),
                initializer=keras.initializers.Constant(math.sqrt(1.0 / self.units)),
            )
            self.attention_b = self.add_weight(
                name="attention_b", shape=(self.units,), initializer="zeros"
            )

    def _build_own_weights(self):
        self.attention_v = self.add_weight(
            name="attention_v", shape=(self.units,), initializer=self.kernel_initializer
        )
        self._build_normalization()

    def _score(self, query):
        processed_query = self.query_layer(query) if self.query_layer else query
        score_vector = self.attention_v
        if self.normalize:
            score_vector = (
                self.attention_g
                * self.attention_v
                * ops.rsqrt(ops.sum(ops.square(self.attention_v)))
            )
        # (batch, 1, units) against keys (batch, max_time, units) -> (batch, max_time).
        score = additive_scores(
            ops.expand_dims(processed_query, 1), self.keys, None, score_vector, self.attention_b
        )
        return ops.squeeze(score, 1)

    def _calculate_attention(self, query, state):
        alignments = self.probability_fn(self._score(query), state)
        return alignments, alignments

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "normalize": self.normalize,
                "probability_fn": self.probability_fn_name,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            }
        )
        return config


@keras.saving.register_keras_serializable(package="keras_attention.seq2seq")
class BahdanauMonotonicAttention(BahdanauAttention):
    """Monotonic attention with Bahdanau's score, TFA's `BahdanauMonotonicAttention`.

    The additive score plus a learned scalar `attention_score_bias` goes through a
    sigmoid (after optional pre-sigmoid noise) into `monotonic_attention` with the
    previous alignments (Raffel et al., 2017); the initial alignments are
    `[1, 0, ..., 0]`.

    Variables, in order: `attention_v`, `attention_score_bias` `()`, with
    `normalize=True` `attention_g` and `attention_b`, then `query_layer` and
    `memory_layer`.

    Args:
        units: The depth of the query and memory layers.
        memory: Optional memory to bind now.
        memory_sequence_length: Optional lengths of the memory.
        normalize: Boolean, use the weight-normalized score.
        sigmoid_noise: Standard deviation of the pre-sigmoid noise (0: none).
        sigmoid_noise_seed: Optional seed of the noise.
        score_bias_init: Initial value of the score bias.
        mode: `"parallel"` (default), `"recursive"` or `"hard"`; see
            `monotonic_attention`.
        kernel_initializer: Initializer of `attention_v`.
        dtype: The dtype of the layers.
        name: Layer name. Defaults to `"BahdanauMonotonicAttention"`.
        **kwargs: `query_layer`, `memory_layer` and base layer keyword arguments.
    """

    def __init__(
        self,
        units,
        memory=None,
        memory_sequence_length=None,
        normalize=False,
        sigmoid_noise=0.0,
        sigmoid_noise_seed=None,
        score_bias_init=0.0,
        mode="parallel",
        kernel_initializer="glorot_uniform",
        dtype=None,
        name="BahdanauMonotonicAttention",
        **kwargs,
    ):
        if mode not in MONOTONIC_MODES:
            raise ValueError(f"`mode` must be one of {MONOTONIC_MODES}. Received: mode={mode!r}")
        self.sigmoid_noise = sigmoid_noise
        self.sigmoid_noise_seed = sigmoid_noise_seed
        self.score_bias_init = score_bias_init
        self.mode = mode
        self.attention_score_bias = None
        kwargs.pop("probability_fn", None)
        super().__init__(
            units,
            normalize=normalize,
            kernel_initializer=kernel_initializer,
            dtype=dtype,
            name=name,
            **kwargs,
        )
        self.default_probability_fn = functools.partial(
            monotonic_probability_fn,
            sigmoid_noise=sigmoid_noise,
            mode=mode,
            seed=sigmoid_noise_seed,
        )
        self.probability_fn = self.default_probability_fn
        if memory is not None:
            self.setup_memory(memory, memory_sequence_length)

    def _build_own_weights(self):
        self.attention_v = self.add_weight(
            name="attention_v", shape=(self.units,), initializer=self.kernel_initializer
        )
        self.attention_score_bias = self.add_weight(
            name="attention_score_bias",
            shape=(),
            initializer=keras.initializers.Constant(self.score_bias_init),
        )
        self._build_normalization()

    def _calculate_attention(self, query, state):
        score = self._score(query) + self.attention_score_bias
        alignments = self.probability_fn(score, state)
        return alignments, alignments

    def initial_alignments(self, batch_size, dtype):
        """`[1, 0, ..., 0]` for every batch entry (a Dirac at the first position)."""
        return dirac_alignments(batch_size, self._alignments_size, dtype)

    def get_config(self):
        config = super().get_config()
        del config["probability_fn"]
        config.update(
            {
                "sigmoid_noise": self.sigmoid_noise,
                "sigmoid_noise_seed": self.sigmoid_noise_seed,
                "score_bias_init": self.score_bias_init,
                "mode": self.mode,
            }
        )
        return config
