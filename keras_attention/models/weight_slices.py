"""`WeightSlices`: how the model reads the slices of its weights that a call uses.

The model reads the rows an embedding lookup takes and the columns a
vocabulary shortlist keeps through one hook: the `gather` of the innermost
`WeightSlices` scope, or, outside any, its own variables. An export whose
weights are stored in another form (int8 rows and their scales, for example)
opens a scope with a `gather` that reads that form, so a request converts
only the slices it uses (`keras_attention.export.weight_storage`). No model
method takes the function as an argument.
"""

import contextvars

import keras
import tensorflow as tf

_CURRENT = contextvars.ContextVar("keras_attention_weight_slices", default=None)


def gather_slices(variable, ids, axis: int) -> tf.Tensor:
    """The default `gather`: `tf.gather` of the variable's value, read whole."""
    return tf.gather(keras.ops.convert_to_tensor(variable), ids, axis=axis)


class WeightSlices:
    """A scope in which the model reads the slices of its weights with `gather`.

    Inside `with WeightSlices(gather):`, `Encoder.call`'s lookup of the source
    embeddings, `Seq2Seq.step_function`'s lookups of the target embeddings
    and `Seq2Seq.output_projection`'s columns are read as
    `gather(variable, ids, axis)` instead of from the variables' whole values.
    What a scope sets is fixed when the model builds the decoding's functions:
    a `next_fn` from `step_function` keeps its `gather` after the scope closes.
    Scopes nest; the innermost applies, and `WeightSlices(None)` restores the
    default inside another one.

    Args:
        gather: `gather(variable, ids, axis) -> tensor`, the slices `ids` of
            a model variable along `axis`, with the dtype the model reads the
            variable in; or `None` for the model's own reads.

    Example:

    >>> embedding = keras.layers.Embedding(10, 4)
    >>> embedding.build()
    >>> calls = []
    >>> def gather(variable, ids, axis):
    ...     calls.append(variable.name)
    ...     return gather_slices(variable, ids, axis)
    >>> with WeightSlices(gather):
    ...     rows = embedding_lookup(embedding, tf.constant([1, 2]))
    >>> rows.shape, calls
    (TensorShape([2, 4]), ['embeddings'])
    """

    def __init__(self, gather=None):
        if gather is not None and not callable(gather):
            raise TypeError(
                f"`gather` must be a function (variable, ids, axis) or None. Received: {gather!r}"
            )
        self.gather = gather
        self._token = None

    @staticmethod
    def current():
        """The `gather` of the innermost scope, or `None` (outside any, or set to none)."""
        return _CURRENT.get()

    def __enter__(self):
        self._token = _CURRENT.set(self.gather)
        return self

    def __exit__(self, *exc_info):
        _CURRENT.reset(self._token)
        self._token = None


def read_slices(variable, ids, axis: int) -> tf.Tensor:
    """The slices `ids` of `variable` along `axis`, read with the current scope's
    `gather` (`WeightSlices`), or `gather_slices` outside any."""
    gather = WeightSlices.current() or gather_slices
    return gather(variable, ids, axis)


def embedding_lookup(embedding: keras.layers.Embedding, ids) -> tf.Tensor:
    """What `embedding(ids)` returns, its rows read with the current scope's `gather`.

    Args:
        embedding: a built `keras.layers.Embedding`.
        ids: int tensor of any shape (cast to int32 unless int32 or int64,
            as `Embedding.call` does).

    Returns:
        `ids.shape + (output_dim,)` in the layer's compute dtype: the rows
        taken, then cast (the values of `Embedding.call`). Outside a
        `WeightSlices` scope, `embedding(ids)` itself.
    """
    gather = WeightSlices.current()
    if gather is None:
        return embedding(ids)
    ids = tf.convert_to_tensor(ids)
    if ids.dtype not in (tf.int32, tf.int64):
        ids = tf.cast(ids, tf.int32)
    rows = gather(embedding.embeddings, ids, 0)
    return keras.ops.cast(rows, embedding.compute_dtype)
