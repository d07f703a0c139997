"""Additive (Bahdanau) attention."""

import math

import keras
from keras import ops

from keras_attention.layers.base_attention import BaseAttention


def _check_units(units):
    if isinstance(units, bool) or not isinstance(units, int) or units <= 0:
        raise ValueError(f"`units` must be a positive integer. Received: units={units}")
    return units


def additive_scores(query, keys, query_kernel, score_vector, bias=None):
    """The additive score `v . tanh(s @ W_q + keys_i [+ b])`, shared by Bahdanau
    attention and Luong's `"concat"` score.

    Args:
        query: `(batch_size, Tq, dq)`.
        keys: `(batch_size, Tv, units)`, the values already projected by `W_k`.
        query_kernel: `W_q`, `(dq, units)`, or `None` for a query already projected
            (`(batch_size, Tq, units)`, e.g. by a layer of the caller's choice).
        score_vector: `v`, `(units,)`.
        bias: Optional `(units,)` added inside the `tanh`.

    Returns:
        Scores of shape `(batch_size, Tq, Tv)`.
    """
    processed_query = query if query_kernel is None else ops.matmul(query, query_kernel)
    # (b, Tq, 1, units) + (b, 1, Tv, units) -> (b, Tq, Tv, units)
    hidden = ops.expand_dims(processed_query, 2) + ops.expand_dims(keys, 1)
    if bias is not None:
        hidden = hidden + bias
    return ops.einsum("bqtu,u->bqt", ops.tanh(hidden), score_vector)


@keras.saving.register_keras_serializable(package="keras_attention")
class BahdanauAttention(BaseAttention):
    """Additive attention (Bahdanau et al., 2015), with the keys projected once.

    For a query `s` (a decoder state) and values `h_1..h_Tv` (encoder outputs,
    or any set of feature vectors), the computation follows the steps:

    1. `keys = h @ W_k`, shape `(batch_size, Tv, units)`: once per sequence
       (`prepare_keys(values)`), not at every decoder step.
    2. `scores_i = v . tanh(s @ W_q + keys_i)`, shape `(batch_size, Tq, Tv)`.
       With `normalize=True` (Salimans & Kingma weight normalization, as in
       TF-Addons `BahdanauAttention(normalize=True)`):
       `scores_i = (g * v / ||v||) . tanh(s @ W_q + keys_i + b)`, with a learned
       scalar `g` (initialised to `sqrt(1 / units)`) and a bias `b`.
    3. `weights = softmax(scores)` over the unmasked positions (or a one-hot of
       the argmax with `hard=True`); masked positions get exactly 0.
    4. `context = weights @ h`.

    Weights: `key_kernel` `(dv, units)`, `query_kernel` `(dq, units)`,
    `score_kernel` (`v`) `(units,)`, and with `normalize=True` `score_scale` (`g`)
    `()` and `score_bias` (`b`) `(units,)`.

    Args:
        units: Positive integer, the size of the hidden layer of the score
            (required).
        normalize: Boolean, use the weight-normalized score. Defaults to `False`.
        kernel_initializer: Initializer of `W_q`, `W_k` and `v`. Defaults to
            `"glorot_uniform"`.
        kernel_regularizer: Optional regularizer of `W_q`, `W_k` and `v`.
            Defaults to `None`.
        hard: Boolean, hard (argmax, one-hot) attention instead of the softmax.
            Not differentiable with respect to the scores. Defaults to `False`.
        dropout: Float in `[0, 1)`, dropout on the weights during training.
            Defaults to `0.0`.
        seed: Optional integer, the seed of the dropout. Defaults to `None`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: `(batch_size, dq)` for one decoder step or `(batch_size, Tq, dq)`.
        values: `(batch_size, Tv, dv)`.
        mask: Optional boolean `(batch_size, Tv)`, `True` at real positions.
            Defaults to the Keras mask carried by `values`.
        keys: Optional output of `prepare_keys(values)`; computed if `None`.
        query_mask: Optional boolean `query.shape[:-1]`; padded query steps get
            zero context and weights. Defaults to the Keras mask of `query`.
        training: Boolean, whether dropout is applied.
        hard: Optional boolean overriding `hard` for this call.
        use_causal_mask: Boolean, mask value positions `j > i` for query step
            `i` (rank-3 query). Defaults to `False`.

    Returns:
        `(context, weights)`: `context` of shape `(batch_size, dv)` or
        `(batch_size, Tq, dv)`, `weights` of shape `(batch_size, Tv)` or
        `(batch_size, Tq, Tv)`.

    Example:

    ```python
    attention = BahdanauAttention(units=16)
    values = keras.random.normal((2, 5, 8))  # e.g. encoder outputs
    mask = keras.ops.array([[True] * 5, [True] * 3 + [False] * 2])
    context, weights = attention(keras.random.normal((2, 4)), values, mask=mask)
    # context: (2, 8); weights: (2, 5), weights[1, 3:] == 0

    # Step-wise decoding: project the keys once, then each step is cheap.
    keys = attention.prepare_keys(values)
    state = keras.random.normal((2, 4))
    context, weights = attention(state, values, mask=mask, keys=keys)
    ```
    """

    def __init__(
        self,
        units,
        normalize=False,
        kernel_initializer="glorot_uniform",
        kernel_regularizer=None,
        hard=False,
        dropout=0.0,
        seed=None,
        **kwargs,
    ):
        super().__init__(hard=hard, dropout=dropout, seed=seed, **kwargs)
        self.units = _check_units(units)
        if not isinstance(normalize, bool):
            raise ValueError(f"`normalize` must be a boolean. Received: normalize={normalize}")
        self.normalize = normalize
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.key_kernel = None
        self.query_kernel = None
        self.score_kernel = None
        self.score_scale = None
        self.score_bias = None

    def _build_keys(self, values_shape):
        if self.key_kernel is None:
            self.key_kernel = self.add_weight(
                name="key_kernel",
                shape=(values_shape[-1], self.units),
                initializer=self.kernel_initializer,
                regularizer=self.kernel_regularizer,
            )

    def build(self, query_shape, values_shape):
        super().build(query_shape, values_shape)
        self.query_kernel = self.add_weight(
            name="query_kernel",
            shape=(query_shape[-1], self.units),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
        )
        self.score_kernel = self.add_weight(
            name="score_kernel",
            shape=(self.units,),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
        )
        if self.normalize:
            self.score_scale = self.add_weight(
                name="score_scale",
                shape=(),
                initializer=keras.initializers.Constant(math.sqrt(1.0 / self.units)),
            )
            self.score_bias = self.add_weight(
                name="score_bias", shape=(self.units,), initializer="zeros"
            )

    def _prepare_keys(self, values):
        return ops.matmul(values, self._cast(self.key_kernel))

    def _score_vector(self):
        """`v`, or `g * v / ||v||` (computed in float32) when normalized."""
        if not self.normalize:
            return self._cast(self.score_kernel)
        v = ops.cast(self.score_kernel, "float32")
        g = ops.cast(self.score_scale, "float32")
        return self._cast(g * v * ops.rsqrt(ops.sum(ops.square(v))))

    def _score(self, query, keys):
        bias = self._cast(self.score_bias) if self.normalize else None
        return additive_scores(
            query, keys, self._cast(self.query_kernel), self._score_vector(), bias=bias
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "normalize": self.normalize,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
            }
        )
        return config
