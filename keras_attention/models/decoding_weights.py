"""`DecodingWeights`: the weights a decoding step reads, cast to the compute dtype once.

A decoder's steps read them through one scope, as they read the slices of
their weights through `WeightSlices`: inside `with weights:`, the decoder's
`embed`, `step` and `logits` (and the Dense layers they apply, `apply_dense`)
take their weights from `weights`; outside any, from the variables. No
decoder method takes them as an argument.
"""

import contextvars
import functools
from collections.abc import Callable
from typing import NamedTuple

import keras
import tensorflow as tf

from keras_attention.models.weight_slices import WeightSlices

# The scopes open, innermost last (`DecodingWeights.__enter__`).
_OPEN = contextvars.ContextVar("keras_attention_decoding_weights", default=())


class DecodingWeights(NamedTuple):
    """The weights a decoding step reads, in the decoder's compute dtype.

    `decoding_weights` reads and casts them once per decoding call, before
    its loop; a step given them casts no weight matrix (the embeddings stay
    as stored, and a lookup casts only the rows it takes). Keras layers cast
    their float32 variables to the compute dtype at every call: under
    `mixed_bfloat16` a step would cast the whole embedding matrix twice, for
    the lookup and the tied logits, and every kernel once.

    A `DecodingWeights` is the scope in which a decoder reads them: inside
    `with weights:`, `BaseDecoder.embed`, `step` and `logits` read `weights`
    instead of the variables (`Seq2Seq.step_function`'s `next_fn` opens it
    around one step, so the loop reads the tensors cast before it). Scopes
    nest; the innermost applies. Open a scope only around the decoder whose
    `decoding_weights` made them.
    """

    embedding_rows: Callable  # ids -> the target embeddings' rows as stored; `embed` casts them
    cells: dict  # the step's cells: name -> `CellWeights`, unsplit
    dense: dict  # the step's Dense layers: name -> (kernel, bias or None)
    output: tuple  # (matrix, bias): the tied embeddings (V, D) or `output_projection`'s (D, C)
    transposed: bool  # whether `output`'s matrix is (V, D), used as `o_t W^T`

    @staticmethod
    def current() -> "DecodingWeights | None":
        """The weights of the innermost open scope, or `None` outside any."""
        open_scopes = _OPEN.get()
        return open_scopes[-1] if open_scopes else None

    def __enter__(self):
        _OPEN.set((*_OPEN.get(), self))
        return self

    def __exit__(self, *exc_info):
        _OPEN.set(_OPEN.get()[:-1])


def decoding_weights(decoder, state, projection=None) -> DecodingWeights:
    """Every weight matrix `decoder.step` and `decoder.logits` read, cast once.

    Call it once per decoding, outside the loop, and open the result as a
    scope around each step (`Seq2Seq.step_function` does): the loop then
    holds the cast tensors as loop invariants. The values are those the step
    casts itself, so the results are the same to the bit.

    The target embeddings' rows a step looks up are read with the `gather` of
    the `WeightSlices` scope open here, if any (an export's stored weights:
    only those rows are converted from their stored form), and otherwise
    taken from the whole matrix, read here; a lookup casts only the rows it
    takes.

    Args:
        decoder: a built `BaseDecoder`: its `_step_cells(state)` (the cells a
            step runs, with their unsplit `CellWeights`) and
            `_step_dense_layers()` (the Dense layers it applies) say what to
            cast.
        state: the decoding state (`decoder.initial_state`), for the cells'
            input sizes.
        projection: `None` (the logits of every target id), or
            `decoder.output_projection(ids)` (the logits of `ids` only).

    Returns:
        A `DecodingWeights`.
    """
    dtype = decoder.compute_dtype

    def cast(tensor):
        return None if tensor is None else keras.ops.cast(tensor, dtype)

    cells = {
        cell.name: weights._replace(
            **{k: cast(v) for k, v in weights._asdict().items() if k != "split"}
        )
        for cell, weights in decoder._step_cells(state)
    }
    dense = {
        layer.name: (cast(layer.kernel), cast(layer.bias) if layer.use_bias else None)
        for layer in decoder._step_dense_layers()
    }
    # The lookup casts only the rows it takes (`embed`); casting the whole matrix
    # would cost more than a short decoding's lookups. With a `gather` (stored
    # weights) only those rows are read from their stored form too; a tensor
    # nothing uses (the whole matrix, then) is not computed.
    embeddings = keras.ops.convert_to_tensor(decoder.embedding.embeddings)
    gather = WeightSlices.current()
    if gather is None:
        embedding_rows = functools.partial(tf.gather, embeddings, axis=0)
    else:
        embedding_rows = functools.partial(gather, decoder.embedding.embeddings, axis=0)
    if projection is not None:
        output, transposed = tuple(cast(w) for w in projection), False
    elif decoder.tie_embeddings:
        output, transposed = (cast(embeddings), cast(decoder.output_bias)), True
    else:
        layer = decoder.output_layer
        output, transposed = (cast(layer.kernel), cast(layer.bias)), False
    return DecodingWeights(embedding_rows, cells, dense, output, transposed)


def apply_dense(layer, inputs):
    """`layer(inputs)` for a Dense `layer`, with its cast kernel and bias from the
    open `DecodingWeights` scope when it holds them (the same operations as
    `Dense.call`)."""
    weights = DecodingWeights.current()
    if weights is None or layer.name not in weights.dense:
        return layer(inputs)
    kernel, bias = weights.dense[layer.name]
    outputs = keras.ops.matmul(inputs, kernel)
    if bias is not None:
        outputs = keras.ops.add(outputs, bias)
    return outputs if layer.activation is None else layer.activation(outputs)
