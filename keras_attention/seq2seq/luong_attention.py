"""TFA-style Luong (multiplicative) attention mechanisms."""

import functools

import keras
from keras import ops

from keras_attention.seq2seq.attention_mechanism import AttentionMechanism, dirac_alignments
from keras_attention.seq2seq.probability import MONOTONIC_MODES, monotonic_probability_fn


def luong_score(query, keys, scale=None):
    """`score_i = query . keys_i` (times `scale` if given): `(batch_size, max_time)`.

    `keys = memory_layer(memory)` have the query's depth (Luong's "general" score
    with `W_a` as the memory layer's kernel).
    """
    if query.shape[-1] != keys.shape[-1]:
        raise ValueError(
            "Incompatible or unknown inner dimensions between query and keys. "
            f"Received: query depth {query.shape[-1]}, keys depth {keys.shape[-1]}; "
            "set `units` to the query's depth."
        )
    # (batch, 1, depth) @ (batch, depth, max_time) -> (batch, max_time)
    score = ops.squeeze(ops.matmul(ops.expand_dims(query, 1), ops.swapaxes(keys, 1, 2)), 1)
    if scale is not None:
        score = scale * score
    return score


@keras.saving.register_keras_serializable(package="keras_attention.seq2seq")
class LuongAttention(AttentionMechanism):
    """Luong-style (multiplicative) attention mechanism, TFA's `LuongAttention`.

    `score_i = query . keys_i` with `keys = memory_layer(memory)` (Luong et al., 2015),
    times a learned scalar `attention_g` with `scale=True`; `alignments =
    probability_fn(score)` over the unpadded memory positions. `units` must equal
    the query's depth.

    Variables, in order: `attention_g` `()` with `scale=True`, then `memory_layer`
    (`Dense(units, use_bias=False)` unless given).

    Args:
        units: The depth of the memory layer (the query's depth).
        memory: Optional memory `(batch_size, max_time, depth)` to bind now.
        memory_sequence_length: Optional lengths `(batch_size,)` of the memory.
        scale: Boolean, multiply the score by a learned scalar. Defaults to `False`.
        probability_fn: `"softmax"` or `"hardmax"`. Defaults to `"softmax"`.
        dtype: The dtype of the layers.
        name: Layer name. Defaults to `"LuongAttention"`.
        **kwargs: `memory_layer` and base layer keyword arguments.
    """

    def __init__(
        self,
        units,
        memory=None,
        memory_sequence_length=None,
        scale=False,
        probability_fn="softmax",
        dtype=None,
        name="LuongAttention",
        **kwargs,
    ):
        self.probability_fn_name = probability_fn
        fn = self._process_probability_fn(probability_fn)
        memory_layer = kwargs.pop("memory_layer", None) or keras.layers.Dense(
            units, name="memory_layer", use_bias=False, dtype=dtype
        )
        self.units = units
        self.scale = scale
        self.scale_weight = None
        super().__init__(
            memory=memory,
            memory_sequence_length=memory_sequence_length,
            query_layer=None,
            memory_layer=memory_layer,
            probability_fn=lambda score, _: fn(score),
            name=name,
            dtype=dtype,
            **kwargs,
        )

    def _build_own_weights(self):
        if self.scale:
            self.scale_weight = self.add_weight(name="attention_g", shape=(), initializer="ones")

    def _calculate_attention(self, query, state):
        alignments = self.probability_fn(luong_score(query, self.keys, self.scale_weight), state)
        return alignments, alignments

    def get_config(self):
        config = super().get_config()
        config.update(
            {"units": self.units, "scale": self.scale, "probability_fn": self.probability_fn_name}
        )
        return config


@keras.saving.register_keras_serializable(package="keras_attention.seq2seq")
class LuongMonotonicAttention(AttentionMechanism):
    """Monotonic attention with Luong's score, TFA's `LuongMonotonicAttention`.

    `query . keys_i` (times `attention_g` with `scale=True`) plus a learned scalar
    `attention_score_bias` goes through a sigmoid into `monotonic_attention` with the
    previous alignments (Raffel et al., 2017); the initial alignments are
    `[1, 0, ..., 0]`.

    Variables, in order: `attention_g` `()` with `scale=True`,
    `attention_score_bias` `()`, then `memory_layer`.

    Args:
        units: The depth of the memory layer (the query's depth).
        memory: Optional memory to bind now.
        memory_sequence_length: Optional lengths of the memory.
        scale: Boolean, multiply the score by a learned scalar.
        sigmoid_noise: Standard deviation of the pre-sigmoid noise (0: none).
        sigmoid_noise_seed: Optional seed of the noise.
        score_bias_init: Initial value of the score bias.
        mode: `"parallel"` (default), `"recursive"` or `"hard"`.
        dtype: The dtype of the layers.
        name: Layer name. Defaults to `"LuongMonotonicAttention"`.
        **kwargs: `memory_layer` and base layer keyword arguments.
    """

    def __init__(
        self,
        units,
        memory=None,
        memory_sequence_length=None,
        scale=False,
        sigmoid_noise=0.0,
        sigmoid_noise_seed=None,
        score_bias_init=0.0,
        mode="parallel",
        dtype=None,
        name="LuongMonotonicAttention",
        **kwargs,
    ):
        if mode not in MONOTONIC_MODES:
            raise ValueError(f"`mode` must be one of {MONOTONIC_MODES}. Received: mode={mode!r}")
        memory_layer = kwargs.pop("memory_layer", None) or keras.layers.Dense(
            units, name="memory_layer", use_bias=False, dtype=dtype
        )
        self.units = units
        self.scale = scale
        self.sigmoid_noise = sigmoid_noise
        self.sigmoid_noise_seed = sigmoid_noise_seed
        self.score_bias_init = score_bias_init
        self.mode = mode
        self.attention_g = None
        self.attention_score_bias = None
        super().__init__(
            memory=memory,
            memory_sequence_length=memory_sequence_length,
            query_layer=None,
            memory_layer=memory_layer,
            probability_fn=functools.partial(
                monotonic_probability_fn,
                sigmoid_noise=sigmoid_noise,
                mode=mode,
                seed=sigmoid_noise_seed,
            ),
            name=name,
            dtype=dtype,
            **kwargs,
        )

    def _build_own_weights(self):
        if self.scale:
            self.attention_g = self.add_weight(name="attention_g", shape=(), initializer="ones")
        self.attention_score_bias = self.add_weight(
            name="attention_score_bias",
            shape=(),
            initializer=keras.initializers.Constant(self.score_bias_init),
        )

    def _calculate_attention(self, query, state):
        score = luong_score(query, self.keys, self.attention_g) + self.attention_score_bias
        alignments = self.probability_fn(score, state)
        return alignments, alignments

    def initial_alignments(self, batch_size, dtype):
        """`[1, 0, ..., 0]` for every batch entry (a Dirac at the first position)."""
        return dirac_alignments(batch_size, self._alignments_size, dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "scale": self.scale,
                "sigmoid_noise": self.sigmoid_noise,
                "sigmoid_noise_seed": self.sigmoid_noise_seed,
                "score_bias_init": self.score_bias_init,
                "mode": self.mode,
            }
        )
        return config
