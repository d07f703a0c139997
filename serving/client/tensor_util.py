"""NumPy <-> `TensorProto` conversion without TensorFlow ops.

Clients build request tensors with these (no TensorFlow tensors are created),
and the local server parses requests with `tensor_proto_to_ndarray`, which
follows the C++ `Tensor::FromProto` rules TF Serving applies:

- values in `tensor_content` (raw little-endian bytes) must fill the shape
  exactly, otherwise the tensor does not parse;
- values in the typed fields (`float_val`, `string_val`, ...) may be fewer than
  the shape needs: the last value is repeated (no values: zeros / empty
  strings); extra values are ignored;
- an invalid shape (negative or unknown dimension, unknown rank) or an
  unsupported dtype does not parse.

`ndarray_to_tensor_proto` writes the typed fields, as TF Serving does for its
responses (`Tensor::AsProtoField`), or `tensor_content` when asked.

The messages are the client's own (`keras_attention_client.protos`); the functions
also read, and with `out=` fill, `tensorflow.TensorProto`s of the `tensorflow`
package (the local server's), since both have the same fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from keras_attention_client.protos import tensor_pb2, tensor_shape_pb2, types_pb2

# DataType enum numbers (tensorflow/core/framework/types.proto).
DT_FLOAT = types_pb2.DT_FLOAT
DT_DOUBLE = types_pb2.DT_DOUBLE
DT_INT32 = types_pb2.DT_INT32
DT_UINT8 = types_pb2.DT_UINT8
DT_INT16 = types_pb2.DT_INT16
DT_INT8 = types_pb2.DT_INT8
DT_STRING = types_pb2.DT_STRING
DT_COMPLEX64 = types_pb2.DT_COMPLEX64
DT_INT64 = types_pb2.DT_INT64
DT_BOOL = types_pb2.DT_BOOL
DT_UINT16 = types_pb2.DT_UINT16
DT_COMPLEX128 = types_pb2.DT_COMPLEX128
DT_HALF = types_pb2.DT_HALF
DT_UINT32 = types_pb2.DT_UINT32
DT_UINT64 = types_pb2.DT_UINT64

# dtype -> (numpy dtype, typed proto field, values per element)
_DTYPES: dict[int, tuple[np.dtype, str, int]] = {
    DT_FLOAT: (np.dtype(np.float32), "float_val", 1),
    DT_DOUBLE: (np.dtype(np.float64), "double_val", 1),
    DT_INT32: (np.dtype(np.int32), "int_val", 1),
    DT_UINT8: (np.dtype(np.uint8), "int_val", 1),
    DT_INT16: (np.dtype(np.int16), "int_val", 1),
    DT_INT8: (np.dtype(np.int8), "int_val", 1),
    DT_UINT16: (np.dtype(np.uint16), "int_val", 1),
    DT_INT64: (np.dtype(np.int64), "int64_val", 1),
    DT_BOOL: (np.dtype(np.bool_), "bool_val", 1),
    DT_HALF: (np.dtype(np.float16), "half_val", 1),
    DT_UINT32: (np.dtype(np.uint32), "uint32_val", 1),
    DT_UINT64: (np.dtype(np.uint64), "uint64_val", 1),
    DT_COMPLEX64: (np.dtype(np.complex64), "scomplex_val", 2),
    DT_COMPLEX128: (np.dtype(np.complex128), "dcomplex_val", 2),
    DT_STRING: (np.dtype(object), "string_val", 1),
}

_NUMPY_TO_DTYPE: dict[np.dtype, int] = {
    np.dtype(np.float32): DT_FLOAT,
    np.dtype(np.float64): DT_DOUBLE,
    np.dtype(np.int32): DT_INT32,
    np.dtype(np.uint8): DT_UINT8,
    np.dtype(np.int16): DT_INT16,
    np.dtype(np.int8): DT_INT8,
    np.dtype(np.uint16): DT_UINT16,
    np.dtype(np.int64): DT_INT64,
    np.dtype(np.bool_): DT_BOOL,
    np.dtype(np.float16): DT_HALF,
    np.dtype(np.uint32): DT_UINT32,
    np.dtype(np.uint64): DT_UINT64,
    np.dtype(np.complex64): DT_COMPLEX64,
    np.dtype(np.complex128): DT_COMPLEX128,
}

_MAX_RANK = 254


class TensorParseError(ValueError):
    """Raised when a `TensorProto` cannot be turned into an array."""


def dtype_name(dtype: int) -> str:
    """Returns the enum name of a DataType number, e.g. `"DT_STRING"`."""
    try:
        return types_pb2.DataType.Name(dtype)
    except ValueError:
        return f"DT_UNKNOWN_{dtype}"


def dtype_string(dtype: int) -> str:
    """Returns TensorFlow's short dtype string (`DataTypeString`), e.g. `"string"`."""
    name = dtype_name(dtype)
    if name == "DT_HALF":
        return "half"
    return name[3:].lower() if name.startswith("DT_") else name


def supported_dtypes() -> tuple[int, ...]:
    """The DataType numbers this module converts."""
    return tuple(_DTYPES)


def ndarray_to_tensor_proto(
    values: Any,
    dtype: int | None = None,
    *,
    use_tensor_content: bool = False,
    out: Any | None = None,
) -> tensor_pb2.TensorProto:
    """Builds a `TensorProto` from array-like values.

    Args:
        values: a NumPy array, scalar, or (nested) list. Python / NumPy strings
            become `DT_STRING` (UTF-8 encoded); `bytes` stay as they are.
        dtype: optional DataType number (e.g. `types_pb2.DT_FLOAT`) to cast to.
            By default it is inferred from the array's dtype.
        use_tensor_content: write numeric values as raw bytes in
            `tensor_content` instead of the typed repeated fields.
        out: a `TensorProto` (of any descriptor pool, e.g.
            `request.inputs["text"]`) to clear and fill instead of a new one.

    Returns:
        A `TensorProto` with `dtype`, `tensor_shape` and the values (`out`
        if given).

    Example:

    >>> proto = ndarray_to_tensor_proto(["hello", "world"])
    >>> proto.dtype == DT_STRING, list(proto.string_val)
    (True, [b'hello', b'world'])
    """
    array = _as_array(values, dtype)
    if dtype is None:
        dtype = _infer_dtype(array)
    if dtype not in _DTYPES:
        raise ValueError(f"Unsupported dtype {dtype_name(dtype)}. Received: dtype={dtype}")
    proto = tensor_pb2.TensorProto() if out is None else out
    proto.Clear()
    proto.dtype = dtype
    for size in array.shape:
        proto.tensor_shape.dim.add(size=int(size))
    np_dtype, field, _ = _DTYPES[dtype]
    if dtype == DT_STRING:
        proto.string_val.extend(_to_bytes(item) for item in array.reshape(-1))
        return proto
    array = np.ascontiguousarray(array, dtype=np_dtype)
    if use_tensor_content:
        proto.tensor_content = array.astype(np_dtype.newbyteorder("<"), copy=False).tobytes()
        return proto
    flat = array.reshape(-1)
    if dtype == DT_HALF:
        getattr(proto, field).extend(flat.view(np.uint16).tolist())
    elif dtype in (DT_COMPLEX64, DT_COMPLEX128):
        interleaved = np.stack([flat.real, flat.imag], axis=-1).reshape(-1)
        getattr(proto, field).extend(interleaved.tolist())
    else:
        getattr(proto, field).extend(flat.tolist())
    return proto


def tensor_proto_to_ndarray(proto: tensor_pb2.TensorProto) -> np.ndarray:
    """Parses a `TensorProto` into a NumPy array, with TF's `Tensor::FromProto` rules.

    Args:
        proto: the tensor.

    Returns:
        An array of the proto's shape: `object` dtype holding `bytes` for
        `DT_STRING`, the matching NumPy dtype otherwise.

    Raises:
        TensorParseError: if the proto does not describe a valid tensor (TF
            Serving answers such requests with "tensor parsing error").
    """
    dtype = proto.dtype
    if dtype not in _DTYPES:
        raise TensorParseError(f"unsupported or invalid dtype {dtype_name(dtype)}")
    shape = _shape_from_proto(proto.tensor_shape)
    num_elements = int(np.prod(shape, dtype=np.int64)) if shape else 1
    np_dtype, field, per_element = _DTYPES[dtype]
    if num_elements == 0:
        return np.empty(shape, dtype=np_dtype)
    if proto.tensor_content:
        if dtype == DT_STRING:
            raise TensorParseError("DT_STRING values in tensor_content are not supported")
        content = proto.tensor_content
        expected = num_elements * np_dtype.itemsize
        if len(content) != expected:
            raise TensorParseError(
                f"tensor_content has {len(content)} bytes, expected {expected} for shape "
                f"{list(shape)} and dtype {dtype_name(dtype)}"
            )
        array = np.frombuffer(content, dtype=np_dtype.newbyteorder("<"))
        return array.astype(np_dtype).reshape(shape)
    raw = getattr(proto, field)
    available = len(raw) // per_element
    if dtype == DT_STRING:
        flat = np.empty(num_elements, dtype=object)
        if available == 0:
            flat[:] = b""
        else:
            taken = list(raw[:num_elements])
            flat[: len(taken)] = taken
            flat[len(taken) :] = taken[-1]
        return flat.reshape(shape)
    if dtype == DT_HALF:
        values = np.asarray(raw[:num_elements], dtype=np.uint16).view(np.float16)
    elif per_element == 2:
        pairs = np.asarray(raw[: 2 * min(available, num_elements)], dtype=np.float64)
        values = (pairs[0::2] + 1j * pairs[1::2]).astype(np_dtype)
    else:
        values = np.asarray(raw[:num_elements]).astype(np_dtype)
    if available == 0:
        return np.zeros(shape, dtype=np_dtype)
    if values.size < num_elements:
        values = np.concatenate([values, np.full(num_elements - values.size, values[-1])])
    return values.astype(np_dtype, copy=False).reshape(shape)


def shape_proto(shape: Sequence[int | None] | None) -> tensor_shape_pb2.TensorShapeProto:
    """Builds a `TensorShapeProto`; `None` dimensions become -1, `shape=None` unknown rank."""
    proto = tensor_shape_pb2.TensorShapeProto()
    if shape is None:
        proto.unknown_rank = True
        return proto
    for size in shape:
        proto.dim.add(size=-1 if size is None else int(size))
    return proto


def shape_from_proto(proto: tensor_shape_pb2.TensorShapeProto) -> tuple[int | None, ...] | None:
    """Reads a (possibly partial) shape: -1 dimensions become `None`, unknown rank `None`."""
    if proto.unknown_rank:
        return None
    return tuple(None if dim.size < 0 else int(dim.size) for dim in proto.dim)


def _shape_from_proto(proto: tensor_shape_pb2.TensorShapeProto) -> tuple[int, ...]:
    if proto.unknown_rank:
        raise TensorParseError("tensor shape has unknown rank")
    if len(proto.dim) > _MAX_RANK:
        raise TensorParseError(f"tensor rank {len(proto.dim)} exceeds {_MAX_RANK}")
    sizes = tuple(int(dim.size) for dim in proto.dim)
    if any(size < 0 for size in sizes):
        raise TensorParseError(f"tensor shape {list(sizes)} has a negative dimension")
    total = 1
    for size in sizes:
        total *= size
        if total >= 2**63:
            raise TensorParseError(f"tensor shape {list(sizes)} has too many elements")
    return sizes


def _as_array(values: Any, dtype: int | None) -> np.ndarray:
    if dtype == DT_STRING:
        array = np.asarray(values, dtype=object)
        return array
    if dtype is not None:
        if dtype not in _DTYPES:
            raise ValueError(f"Unsupported dtype {dtype_name(dtype)}. Received: dtype={dtype}")
        return np.asarray(values, dtype=_DTYPES[dtype][0])
    array = np.asarray(values)
    if array.dtype.kind in ("U", "S"):
        array = array.astype(object)
    return array


def _infer_dtype(array: np.ndarray) -> int:
    if array.dtype == object:
        if all(isinstance(item, (str, bytes, np.str_, np.bytes_)) for item in array.reshape(-1)):
            return DT_STRING
        raise ValueError(
            "Cannot infer a tensor dtype from an object array that does not hold only "
            f"strings. Received: first items {array.reshape(-1)[:3].tolist()}"
        )
    dtype = _NUMPY_TO_DTYPE.get(array.dtype.newbyteorder("="))
    if dtype is None:
        raise ValueError(f"Unsupported NumPy dtype. Received: dtype={array.dtype}")
    return dtype


def _to_bytes(item: Any) -> bytes:
    if isinstance(item, bytes):
        return item
    if isinstance(item, str):
        return item.encode("utf-8")
    if isinstance(item, np.bytes_):
        return bytes(item)
    raise TypeError(f"Expected str or bytes in a string tensor. Received: {item!r}")
