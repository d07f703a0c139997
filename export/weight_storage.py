"""`WeightStorage`: how an export stores the model's variables (`--weights`).

- `float32`: the variables as trained.
- `bfloat16`: every float variable stored in bfloat16: half the bytes on
  disk, 8 bits of mantissa. A model that computes in bfloat16
  (`mixed_bfloat16`) reads the stored values as they are: they are the values
  it would cast its float32 variables to, so it gives the translations of
  float32 weights (scores within bfloat16 rounding), with no cast per request. A model that computes in
  float32 (or float16) gets them cast back to float32 inside the graph.
- `int8`: weight-only per-channel quantization of the weight matrices (the
  rank-2 variables named `embeddings` or `*kernel`, as Keras names them: the
  embeddings, the tied output projection, the input, recurrent and attention
  kernels): an int8 variable `q` and a float32 scale per output channel `s`,
  `w ≈ q * s` with `s = max|w| / 127` over the channel, so each weight is off
  by at most `s / 2`. Vectors (biases, scales) stay float32.

Either way the stored variables replace the model's own in the SavedModel:
each signature function reads them once per call and computes their values
(`Cast`, `Mul`: core TensorFlow ops that TF Serving runs; none for bfloat16
read in bfloat16), and runs the model inside a `keras.StatelessScope` that
maps each model variable to its value, so the decoding loops read them like
the trained variables. Slices taken with `gather` (the embeddings' rows a
request looks up, a shortlist's columns) are converted from the same reads,
and a value nothing else uses (an embedding matrix converted whole) is then
not computed. The model's own float32 copies are not tracked and are not
written.

`resolve_weights` turns `auto` (the CLI's default) into the storage of the
model's compute dtype: `bfloat16` for `mixed_bfloat16`, `float32` otherwise.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from keras_attention.auto import AUTO
from keras_attention.export.weight_choices import WEIGHTS


def resolve_weights(weights: str, compute_dtype: str) -> str:
    """`weights`, or for `"auto"` the storage that fits `compute_dtype`.

    `auto` is `bfloat16` for a model computing in bfloat16: it reads the
    stored values with no cast and gives the translations of float32
    weights, from half the bytes (measured: docs/benchmarks.md). Otherwise
    `float32`: bfloat16 or int8 storage would then be converted to float32
    at every request.

    Args:
        weights: `"auto"` or one of `WEIGHTS`.
        compute_dtype: the model's compute dtype (a name or a dtype).

    Raises:
        ValueError: `weights` is neither `"auto"` nor one of `WEIGHTS`.
    """
    if weights == AUTO:
        bfloat16 = keras.backend.standardize_dtype(compute_dtype) == "bfloat16"
        return "bfloat16" if bfloat16 else "float32"
    if weights not in WEIGHTS:
        raise ValueError(
            f"`weights` must be one of {(AUTO, *WEIGHTS)}. Received: weights={weights!r}"
        )
    return weights


INT8_MAX = 127  # symmetric range [-127, 127]: -128 is never used


def quantize_per_channel(weights, axis: int) -> tuple[tf.Tensor, tf.Tensor]:
    """Symmetric int8 quantization of `weights` with one scale per channel.

    1. `s = max_j |w_j| / 127` over each channel (every axis but `axis`;
       `s = 0` for a channel of zeros);
    2. `q = round(w / s)` (half to even), in `[-127, 127]`.

    Then `|q * s - w| <= s / 2` for every weight.

    Args:
        weights: a float tensor or array.
        axis: the channel axis (one scale per index along it).

    Returns:
        `(q, s)`: `q` int8 with `weights`' shape, `s` float32 with size 1 on
        every axis but `axis` (broadcasts against `q`).
    """
    weights = tf.convert_to_tensor(weights, tf.float32)
    rank = weights.shape.rank
    if not -rank <= axis < rank:
        raise ValueError(f"`axis` must be in [-{rank}, {rank}). Received: axis={axis}")
    reduce = [a for a in range(rank) if a != axis % rank]
    scale = tf.reduce_max(tf.abs(weights), axis=reduce, keepdims=True) / INT8_MAX
    safe = tf.where(scale > 0, scale, tf.ones_like(scale))
    quantized = tf.clip_by_value(tf.round(weights / safe), -INT8_MAX, INT8_MAX)
    return tf.cast(quantized, tf.int8), scale


def dequantize(quantized, scale, dtype=tf.float32) -> tf.Tensor:
    """`q * s` in `dtype`: the inverse of `quantize_per_channel` (up to `s / 2`)."""
    return tf.cast(quantized, dtype) * tf.cast(scale, dtype)


def is_weight_matrix(variable) -> bool:
    """Whether `int8` quantizes `variable`: a rank-2 `embeddings` or `*kernel`
    (`kernel`, `recurrent_kernel`, an attention layer's `query_kernel`, ...)."""
    name = variable.name
    return len(variable.shape) == 2 and (name == "embeddings" or name.endswith("kernel"))


def channel_axis(variable) -> int:
    """The output channel of a weight matrix: rows of an embedding matrix (one per
    token, also the outputs of a tied projection), columns of a kernel."""
    return 0 if variable.name == "embeddings" else -1


@dataclasses.dataclass
class _Stored:
    """One model variable's stored form: `value(reads)` rebuilds it in the graph from
    the values read of `stored`."""

    variable: Any  # the model's keras.Variable
    stored: list[tf.Variable]  # [bfloat16 values] or [int8 values, float32 scales]
    value_dtype: tf.DType  # what `value` returns: the variable's dtype, or bfloat16

    def value(self, reads: list[tf.Tensor]) -> tf.Tensor:
        if len(reads) == 1:
            return tf.cast(reads[0], self.value_dtype)
        quantized, scale = reads
        return dequantize(quantized, scale, self.value_dtype)


class WeightStorage:
    """The variables an export writes for `model`, in `weights` form.

    Stored variables are only ever read whole (`ReadVariableOp`) and
    gathered from that value, never with `ResourceGather`: TensorFlow
    switches a variable read sparsely to copy-on-read, after which every
    read copies it (docs/export.md).

    With `bfloat16` weights, a variable whose layer computes in bfloat16 is
    handed to it in bfloat16, as stored (the values it would cast its
    float32 variable to); the others are cast back to float32.

    Args:
        model: the built Keras model the signatures run.
        weights: one of `WEIGHTS`, or `"auto"` (`resolve_weights` for the
            model's compute dtype). Defaults to `"float32"` (the model's own
            variables, unchanged).

    Example:

    ```python
    storage = WeightStorage(model, "int8")
    archive = keras.export.ExportArchive()
    storage.track(archive)
    archive.add_endpoint("serve", storage.wrap(fn), input_signature=[...])
    ```
    """

    def __init__(self, model: keras.Model, weights: str = "float32"):
        self.requested = weights
        self.weights = resolve_weights(weights, getattr(model, "compute_dtype", "float32"))
        self.model = model
        self._stored = [] if self.weights == "float32" else self._store(model.variables)
        self._by_variable = {id(stored.variable): stored for stored in self._stored}
        self._reads = []  # while a wrapped function traces: `{id(stored): its value read}`

    def _store(self, variables) -> list[_Stored]:
        compute_dtypes = _owner_compute_dtypes(self.model)
        stored = []
        for variable in variables:
            dtype = tf.as_dtype(variable.dtype)
            if not dtype.is_floating:
                continue  # e.g. the dropout seed generators' int64 states
            name = variable.path.replace("/", "_")
            if self.weights == "bfloat16":
                value = tf.Variable(
                    tf.cast(variable.value, tf.bfloat16), trainable=False, name=f"{name}_bf16"
                )
                if compute_dtypes.get(id(variable)) == "bfloat16":
                    dtype = tf.bfloat16
                stored.append(_Stored(variable, [value], dtype))
            elif is_weight_matrix(variable):
                q, s = quantize_per_channel(variable.value, channel_axis(variable))
                q = tf.Variable(q, trainable=False, name=f"{name}_int8")
                s = tf.Variable(s, trainable=False, name=f"{name}_scale")
                stored.append(_Stored(variable, [q, s], dtype))
        return stored

    @property
    def value_dtypes(self) -> list[str]:
        """The dtypes the model is handed the stored values in, sorted (none for
        `float32`): `["bfloat16"]` for bfloat16 weights of a model that computes in
        bfloat16, `["float32"]` for int8 weights, or for bfloat16 weights computed
        in float32."""
        return sorted({stored.value_dtype.name for stored in self._stored})

    def gather(self, variable, ids, axis: int) -> tf.Tensor:
        """The slices `ids` of a model variable along `axis`, from its stored form.

        Only those slices are converted: for `int8`, the int8 slices and, when
        `axis` is the channel axis, their scales, then `q * s`; for
        `bfloat16`, the bfloat16 slices (cast to float32 unless the model
        reads the variable in bfloat16). A variable stored as trained is
        gathered as it is. The result has the dtype the model is handed the
        variable in (float32, or bfloat16: see the class docstring). It is
        the model's `gather` hook (`keras_attention.models.WeightSlices`):
        with `Translator(gather_weights=storage.gather)` the embedding lookups
        and a vocabulary shortlist's columns of the output projection are
        read this way.

        Inside a function `wrap` returns, the slices are taken from the values
        it read (each stored variable is read once per call); elsewhere the
        stored variables are read here.
        """
        stored = self._by_variable.get(id(variable))
        if stored is None:
            return tf.gather(keras.ops.convert_to_tensor(variable), ids, axis=axis)
        # From the values read, not the variables (see the class docstring: copy-on-read).
        reads = self._reads[-1] if self._reads else {}
        values = [
            reads[id(v)] if id(v) in reads else tf.convert_to_tensor(v) for v in stored.stored
        ]
        # The slices of the stored values and, for int8 sliced along the channel axis,
        # of their scales, converted as `_Stored.value` converts the whole.
        sliced = [tf.gather(values[0], ids, axis=axis)]
        if len(values) == 2:
            scale = values[1]
            rank = len(variable.shape)
            if axis % rank == channel_axis(variable) % rank:
                scale = tf.gather(scale, ids, axis=axis)
            sliced.append(scale)
        return stored.value(sliced)

    @property
    def variables(self) -> list[tf.Variable]:
        """The variables written in place of the model's replaced ones."""
        return [v for stored in self._stored for v in stored.stored]

    def track(self, archive: keras.export.ExportArchive) -> None:
        """Makes `archive` write the model's weights in this storage.

        The stored variables are tracked; the model's own variables that the
        signatures read (all of them for `float32`) are written because the
        signatures use them (`ExportArchive` tracks those by itself). The
        model is not tracked as a whole: `ExportArchive.track(model)` adds its
        Keras variables beside the `tf.Variable`s they wrap, and the
        checkpoint then holds every weight twice.
        """
        if self.variables:
            archive.add_variable_collection("stored_weights", self.variables)

    def wrap(self, fn: Callable) -> Callable:
        """`fn` running with the model's variables read from this storage.

        For `float32`, `fn` itself. Otherwise a function with `fn`'s signature
        that reads every stored variable once, computes each replaced
        variable's value from the reads and calls `fn` inside a
        `keras.StatelessScope` mapping each replaced variable to it (for a
        variable whose layer computes in bfloat16, its bfloat16 value: see the
        class docstring). `gather` called by `fn` slices the same reads.
        """
        if not self._stored:
            return fn

        @functools.wraps(fn)
        def with_stored_weights(*args, **kwargs):
            # `tf.convert_to_tensor` reads a variable (`tf.cast` to its own dtype
            # would return it, read again wherever it is used).
            reads = {id(v): tf.convert_to_tensor(v) for v in self.variables}
            scope = keras.StatelessScope()
            for stored in self._stored:
                value = stored.value([reads[id(v)] for v in stored.stored])
                # `add_update` keeps the value's dtype; `state_mapping=` would cast
                # it to the variable's (float32).
                scope.add_update((stored.variable, value))
            self._reads.append(reads)
            try:
                with scope:
                    return fn(*args, **kwargs)
            finally:
                self._reads.pop()

        return with_stored_weights

    def describe(self) -> dict[str, Any]:
        """What the manifest records: `{"weights", "requested", "value_dtype",
        "replaced", "bytes"}` — the storage, what was asked for (`"auto"` or
        the storage), the dtypes the model is handed the stored values in
        (`value_dtypes` joined by `", "`; `"float32"` for float32 weights, read
        as trained), how many model variables it replaced, and the bytes of
        the model's float weights as written (stored ones for those
        replaced)."""
        replaced = {id(stored.variable) for stored in self._stored}
        kept = [
            v
            for v in self.model.variables
            if id(v) not in replaced and tf.as_dtype(v.dtype).is_floating
        ]
        written = [*kept, *self.variables]
        return {
            "weights": self.weights,
            "requested": self.requested,
            "value_dtype": ", ".join(self.value_dtypes) or "float32",
            "replaced": len(self._stored),
            "bytes": int(sum(_nbytes(v) for v in written)),
        }


def _owner_compute_dtypes(model) -> dict[int, str]:
    """`id(variable) -> compute dtype` of the innermost layer holding each of `model`'s
    variables (a layer lists its sublayers' weights too; Keras lists a layer before
    its sublayers, so the innermost comes last)."""
    dtypes = {}
    for layer in model._flatten_layers():  # noqa: SLF001 - Keras 3 has no public walk
        for variable in layer.weights:
            dtypes[id(variable)] = keras.backend.standardize_dtype(layer.compute_dtype)
    return dtypes


def _nbytes(variable) -> int:
    return int(np.prod(variable.shape)) * tf.as_dtype(variable.dtype).size
