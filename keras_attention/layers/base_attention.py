"""Base class shared by the attention layers: masking, softmax, hard attention, dropout."""

import keras
from keras import ops

# Added to masked scores before the softmax. The softmax always runs in float32, where
# exp(-1e9 - max) is exactly 0, so this value is safe under float16 / bfloat16 policies.
_MASKED_SCORE = -1e9


def _causal_mask(tq, tv):
    """`(1, Tq, Tv)`, True where value position j <= query position i."""
    rows = ops.expand_dims(ops.arange(tq), 1)
    columns = ops.expand_dims(ops.arange(tv), 0)
    return ops.expand_dims(ops.greater_equal(rows, columns), 0)


def _compatible(shape, expected):
    """Whether two static shapes agree, `None` matching any size."""
    return len(shape) == len(expected) and all(
        a is None or b is None or a == b for a, b in zip(shape, expected, strict=True)
    )


@keras.saving.register_keras_serializable(package="keras_attention")
class BaseAttention(keras.layers.Layer):
    """Base class for attention layers that pool `values` with a query.

    A subclass defines only the score function: it extends `build()` (calling
    `super().build()` first, then creating the query-side weights), implements
    the `_build_keys()` / `_prepare_keys()` pair that projects the values once
    per sequence, and the `_score()` hook. Masking, the softmax (or hard argmax),
    dropout on the weights, the weighted sum and output masks live here, once.

    The computation follows the steps:

    1. `keys = prepare_keys(values)`, once per sequence (or pass `keys=`).
    2. `scores = _score(query, keys)`, shape `(batch_size, Tq, Tv)`.
    3. Masked positions of `values` (and, with `use_causal_mask=True`, value
       positions after the query's own) get a score of `-1e9`; the scores are cast
       to float32 and turned into `weights = softmax(scores)` over `Tv`
       (`hard=True`: a one-hot of the argmax instead). Masked positions then
       get a weight of exactly 0; a row with every position masked is all 0.
    4. Dropout on the weights (training only, when `dropout > 0`).
    5. `context = weights @ values`, shape `(batch_size, Tq, dv)`.

    A query of rank 2 (one decoder step) is treated as `Tq = 1` and the outputs
    are returned without the `Tq` axis.

    Self-attention is the same call with `query = values` (one sequence attends
    over itself); `use_causal_mask=True` lets step i see only steps `0..i`, as
    in `keras.layers.Attention`.

    Args:
        hard: Boolean. If `True`, the weights are a one-hot of the highest
            scoring unmasked position (the first one on ties) instead of a
            softmax. Hard attention has no gradient with respect to the
            scores; it is meant for inference and alignment plots. Can be
            overridden per call. Defaults to `False`.
        dropout: Float in `[0, 1)`. Fraction of the attention weights to drop
            during training. Defaults to `0.0`.
        seed: Optional integer, the seed of the dropout. Defaults to `None`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: Query tensor of shape `(batch_size, dq)` (one step) or
            `(batch_size, Tq, dq)` (many steps).
        values: Values tensor of shape `(batch_size, Tv, dv)`.
        mask: Optional boolean tensor of shape `(batch_size, Tv)`, `True` at
            real positions. If `None`, the Keras mask carried by `values` is
            used (e.g. from `Embedding(mask_zero=True)`).
        keys: Optional output of `prepare_keys(values)`. Pass it when the same
            `values` are attended by many queries (step-wise decoding) so the
            keys are computed once. If `None`, it is computed in the call.
        query_mask: Optional boolean tensor of shape `query.shape[:-1]`. Where it
            is `False` the context and the weights are 0 (padded query steps).
            If `None`, the Keras mask carried by `query` is used.
        training: Boolean, whether dropout is applied.
        hard: Optional boolean overriding the layer's `hard` for this call.
        use_causal_mask: Boolean, mask value positions `j > i` for query step
            `i` (decoder self-attention; needs a rank-3 query). Defaults to
            `False`.

    Returns:
        A tuple `(context, weights)`: `context` of shape `(batch_size, dv)` or
        `(batch_size, Tq, dv)`; `weights` of shape `(batch_size, Tv)` or
        `(batch_size, Tq, Tv)`, always float32 (the softmax is computed in
        float32 and returned unrounded, also under `mixed_bfloat16`). Each row
        of `weights` sums to 1 over the unmasked positions (before dropout) and
        `context == weights @ values`.

    Output masks: for a rank-3 query both outputs carry the query's Keras mask
    (as `keras.layers.Attention` does); a rank-2 query gives outputs without a
    time mask.

    Example, a new score function (everything else comes from the base):

    ```python
    @keras.saving.register_keras_serializable(package="my_package")
    class NegativeDistanceAttention(BaseAttention):
        # score(s, h) = -||s - h||^2 (needs dq == dv)

        def _score(self, query, keys):
            # (batch, Tq, 1, d) - (batch, 1, Tv, d) -> (batch, Tq, Tv)
            diff = ops.expand_dims(query, 2) - ops.expand_dims(keys, 1)
            return -ops.sum(diff * diff, axis=-1)

    context, weights = NegativeDistanceAttention()(query, values, mask=mask)
    ```
    """

    def __init__(self, hard=False, dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(hard, bool):
            raise ValueError(f"`hard` must be a boolean. Received: hard={hard}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"`dropout` must be a float in [0, 1). Received: dropout={dropout}")
        self.hard = hard
        self.dropout = dropout
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed) if dropout > 0 else None
        self.supports_masking = True
        # (dq, dv) once built; dv alone is known after `prepare_keys()` on an unbuilt layer.
        self._query_dim = None
        self._values_dim = None

    # ------------------------------------------------------------------ hooks
    def _build_keys(self, values_shape):
        """Creates the weights that act on the values only (idempotent).

        Called by `build()` before any query-side weight, so the variable order
        is the same whether `prepare_keys()` or a call built the layer first.
        """

    def _prepare_keys(self, values):
        """Returns the keys for `values` (already cast to the compute dtype)."""
        return values

    def _score(self, query, keys):
        """Returns scores `(batch_size, Tq, Tv)` for a query `(batch_size, Tq, dq)`."""
        raise NotImplementedError(f"{self.__class__.__name__} must implement `_score()`.")

    # ------------------------------------------------------------ validation
    def _check_values_shape(self, values_shape):
        values_shape = tuple(values_shape)
        if len(values_shape) != 3:
            raise ValueError(
                f"{self.__class__.__name__} expects `values` of rank 3 "
                f"(batch_size, Tv, dv). Received: values.shape={values_shape}"
            )
        if values_shape[-1] is None:
            raise ValueError(
                f"The last dimension of `values` must be known. Received: values.shape={values_shape}"
            )
        if self._values_dim is not None and values_shape[-1] != self._values_dim:
            raise ValueError(
                f"{self.__class__.__name__} '{self.name}' was built for values of "
                f"dimension {self._values_dim}. Received: values.shape={values_shape}"
            )
        return values_shape

    def _check_shapes(self, query_shape, values_shape):
        """Validates the static shapes; returns `(dq, dv)`."""
        values_shape = self._check_values_shape(values_shape)
        query_shape = tuple(query_shape)
        if len(query_shape) not in (2, 3):
            raise ValueError(
                f"{self.__class__.__name__} expects `query` of rank 2 (batch_size, dq) "
                f"or 3 (batch_size, Tq, dq). Received: query.shape={query_shape}"
            )
        if query_shape[-1] is None:
            raise ValueError(
                f"The last dimension of `query` must be known. Received: query.shape={query_shape}"
            )
        if self._query_dim is not None and query_shape[-1] != self._query_dim:
            raise ValueError(
                f"{self.__class__.__name__} '{self.name}' was built for queries of "
                f"dimension {self._query_dim}. Received: query.shape={query_shape}"
            )
        if None not in (query_shape[0], values_shape[0]) and query_shape[0] != values_shape[0]:
            raise ValueError(
                "`query` and `values` must have the same batch size. Received: "
                f"query.shape={query_shape}, values.shape={values_shape}"
            )
        return query_shape[-1], values_shape[-1]

    def _check_matching_dims(self, query_shape, values_shape, what):
        """For scores that dot the query with the values directly: dq must equal dv."""
        if query_shape[-1] != values_shape[-1]:
            raise ValueError(
                f"{what} needs `query` and `values` of the same last dimension. Received: "
                f"query.shape={tuple(query_shape)}, values.shape={tuple(values_shape)}"
            )

    @staticmethod
    def _check_mask_shape(name, mask, expected_shape, expected_what):
        mask_shape = tuple(mask.shape)
        if not _compatible(mask_shape, expected_shape):
            raise ValueError(
                f"`{name}` must have shape {expected_what}={tuple(expected_shape)}. "
                f"Received: {name}.shape={mask_shape}"
            )

    # -------------------------------------------------------------- building
    def _set_dims(self, query_dim, values_dim):
        self._query_dim = query_dim
        self._values_dim = values_dim

    def build(self, query_shape, values_shape):
        dq, dv = self._check_shapes(query_shape, values_shape)
        self._build_keys(values_shape)
        self._set_dims(dq, dv)

    def _cast(self, x):
        """Casts a tensor or variable to the compute dtype (a no-op inside `__call__`)."""
        return ops.cast(x, self.compute_dtype)

    def prepare_keys(self, values):
        """Computes the keys of `values` once, for many calls with `keys=`.

        The keys depend only on `values`: project them once per sequence, then
        every decoder step is just the score against the query. Works eagerly,
        in a subclassed model's `call`, inside `tf.function`, `tf.while_loop` and
        XLA. (In a functional model, call the layer itself: it prepares the
        keys once per call.)

        On an unbuilt layer this creates the weights that act on the values;
        score functions whose key projection needs the query dimension (Luong
        `"general"`) require the layer to be built first, by calling it once or
        with `layer.build(query_shape, values_shape)`.

        Args:
            values: Values tensor of shape `(batch_size, Tv, dv)`.

        Returns:
            The keys, a tensor `(batch_size, Tv, dk)` in the compute dtype, to pass
            as `keys=` with the same `values`.
        """
        values = ops.convert_to_tensor(values)
        self._check_values_shape(values.shape)
        if not self.built:
            self._build_keys(tuple(values.shape))
            self._values_dim = values.shape[-1]
        return self._prepare_keys(self._cast(values))

    # ------------------------------------------------------------------ call
    def call(
        self,
        query,
        values,
        mask=None,
        keys=None,
        query_mask=None,
        training=None,
        hard=None,
        use_causal_mask=False,
    ):
        if mask is None:
            mask = getattr(values, "_keras_mask", None)
        if query_mask is None:
            query_mask = getattr(query, "_keras_mask", None)
        hard = self.hard if hard is None else hard
        self._check_shapes(query.shape, values.shape)
        values_shape = tuple(values.shape)
        one_step = len(query.shape) == 2
        if use_causal_mask and one_step:
            raise ValueError(
                "`use_causal_mask=True` needs a query of rank 3 (batch_size, Tq, dq), "
                "query step i attending to values 0..i. Received: "
                f"query.shape={tuple(query.shape)}"
            )

        if mask is not None:
            mask = ops.convert_to_tensor(mask)
            self._check_mask_shape("mask", mask, values_shape[:2], "(batch_size, Tv)")
            mask = ops.cast(mask, "bool")
        if query_mask is not None:
            query_mask = ops.convert_to_tensor(query_mask)
            self._check_mask_shape(
                "query_mask", query_mask, tuple(query.shape)[:-1], "query.shape[:-1]"
            )
            query_mask = ops.cast(query_mask, "bool")
        if keys is None:
            keys = self._prepare_keys(values)
        else:
            keys_shape = tuple(keys.shape)
            if len(keys_shape) != 3 or not _compatible(keys_shape[:2], values_shape[:2]):
                raise ValueError(
                    "`keys` must come from `prepare_keys(values)` for the same `values`, "
                    f"shape (batch_size, Tv, dk). Received: keys.shape={keys_shape}, "
                    f"values.shape={values_shape}"
                )

        if one_step:
            query = ops.expand_dims(query, 1)
            if query_mask is not None:
                query_mask = ops.expand_dims(query_mask, 1)
        scores = self._score(query, keys)  # (batch_size, Tq, Tv)
        if mask is not None:
            mask = ops.expand_dims(mask, 1)  # (batch_size, 1, Tv)
        if use_causal_mask:
            causal = _causal_mask(ops.shape(scores)[1], ops.shape(scores)[2])
            mask = causal if mask is None else ops.logical_and(mask, causal)
        weights = self._weights_from_scores(scores, mask, hard=hard, training=training)
        context = ops.matmul(ops.cast(weights, self.compute_dtype), values)
        if query_mask is not None:
            row_mask = ops.expand_dims(query_mask, -1)  # (batch_size, Tq, 1)
            context = ops.where(row_mask, context, ops.zeros_like(context))
            weights = ops.where(row_mask, weights, ops.zeros_like(weights))
        if one_step:
            context = ops.squeeze(context, 1)
            weights = ops.squeeze(weights, 1)
        return context, weights

    def _weights_from_scores(self, scores, mask, hard, training):
        """Masked softmax (or hard argmax) then dropout, in float32.

        `mask` broadcasts to the scores `(batch_size, Tq, Tv)`, True where allowed.
        """
        scores = ops.cast(scores, "float32")
        if mask is not None:
            scores = ops.where(mask, scores, ops.full_like(scores, _MASKED_SCORE))
        if hard:
            is_max = ops.equal(scores, ops.max(scores, axis=-1, keepdims=True))
            # Keep the first maximum only: the position where the running count hits 1.
            first = ops.equal(ops.cumsum(ops.cast(is_max, "int32"), axis=-1), 1)
            weights = ops.cast(ops.logical_and(is_max, first), "float32")
        else:
            weights = ops.softmax(scores, axis=-1)
        if mask is not None:
            weights = ops.where(mask, weights, ops.zeros_like(weights))
        if training and self.dropout > 0:
            weights = keras.random.dropout(weights, self.dropout, seed=self.seed_generator)
        return weights

    # ------------------------------------------------------- shapes and masks
    def compute_output_shape(self, query_shape, values_shape):
        query_shape = tuple(query_shape)
        values_shape = tuple(values_shape)
        return (*query_shape[:-1], values_shape[-1]), (*query_shape[:-1], values_shape[1])

    def compute_mask(self, query, previous_mask=None):
        # Keras passes the first call argument (the query); the values' mask does not
        # survive attention (it has been summed over Tv).
        if len(query.shape) == 2:
            return None
        query_mask = getattr(query, "_keras_mask", None)
        if query_mask is None:
            return None
        return query_mask, query_mask

    def get_config(self):
        config = super().get_config()
        config.update({"hard": self.hard, "dropout": self.dropout, "seed": self.seed})
        return config
