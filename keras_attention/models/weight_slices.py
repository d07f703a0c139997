"""Slices of a layer's weights read through `gather(variable, ids, axis)`.

The rows an embedding lookup takes and the columns a vocabulary shortlist
keeps are read with a `gather` function, which an export replaces with one
reading its stored form (int8 rows and their scales, for example), so that a
request converts only the slices it uses (`export.weight_storage`).
"""

import keras
import tensorflow as tf


def gather_slices(variable, ids, axis: int) -> tf.Tensor:
    """The default `gather`: `tf.gather` of the variable's value, read whole."""
    return tf.gather(keras.ops.convert_to_tensor(variable), ids, axis=axis)


def embedding_lookup(embedding: keras.layers.Embedding, ids, gather=None) -> tf.Tensor:
    """What `embedding(ids)` returns, its rows read with `gather` when given.

    Args:
        embedding: a built `keras.layers.Embedding`.
        ids: int tensor of any shape (cast to int32 unless int32 or int64,
            as `Embedding.call` does).
        gather: `gather(variable, ids, axis) -> tensor`, or `None` for
            `embedding(ids)` itself.

    Returns:
        `ids.shape + (output_dim,)` in the layer's compute dtype: the rows
        taken, then cast (the values of `Embedding.call`).
    """
    if gather is None:
        return embedding(ids)
    ids = tf.convert_to_tensor(ids)
    if ids.dtype not in (tf.int32, tf.int64):
        ids = tf.cast(ids, tf.int32)
    rows = gather(embedding.embeddings, ids, 0)
    return keras.ops.cast(rows, embedding.compute_dtype)
