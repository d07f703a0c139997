"""NumPy <-> `TensorProto` for the dtypes our exports use, without TensorFlow.

The translation contract's tensors are `DT_STRING`, `DT_FLOAT` and
`DT_INT32`; `DT_INT64` is NumPy's default integer (and a test model's input).
Other dtypes are refused with a message naming them.

`tensor_proto_to_ndarray` follows the C++ `Tensor::FromProto` rules TF
Serving applies to requests:

- values in `tensor_content` (raw little-endian bytes) must fill the shape
  exactly;
- values in the typed fields (`float_val`, `string_val`, ...) may be fewer
  than the shape needs: the last value is repeated (none: zeros / empty
  strings); extra values are ignored;
- a negative dimension, an unknown rank or another dtype does not parse.

`ndarray_to_tensor_proto` writes the typed fields, as TF Serving does for its
responses, or `tensor_content` when asked. Both functions take and fill the
client's messages (`keras_attention_client.wire.protos`) and the `tensorflow`
package's alike: the fields are the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from keras_attention_client.wire.protos import tensor_pb2, tensor_shape_pb2, types_pb2

DT_FLOAT = types_pb2.DT_FLOAT
DT_INT32 = types_pb2.DT_INT32
DT_STRING = types_pb2.DT_STRING
DT_INT64 = types_pb2.DT_INT64

# dtype -> (NumPy dtype, typed proto field)
_DTYPES: dict[int, tuple[np.dtype, str]] = {
    DT_FLOAT: (np.dtype(np.float32), "float_val"),
    DT_INT32: (np.dtype(np.int32), "int_val"),
    DT_INT64: (np.dtype(np.int64), "int64_val"),
    DT_STRING: (np.dtype(object), "string_val"),
}
_NUMPY_TO_DTYPE = {
    np_dtype: dtype for dtype, (np_dtype, _) in _DTYPES.items() if dtype != DT_STRING
}


class TensorParseError(ValueError):
    """Raised when a `TensorProto` cannot be turned into an array."""


def dtype_name(dtype: int) -> str:
    """The enum name of a DataType number, e.g. `"DT_STRING"`."""
    try:
        return types_pb2.DataType.Name(dtype)
    except ValueError:
        return f"DT_UNKNOWN_{dtype}"


def dtype_string(dtype: int) -> str:
    """TensorFlow's short dtype string (`DataTypeString`), e.g. `"string"`."""
    name = dtype_name(dtype)
    return {"DT_HALF": "half"}.get(name, name[3:].lower() if name.startswith("DT_") else name)


def dtype_mismatch(index: int, expected: int, received: int) -> str | None:
    """TF Serving's refusal of an input whose dtype is not its signature's (the Session's
    feed check), `index` its place among the signature's inputs sorted by alias; `None`
    when the dtypes agree."""
    if received == expected:
        return None
    return (
        f"Expects arg[{index}] to be {dtype_string(expected)} but "
        f"{dtype_string(received)} is provided"
    )


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
        dtype: optional DataType number to cast to; by default the array's.
        use_tensor_content: numbers as raw bytes in `tensor_content` instead
            of the typed repeated fields.
        out: a `TensorProto` (of any descriptor pool, e.g.
            `request.inputs["text"]`) to clear and fill instead of a new one.

    Returns:
        A `TensorProto` with `dtype`, `tensor_shape` and the values (`out`
        if given).

    Raises:
        ValueError: a dtype other than string, float32, int32 and int64.

    Example:

    >>> proto = ndarray_to_tensor_proto(["hello", "world"])
    >>> proto.dtype == DT_STRING, list(proto.string_val)
    (True, [b'hello', b'world'])
    """
    if dtype is not None and dtype not in _DTYPES:
        raise ValueError(f"Unsupported dtype {dtype_name(dtype)}. Received: dtype={dtype}")
    if dtype == DT_STRING:
        array = np.asarray(values, dtype=object)
    elif dtype is not None:
        array = np.asarray(values, dtype=_DTYPES[dtype][0])
    else:
        array = np.asarray(values)
        if array.dtype.kind in ("U", "S"):
            array = array.astype(object)
        dtype = _infer_dtype(array)
    proto = tensor_pb2.TensorProto() if out is None else out
    proto.Clear()
    proto.dtype = dtype
    for size in array.shape:
        proto.tensor_shape.dim.add(size=int(size))
    np_dtype, field = _DTYPES[dtype]
    if dtype == DT_STRING:
        proto.string_val.extend(_to_bytes(item) for item in array.reshape(-1))
    elif use_tensor_content:
        proto.tensor_content = array.astype(np_dtype.newbyteorder("<")).tobytes()
    else:
        getattr(proto, field).extend(array.astype(np_dtype).reshape(-1).tolist())
    return proto


def tensor_proto_to_ndarray(proto: tensor_pb2.TensorProto) -> np.ndarray:
    """Parses a `TensorProto` into a NumPy array, with TF's `Tensor::FromProto` rules.

    Returns:
        An array of the proto's shape: `object` dtype holding `bytes` for
        `DT_STRING`, float32 / int32 / int64 otherwise.

    Raises:
        TensorParseError: the proto does not describe a valid tensor of those
            dtypes (TF Serving answers such requests "tensor parsing error").
    """
    dtype = proto.dtype
    if dtype not in _DTYPES:
        raise TensorParseError(f"unsupported or invalid dtype {dtype_name(dtype)}")
    shape = _shape_from_proto(proto.tensor_shape)
    num_elements = int(np.prod(shape, dtype=np.int64))
    np_dtype, field = _DTYPES[dtype]
    if num_elements == 0:
        return np.empty(shape, dtype=np_dtype)
    if proto.tensor_content:
        if dtype == DT_STRING:
            raise TensorParseError("DT_STRING values in tensor_content are not supported")
        expected = num_elements * np_dtype.itemsize
        if len(proto.tensor_content) != expected:
            raise TensorParseError(
                f"tensor_content has {len(proto.tensor_content)} bytes, expected {expected} for "
                f"shape {list(shape)} and dtype {dtype_name(dtype)}"
            )
        array = np.frombuffer(proto.tensor_content, dtype=np_dtype.newbyteorder("<"))
        return array.astype(np_dtype).reshape(shape)
    raw = getattr(proto, field)
    if not raw:
        return np.full(shape, b"" if dtype == DT_STRING else 0, dtype=np_dtype)
    values = np.empty(num_elements, dtype=np_dtype)
    taken = min(len(raw), num_elements)
    values[:taken] = list(raw[:taken])
    values[taken:] = raw[taken - 1]
    return values.reshape(shape)


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
    sizes = tuple(int(dim.size) for dim in proto.dim)
    if any(size < 0 for size in sizes):
        raise TensorParseError(f"tensor shape {list(sizes)} has a negative dimension")
    if len(sizes) > 254 or np.prod(sizes, dtype=object) >= 2**63:
        raise TensorParseError(f"tensor shape {list(sizes)} has too many dimensions or elements")
    return sizes


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
        raise ValueError(
            "Unsupported NumPy dtype: tensors are strings, float32, int32 or int64. "
            f"Received: dtype={array.dtype}"
        )
    return dtype


def _to_bytes(item: Any) -> bytes:
    if isinstance(item, (bytes, np.bytes_)):
        return bytes(item)
    if isinstance(item, str):
        return item.encode("utf-8")
    raise TypeError(f"Expected str or bytes in a string tensor. Received: {item!r}")
