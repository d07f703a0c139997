"""Multiplicative (Luong) attention and its relatives: dot, general, concat, scaled dot,
cosine (content-based) and location scores."""

import math

import keras
from keras import ops

from keras_attention.layers.bahdanau_attention import additive_scores
from keras_attention.layers.base_attention import BaseAttention

SCORES = ("dot", "general", "concat", "scaled_dot", "cosine", "location")
# The scores that `scale_by_dimension=True` divides by sqrt(d).
SCALED_BY_DIMENSION_SCORES = ("dot", "general")

# Floor of the squared norm in the cosine score, as in `tf.math.l2_normalize`, so a zero
# vector (e.g. padding) scores 0 instead of NaN. Applied in float32.
_NORM_EPSILON = 1e-12


def _l2_normalize(x):
    """Unit vectors along the last axis, computed in float32, returned in x's dtype."""
    x32 = ops.cast(x, "float32")
    norm_inv = ops.rsqrt(
        ops.maximum(ops.sum(ops.square(x32), axis=-1, keepdims=True), _NORM_EPSILON)
    )
    return ops.cast(x32 * norm_inv, x.dtype)


@keras.saving.register_keras_serializable(package="keras_attention")
class LuongAttention(BaseAttention):
    """Luong-style (multiplicative) attention with a choice of score function.

    For a query `s` (a decoder state) and values `h_1..h_Tv`, the score of
    position `i` is one of (Luong et al., 2015; Vaswani et al., 2017;
    Graves et al., 2014). Built with default arguments, the layer computes
    exactly this table:

    | `score`        | `score(s, h_i)`                     | keys (`prepare_keys`) |
    | -------------- | ----------------------------------- | --------------------- |
    | `"dot"`        | `s . h_i`                           | `h`                   |
    | `"scaled_dot"` | `s . h_i / sqrt(d)`                 | `h`                   |
    | `"general"`    | `s . (W_a h_i)`, `W_a` `(dq, dv)`   | `h @ W_a^T`           |
    | `"concat"`     | `v . tanh(W_q s + W_k h_i)`         | `h @ W_k`             |
    | `"cosine"`     | `s . h_i / (norm(s) norm(h_i))`     | `h / norm(h)`         |
    | `"location"`   | `(s @ W_a)_i`, `W_a` `(dq, max_length)`, cut to `Tv` | `h` |

    Two opt-in arguments change the scale of the scores:

    - `scale_by_dimension=True` divides `"dot"` and `"general"` by `sqrt(d)`,
      `d` the size of the inner product (`dv` for `"dot"`, `dq` for
      `"general"`); `"dot"` then equals `"scaled_dot"`.
    - `scale=True` multiplies the scores by a learned scalar `g`, as TF-Addons
      `LuongAttention(scale=True)` does; for `"cosine"` this is the key
      strength of content-based addressing (Graves et al., 2014). `g` starts
      at `sqrt(dv)` for `"cosine"` (the scale of `"scaled_dot"` for vectors of
      unit mean square) and at 1 for the other scores.

    `"dot"`, `"scaled_dot"` and `"cosine"` need `dq == dv`. `"concat"` is
    Bahdanau's additive score (the same code as `BahdanauAttention`).
    `"location"` depends on the query only and needs `Tv <= max_length`.
    The translation recipe (`keras_attention.runs.TrainConfig`) turns on
    `scale` for `"cosine"` and `"scaled_dot"` and `scale_by_dimension` for
    `"general"`; measurements: docs/results.md and
    docs/research/model-notes.md.

    The computation follows the steps:

    1. `keys = prepare_keys(values)` (table above), once per sequence.
    2. `scores = score(query, keys)`, shape `(batch_size, Tq, Tv)`.
    3. `weights = softmax(scores)` over the unmasked positions (or a one-hot of
       the argmax with `hard=True`); masked positions get exactly 0.
    4. `context = weights @ values`.

    Args:
        score: One of `"dot"`, `"general"`, `"concat"`, `"scaled_dot"`,
            `"cosine"`, `"location"`. Defaults to `"cosine"` (use `"general"`
            when `dq != dv`). Note that the default layer, `LuongAttention()`,
            has no learned scale (`scale=False`): a cosine lies in `[-1, 1]`,
            so its softmax stays close to uniform (over 10 positions the
            largest weight is at most `e / (e + 9 / e)` = 0.45) and the layer
            barely attends. Build it as
            `LuongAttention(score="cosine", scale=True)` (what `Seq2Seq`'s
            `attention="luong"` shortcut builds).
        units: Positive integer, the hidden size of the `"concat"` score (not
            accepted by the others). Defaults to `None`: the query size `dq`.
        max_length: Positive integer, the longest `Tv` of the `"location"`
            score (required for it, not accepted by the others). Defaults to
            `None`.
        scale: Boolean, multiply the scores by a learned scalar `g`. Defaults
            to `False`, which leaves the default `"cosine"` score nearly
            uniform (see `score`): pass `scale=True` with it.
        scale_by_dimension: Boolean, divide the `"dot"` and `"general"` scores
            by `sqrt(d)`, `d` the size of the inner product (`dv` for `"dot"`,
            `dq` for `"general"`); only those two scores accept `True`.
            Defaults to `False`.
        scale_initializer: Initializer of `g` (`scale=True`). Defaults to
            `None`: `sqrt(dv)` for `"cosine"`, 1 for the others.
        kernel_initializer: Initializer of the kernels. Defaults to
            `"glorot_uniform"`.
        kernel_regularizer: Optional regularizer of the kernels. Defaults to
            `None`.
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

    `prepare_keys()` on an unbuilt layer works for every score but
    `"general"`, whose key projection needs `dq` (and `"concat"` without
    `units`): build the layer first, by calling it once or with
    `layer.build(query_shape, values_shape)`.

    Example:

    ```python
    attention = LuongAttention(score="general")
    values = keras.random.normal((2, 5, 8))  # e.g. encoder outputs
    queries = keras.random.normal((2, 3, 4))  # e.g. all decoder states at once
    context, weights = attention(queries, values)
    # context: (2, 3, 8); weights: (2, 3, 5)

    keys = attention.prepare_keys(values)  # once per sequence
    context, weights = attention(queries[:, 0], values, keys=keys)  # one step
    ```
    """

    def __init__(
        self,
        score="cosine",
        units=None,
        max_length=None,
        scale=False,
        scale_by_dimension=False,
        scale_initializer=None,
        kernel_initializer="glorot_uniform",
        kernel_regularizer=None,
        hard=False,
        dropout=0.0,
        seed=None,
        **kwargs,
    ):
        super().__init__(hard=hard, dropout=dropout, seed=seed, **kwargs)
        if score not in SCORES:
            raise ValueError(f"`score` must be one of {SCORES}. Received: score={score!r}")
        for name, value, needed_by in (
            ("units", units, "concat"),
            ("max_length", max_length, "location"),
        ):
            if score == needed_by:
                if value is None and name == "units":
                    continue  # the query size, known in build()
                if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                    raise ValueError(
                        f"score={score!r} needs `{name}`, a positive integer. "
                        f"Received: {name}={value}"
                    )
            elif value is not None:
                raise ValueError(
                    f"`{name}` is only used by score={needed_by!r}. "
                    f"Received: {name}={value}, score={score!r}"
                )
        if not isinstance(scale, bool):
            raise ValueError(f"`scale` must be a boolean. Received: scale={scale}")
        if not isinstance(scale_by_dimension, bool):
            raise ValueError(
                "`scale_by_dimension` must be a boolean. "
                f"Received: scale_by_dimension={scale_by_dimension}"
            )
        if scale_by_dimension and score not in SCALED_BY_DIMENSION_SCORES:
            raise ValueError(
                f"`scale_by_dimension=True` applies to the scores {SCALED_BY_DIMENSION_SCORES} "
                f"only. Received: scale_by_dimension={scale_by_dimension}, score={score!r}"
            )
        self.score = score
        self.units = units
        self._concat_units = units  # "concat": units, or dq once built
        self.max_length = max_length
        self.scale = scale
        self.scale_by_dimension = scale_by_dimension
        self.scale_initializer = (
            None if scale_initializer is None else keras.initializers.get(scale_initializer)
        )
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.kernel = None  # "general": W_a (dq, dv); "location": W_a (dq, max_length)
        self.key_kernel = None  # "concat": W_k (dv, units)
        self.query_kernel = None  # "concat": W_q (dq, units)
        self.score_kernel = None  # "concat": v (units,)
        self.score_scale = None  # scale=True: g ()

    def _kernel_weight(self, name, shape):
        return self.add_weight(
            name=name,
            shape=shape,
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
        )

    def _check_length(self, length):
        if self.score == "location" and length is not None and length > self.max_length:
            raise ValueError(
                f"score='location' was configured with max_length={self.max_length}; "
                f"`values` are longer. Received: Tv={length}"
            )

    def _build_keys(self, values_shape):
        self._check_length(values_shape[1])
        if self.score == "concat" and self.key_kernel is None:
            if self._concat_units is None:
                raise ValueError(
                    "score='concat' without `units` takes its size from the query, so "
                    "prepare_keys() needs a built layer: call the layer once, use "
                    "layer.build(query_shape, values_shape) first, or pass `units`. "
                    f"Received: values.shape={tuple(values_shape)} on an unbuilt layer"
                )
            self.key_kernel = self._kernel_weight(
                "key_kernel", (values_shape[-1], self._concat_units)
            )

    def build(self, query_shape, values_shape):
        if self.score in ("dot", "scaled_dot", "cosine"):
            self._check_matching_dims(query_shape, values_shape, f"score={self.score!r}")
        if self.score == "concat" and self._concat_units is None:
            self._concat_units = query_shape[-1]
        super().build(query_shape, values_shape)
        dq, dv = query_shape[-1], values_shape[-1]
        if self.score == "general":
            self.kernel = self._kernel_weight("kernel", (dq, dv))
        elif self.score == "location":
            self.kernel = self._kernel_weight("kernel", (dq, self.max_length))
        elif self.score == "concat":
            self.query_kernel = self._kernel_weight("query_kernel", (dq, self._concat_units))
            self.score_kernel = self._kernel_weight("score_kernel", (self._concat_units,))
        if self.scale:
            initializer = self.scale_initializer
            if initializer is None:
                initializer = (
                    keras.initializers.Constant(float(dv) ** 0.5)
                    if self.score == "cosine"
                    else "ones"
                )
            self.score_scale = self.add_weight(
                name="score_scale", shape=(), initializer=initializer
            )

    def _prepare_keys(self, values):
        if self.score == "general":
            if self.kernel is None:
                raise ValueError(
                    "score='general' projects the values with W_a of shape (dq, dv), so "
                    "prepare_keys() needs a built layer: call the layer once or use "
                    "layer.build(query_shape, values_shape) first. "
                    f"Received: values.shape={tuple(values.shape)} on an unbuilt layer"
                )
            return ops.matmul(values, ops.transpose(self._cast(self.kernel)))
        if self.score == "concat":
            return ops.matmul(values, self._cast(self.key_kernel))
        if self.score == "cosine":
            return _l2_normalize(values)
        self._check_length(values.shape[1])
        return values  # "dot", "scaled_dot", "location"

    def _score(self, query, keys):
        if self.score == "concat":
            scores = additive_scores(
                query, keys, self._cast(self.query_kernel), self._cast(self.score_kernel)
            )
        elif self.score == "location":
            length = keys.shape[1]
            self._check_length(length)
            if length is None:
                length = ops.shape(keys)[1]
            scores = ops.matmul(query, self._cast(self.kernel))[:, :, :length]
        else:
            if self.score == "cosine":
                query = _l2_normalize(query)
            scores = ops.matmul(query, ops.swapaxes(keys, 1, 2))
            if self.score == "scaled_dot" or self.scale_by_dimension:
                # The size of the inner product: dv for dot, dq for general (keys = h W_a^T).
                scores = scores * ops.cast(1.0 / math.sqrt(keys.shape[-1]), scores.dtype)
        if self.scale:
            scores = scores * self._cast(self.score_scale)
        return scores

    @classmethod
    def from_config(cls, config):
        # Layers saved before 0.2.0 stored `scale_by_dimension=True` for every score but
        # "dot", though it only ever changed "dot" and "general".
        if config.get("score") not in SCALED_BY_DIMENSION_SCORES:
            config = {**config, "scale_by_dimension": False}
        return super().from_config(config)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "score": self.score,
                "units": self.units,
                "max_length": self.max_length,
                "scale": self.scale,
                "scale_by_dimension": self.scale_by_dimension,
                "scale_initializer": (
                    None
                    if self.scale_initializer is None
                    else keras.initializers.serialize(self.scale_initializer)
                ),
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
            }
        )
        return config
