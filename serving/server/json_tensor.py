"""TF Serving's REST JSON formats: request bodies to tensors, tensors to response bodies.

A port of tensorflow_serving/util/json_tensor.cc, with its messages:

- Predict requests carry either `"instances"` (row format: a list with one
  element per batch row; an element is a value/list for a single input or an
  object keyed by input alias) or `"inputs"` (columnar format: the whole batch
  as one value/list, or an object of them keyed by alias), plus an optional
  `"signature_name"`. Strings are JSON strings; binary data is `{"b64": ...}`.
- Responses answer `"predictions"` (row format, for `instances`) or
  `"outputs"` (columnar, for `inputs`). Outputs whose alias ends in `_bytes`
  are written as `{"b64": ...}`. Floats are written with the shortest text
  that reads back to the same float32/float64; NaN and infinities as `NaN`,
  `Infinity`, `-Infinity`, as TF Serving does.

The dtypes are the translation contract's (`DT_STRING`, `DT_FLOAT`, `DT_INT32`)
and `DT_INT64`; another input dtype is `UNIMPLEMENTED`, as TF Serving answers
for dtypes it cannot read from JSON.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from tensorflow.core.framework import tensor_pb2

from keras_attention_client.wire.errors import ServingError
from keras_attention_client.wire.tensors import (
    DT_FLOAT,
    DT_INT32,
    DT_INT64,
    DT_STRING,
    dtype_string,
)

ROW = "row"
COLUMNAR = "columnar"

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_FLOAT_MAX = float(np.finfo(np.float32).max)


def _error(message: str) -> ServingError:
    return ServingError("INVALID_ARGUMENT", message)


def _dump(value: Any) -> str:
    """JSON text of a value, for error messages."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _type_string(value: Any) -> str:
    if value is None:
        return "Null"
    if value is True:
        return "True"
    if value is False:
        return "False"
    if isinstance(value, dict):
        return "Object"
    if isinstance(value, list):
        return "Array"
    if isinstance(value, str):
        return "String"
    return "Number"


def parse_json(body: bytes | str) -> dict:
    """Parses a request body; the top level must be an object."""
    if isinstance(body, bytes):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError as error:
            raise _error(
                f"JSON Parse error: Invalid encoding in string. at offset: {error.start}"
            ) from None
    if not body.strip():
        raise _error("JSON Parse error: The document is empty")
    try:
        document = json.loads(body)
    except json.JSONDecodeError as error:
        raise _error(f"JSON Parse error: {error.msg} at offset: {error.pos}") from None
    if not isinstance(document, dict):
        raise _error(f"JSON Value: {_dump(document)} Is not object")
    return document


def signature_name_of(document: dict) -> str:
    """The optional `signature_name` (empty if absent)."""
    if "signature_name" not in document:
        return ""
    name = document["signature_name"]
    if not isinstance(name, str):
        raise _error(
            f"JSON Value: {_dump(document)} not formatted correctly. "
            "'signature_name' key must be a string value."
        )
    return name


# Predict requests ---------------------------------------------------------------------------


def fill_predict_inputs(
    document: dict,
    signature_name: str,
    tensorinfo_map: Mapping[str, Any],
    inputs: Any,
) -> str:
    """Fills the request's `inputs` map (alias -> TensorProto) from the JSON document.

    Args:
        document: the parsed body.
        signature_name: for error messages (`""` means the default).
        tensorinfo_map: the signature's inputs (alias -> `TensorInfo`).
        inputs: the `PredictRequest.inputs` map to fill.

    Returns:
        `ROW` for `instances`, `COLUMNAR` for `inputs`.
    """
    if not tensorinfo_map:
        raise _error(f"Failed to get input map for signature: {signature_name or 'DEFAULT'}")
    has_instances = "instances" in document
    has_inputs = "inputs" in document
    if has_instances and has_inputs:
        raise _error(
            f"JSON Value: {_dump(document)} Not formatted correctly expecting only one of "
            "'inputs' or 'instances' keys to exist "
        )
    if has_instances:
        instances = document["instances"]
        if not isinstance(instances, list):
            raise _error(f"JSON Value: {_dump(document)} Excepting 'instances' to be an list/array")
        if not instances:
            raise _error(f"JSON Value: {_dump(document)} No values in 'instances' array")
        _fill_from_instances(instances, tensorinfo_map, inputs)
        return ROW
    if has_inputs:
        _fill_from_inputs(document["inputs"], tensorinfo_map, inputs)
        return COLUMNAR
    raise _error("Missing 'inputs' or 'instances' key")


def _is_b64(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("b64"), str)


def _is_element_object(value: Any) -> bool:
    return isinstance(value, dict) and not _is_b64(value)


def _fill_from_instances(instances: list, tensorinfo_map: Mapping[str, Any], inputs: Any) -> None:
    names = sorted(tensorinfo_map)
    if not isinstance(instances[0], dict) and len(names) > 1:
        raise _error(
            "instances is a plain list, but expecting list of objects as multiple input "
            "tensors required as per tensorinfo_map"
        )
    objects = _is_element_object(instances[0])
    builders: dict[str, _TensorBuilder] = {}
    for index, element in enumerate(instances):
        if objects:
            if not _is_element_object(element):
                raise _error(f"Expecting object but got list at item {index} of input list")
            for name, value in element.items():
                try:
                    _add_instance_item(value, name, tensorinfo_map, builders)
                except ServingError as error:
                    raise _error(
                        f"Failed to process element: {index} key: {name} of 'instances' list. "
                        f"Error: {error.code}: {error.message}"
                    ) from None
            if set(element) != set(names):
                raise _error(
                    f"Failed to process element: {index} of 'instances' list. JSON object: "
                    f"{_dump(element)} keys must be equal to: {','.join(names)}"
                )
        else:
            if _is_element_object(element):
                raise _error(f"Expecting value/list but got object at item {index} of input list")
            try:
                _add_instance_item(element, names[0], tensorinfo_map, builders)
            except ServingError as error:
                raise _error(
                    f"Failed to process element: {index} of 'instances' list. "
                    f"Error: {error.code}: {error.message}"
                ) from None
    for name, builder in builders.items():
        inputs[name].CopyFrom(builder.proto([len(instances), *builder.shape]))


_FIELDS = {
    DT_FLOAT: "float_val",
    DT_INT32: "int_val",
    DT_INT64: "int64_val",
    DT_STRING: "string_val",
}


class _TensorBuilder:
    """Values of one input tensor, accumulated over JSON elements."""

    def __init__(self, dtype: int):
        if dtype not in _FIELDS:
            raise ServingError("UNIMPLEMENTED", f"JSON input of type: {dtype_string(dtype)}")
        self.dtype = dtype
        self.values: list = []
        self.shape: list[int] | None = None
        self.size: int | None = None

    def proto(self, shape: list[int]) -> tensor_pb2.TensorProto:
        proto = tensor_pb2.TensorProto(dtype=self.dtype)
        for size in shape:
            proto.tensor_shape.dim.add(size=size)
        getattr(proto, _FIELDS[self.dtype]).extend(self.values)
        return proto


def _add_instance_item(
    value: Any, name: str, tensorinfo_map: Mapping[str, Any], builders: dict[str, _TensorBuilder]
) -> None:
    if name not in tensorinfo_map:
        raise _error(f"JSON object: does not have named input: {name}")
    dtype = tensorinfo_map[name].dtype
    builder = builders.setdefault(name, _TensorBuilder(dtype))
    shape = _dense_shape(value)
    values: list = []
    _fill_values(value, 0, shape, dtype, values)
    if builder.size is None:
        builder.size, builder.shape = len(values), shape
    elif builder.size != len(values):
        raise _error(f"Expecting tensor size: {builder.size} but got: {len(values)}")
    elif builder.shape != shape:
        raise _error(f"Expecting shape {_shape_text(builder.shape)} but got: {_shape_text(shape)}")
    builder.values.extend(values)


def _fill_from_inputs(value: Any, tensorinfo_map: Mapping[str, Any], inputs: Any) -> None:
    if not isinstance(value, dict) or _is_b64(value):
        if len(tensorinfo_map) > 1:
            raise _error(
                "inputs is a plain value/list, but expecting an object as multiple input "
                "tensors required as per tensorinfo_map"
            )
        name = next(iter(tensorinfo_map))
        _fill_one(value, name, tensorinfo_map[name].dtype, inputs)
        return
    for name in sorted(tensorinfo_map):
        if name not in value:
            raise _error(f"Missing named input: {name} in 'inputs' object.")
        _fill_one(value[name], name, tensorinfo_map[name].dtype, inputs)


def _fill_one(value: Any, name: str, dtype: int, inputs: Any) -> None:
    shape = _dense_shape(value)
    values: list = []
    _fill_values(value, 0, shape, dtype, values)
    builder = _TensorBuilder(dtype)
    builder.values = values
    inputs[name].CopyFrom(builder.proto(shape))


def _dense_shape(value: Any) -> list[int]:
    shape = []
    while isinstance(value, list):
        shape.append(len(value))
        if not value:
            break
        value = value[0]
    return shape


def _fill_values(value: Any, level: int, shape: list[int], dtype: int, out: list) -> None:
    rank = len(shape)
    if not isinstance(value, list):
        if level != rank:
            raise _error(
                f"JSON Value: {_dump(value)} found at incorrect level: {level + 1} in the JSON "
                f"DOM. Expected at level: {rank}"
            )
        if isinstance(value, dict):
            if dtype != DT_STRING:
                raise _type_error(value, dtype)
            out.append(_decode_b64(value))
        else:
            out.append(_convert_value(value, dtype))
        return
    if level >= rank:
        raise _error(f"Encountered list at unexpected level: {level} expected < {rank}")
    if len(value) != shape[level]:
        raise _error(
            f"Encountered list at unexpected size: {len(value)} at level: {level} "
            f"expected size: {shape[level]}"
        )
    for item in value:
        _fill_values(item, level + 1, shape, dtype, out)


def _type_error(value: Any, dtype: int) -> ServingError:
    return _error(
        f"JSON Value: {_dump(value)} Type: {_type_string(value)} is not of expected type: "
        f"{dtype_string(dtype)}"
    )


def _decode_b64(value: Any) -> bytes:
    if not _is_b64(value):
        raise _error(f"JSON Value: {_dump(value)} not formatted correctly for base64 data")
    text = value["b64"]
    try:
        # Like absl::Base64Unescape: the standard alphabet, padding optional.
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise _error("Unable to base64 decode") from None


def _convert_value(value: Any, dtype: int) -> Any:
    if dtype == DT_FLOAT:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise _type_error(value, dtype)
        if isinstance(value, int) and abs(value) > 2**24 - 1:
            raise _error(f"Cannot convert JSON value: {value} to float without loss of precision.")
        if isinstance(value, float) and math.isfinite(value) and abs(value) > _FLOAT_MAX:
            raise _error(
                f"Cannot convert JSON value: {_dump(value)} to float without loss of precision."
            )
        return float(value)
    if dtype in (DT_INT32, DT_INT64):
        low, high = _INT32 if dtype == DT_INT32 else _INT64
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise _type_error(value, dtype)
        return value
    if dtype == DT_STRING:
        if not isinstance(value, str):
            raise _type_error(value, dtype)
        return value.encode("utf-8")
    raise ServingError(
        "UNIMPLEMENTED",
        f"Conversion of JSON Value: {_dump(value)} to type: {dtype_string(dtype)}",
    )


def _shape_text(shape: list[int] | None) -> str:
    return "[" + ",".join(str(d) for d in (shape or [])) + "]"


# Predict responses --------------------------------------------------------------------------


def make_json_from_tensors(outputs: Mapping[str, np.ndarray], fmt: str) -> str:
    """The response body for `outputs` (alias -> array) in the request's format."""
    if not outputs:
        raise _error("Cannot convert empty tensor map to JSON")
    if fmt == ROW:
        return _row_json(outputs)
    if fmt == COLUMNAR:
        return _columnar_json(outputs)
    raise _error("Invalid request format")


def _row_json(outputs: Mapping[str, np.ndarray]) -> str:
    batch = -1
    for name in sorted(outputs):
        array = outputs[name]
        if array.ndim == 0:
            raise _error(f"Tensor name: {name} has no shape information ")
        if batch >= 0 and batch != array.shape[0]:
            raise _error(
                f"Tensor name: {name} has inconsistent batch size: {array.shape[0]} "
                f"expecting: {batch}"
            )
        batch = array.shape[0]
    names = sorted(outputs)
    rows: list[str] = []
    encoded = {name: _value_json(outputs[name], name) for name in names}
    for item in range(batch):
        if len(names) > 1:
            fields = ", ".join(f"{json.dumps(n)}: {encoded[n][item]}" for n in names)
            rows.append("{" + fields + "}")
        else:
            rows.append(encoded[names[0]][item])
    return '{\n    "predictions": [' + ", ".join(rows) + "]\n}"


def _columnar_json(outputs: Mapping[str, np.ndarray]) -> str:
    names = sorted(outputs)
    if len(names) == 1:
        body = _array_json(outputs[names[0]], names[0])
    else:
        body = (
            "{" + ", ".join(f"{json.dumps(n)}: {_array_json(outputs[n], n)}" for n in names) + "}"
        )
    return '{\n    "outputs": ' + body + "\n}"


def _value_json(array: np.ndarray, name: str) -> list[str]:
    """JSON text of each row (first dimension) of `array`."""
    return [_array_json(row, name) for row in array]


def _array_json(array: np.ndarray, name: str) -> str:
    array = np.asarray(array)
    formatter = _formatter(array, name.endswith("_bytes"))
    flat = [formatter(value) for value in array.reshape(-1)]
    return _nest(flat, array.shape)


def _nest(flat: list[str], shape: tuple[int, ...]) -> str:
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return "[" + ", ".join(flat) + "]"
    step = len(flat) // shape[0] if shape[0] else 0
    return (
        "["
        + ", ".join(_nest(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0]))
        + "]"
    )


def _formatter(array: np.ndarray, as_bytes: bool) -> Callable[[Any], str]:
    kind = array.dtype.kind
    if array.dtype == object or kind in ("S", "U"):
        if as_bytes:
            return lambda v: json.dumps({"b64": base64.b64encode(_as_bytes(v)).decode("ascii")})
        return lambda v: json.dumps(
            _as_bytes(v).decode("utf-8", errors="replace"), ensure_ascii=False
        )
    if kind == "f":
        return _float_text
    if kind in ("i", "u"):
        return lambda v: str(int(v))
    raise _error(f"Failed to write JSON value for tensor type: {array.dtype}")


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


def _float_text(value: Any) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "-Infinity" if value < 0 else "Infinity"
    text = str(value) if isinstance(value, np.floating) else repr(float(value))
    if "." not in text and "e" not in text and "inf" not in text:
        text += ".0"
    return text


def make_json_from_error(message: str) -> str:
    """TF Serving's error body: `{"error": message}`."""
    return json.dumps({"error": message}, indent=4, ensure_ascii=False)
