"""TF Serving's REST JSON tensors (tensorflow_serving/util/json_tensor.cc, 2.20.0), both sides.

The server reads requests and writes answers as TF Serving does, with its
messages. Requests: `"instances"` (row format: an element per batch row, an
object by alias for several inputs) or `"inputs"` (columnar), binary strings as
`{"b64": ...}`; string, float32, int32 and int64 inputs (others
`UNIMPLEMENTED`). Answers: `"predictions"` or `"outputs"`; `*_bytes` outputs as
`{"b64": ...}`, floats in their shortest text, NaN and infinities as `NaN`,
`Infinity`, `-Infinity`.

The REST client writes its request values with `json_from_array` and reads
answer values with `array_from_json`.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

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
MAX_JSON_DEPTH = 100
"""Deeper request JSON is refused before any conversion (no tensor of ours comes close)."""

_NUMPY_TYPES = {DT_FLOAT: np.float32, DT_INT32: np.int32, DT_INT64: np.int64, DT_STRING: object}
_INT_RANGES = {DT_INT32: (-(2**31), 2**31 - 1), DT_INT64: (-(2**63), 2**63 - 1)}
_JSON_TYPES = {type(None): "Null", dict: "Object", list: "Array", str: "String"}


def _error(message: str) -> ServingError:
    return ServingError("INVALID_ARGUMENT", message)


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def parse_json(body: bytes) -> dict:
    """Parses a request body: an object, nested at most `MAX_JSON_DEPTH` deep, no lone surrogates.

    Raises:
        ServingError: `INVALID_ARGUMENT` ("JSON Parse error: ..." or "... Is not object").
    """
    too_deep = _error(f"JSON Parse error: nesting deeper than {MAX_JSON_DEPTH} levels")
    try:
        text = body.decode("utf-8")
        if not text.strip():
            raise _error("JSON Parse error: The document is empty")
        document = json.loads(text)
    except UnicodeDecodeError as error:
        message = f"JSON Parse error: Invalid encoding in string. at offset: {error.start}"
        raise _error(message) from None
    except json.JSONDecodeError as error:
        raise _error(f"JSON Parse error: {error.msg} at offset: {error.pos}") from None
    except RecursionError:
        raise too_deep from None
    if not isinstance(document, dict):
        raise _error(f"JSON Value: {_dump(document)} Is not object")
    # A text's depth is at most its number of brackets: walk only a text that could be too deep.
    stack = [(document, 1)] if body.count(b"[") + body.count(b"{") > MAX_JSON_DEPTH else []
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise too_deep
            items = value.values() if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)
    if b"\\ud" in body or b"\\uD" in body:  # an escaped surrogate, \ud800-\udfff
        try:
            _dump(document).encode("utf-8")  # json.loads joined the valid pairs
        except UnicodeEncodeError as error:
            lone = f"lone \\u{ord(error.object[error.start]):04x}"
            raise _error(
                f"JSON Parse error: The surrogate pair in string is invalid: {lone}"
            ) from None
    return document


def signature_name_of(document: dict) -> str:
    """The optional `signature_name` (empty if absent)."""
    name = document.get("signature_name", "")
    if not isinstance(name, str):
        raise _error(
            f"JSON Value: {_dump(document)} not formatted correctly. "
            "'signature_name' key must be a string value."
        )
    return name


def predict_inputs(
    document: dict, signature_name: str, tensorinfo_map: Mapping[str, Any]
) -> tuple[dict[str, np.ndarray], str]:
    """A Predict request's inputs read from its JSON document, as TF Serving reads them.

    Every input of `tensorinfo_map` (the signature's, alias -> `TensorInfo`) must
    be given, also one with a value in the SignatureDef's `defaults`: TF Serving
    reads the JSON against the full input map.

    Returns:
        Alias -> array of the input's dtype, and the format: `ROW` for
        `instances`, `COLUMNAR` for `inputs`.
    """
    if not tensorinfo_map:
        raise _error(f"Failed to get input map for signature: {signature_name or 'DEFAULT'}")
    names = sorted(tensorinfo_map)
    dtypes = {name: tensorinfo_map[name].dtype for name in names}
    if "instances" in document and "inputs" in document:
        raise _error(
            f"JSON Value: {_dump(document)} Not formatted correctly expecting only one of "
            "'inputs' or 'instances' keys to exist "
        )
    if "inputs" in document:
        value = document["inputs"]
        if not isinstance(value, dict) or _is_b64(value):
            if len(names) > 1:
                raise _error(
                    "inputs is a plain value/list, but expecting an object as multiple input "
                    "tensors required as per tensorinfo_map"
                )
            value = {names[0]: value}
        for name in names:
            if name not in value:
                raise _error(f"Missing named input: {name} in 'inputs' object.")
        return {name: _tensor(value[name], dtypes[name]) for name in names}, COLUMNAR
    if "instances" not in document:
        raise _error("Missing 'inputs' or 'instances' key")
    instances = document["instances"]
    if not isinstance(instances, list):
        raise _error(f"JSON Value: {_dump(document)} Excepting 'instances' to be an list/array")
    if not instances:
        raise _error(f"JSON Value: {_dump(document)} No values in 'instances' array")
    objects = _is_object(instances[0])
    if not isinstance(instances[0], dict) and len(names) > 1:
        raise _error(
            "instances is a plain list, but expecting list of objects as multiple input "
            "tensors required as per tensorinfo_map"
        )
    rows: dict[str, list[np.ndarray]] = {}
    for index, element in enumerate(instances):
        if objects != _is_object(element):
            kind = "object but got list" if objects else "value/list but got object"
            raise _error(f"Expecting {kind} at item {index} of input list")
        for name, value in element.items() if objects else [(names[0], element)]:
            key = f" key: {name}" if objects else ""
            try:
                if name not in dtypes:
                    raise _error(f"JSON object: does not have named input: {name}")
                array, first = _tensor(value, dtypes[name]), rows.get(name, [None])[0]
                if first is not None and first.size != array.size:
                    raise _error(f"Expecting tensor size: {first.size} but got: {array.size}")
                if first is not None and first.shape != array.shape:
                    message = (
                        f"Expecting shape {_shape(first.shape)} but got: {_shape(array.shape)}"
                    )
                    raise _error(message)
                rows.setdefault(name, []).append(array)
            except ServingError as error:
                raise _error(
                    f"Failed to process element: {index}{key} of 'instances' list. "
                    f"Error: {error.code}: {error.message}"
                ) from None
        if objects and set(element) != set(names):
            raise _error(
                f"Failed to process element: {index} of 'instances' list. JSON object: "
                f"{_dump(element)} keys must be equal to: {','.join(names)}"
            )
    return {name: np.stack(values) for name, values in rows.items()}, ROW


def _is_b64(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("b64"), str)


def _is_object(value: Any) -> bool:
    return isinstance(value, dict) and not _is_b64(value)


def _tensor(value: Any, dtype: int) -> np.ndarray:
    """A JSON value as a dense tensor: its shape follows the first element at each level."""
    if dtype not in _NUMPY_TYPES:
        raise ServingError("UNIMPLEMENTED", f"JSON input of type: {dtype_string(dtype)}")
    shape, item = [], value
    while isinstance(item, list):
        shape.append(len(item))
        item = item[0] if item else None
    values: list = []
    _flatten(value, 0, shape, dtype, values)
    with np.errstate(over="ignore"):  # a float past float32's range is inf, as in TF Serving
        return np.array(values, dtype=_NUMPY_TYPES[dtype]).reshape(shape)


def _flatten(value: Any, level: int, shape: list[int], dtype: int, out: list) -> None:
    if not isinstance(value, list):
        if level != len(shape):
            raise _error(
                f"JSON Value: {_dump(value)} found at incorrect level: {level + 1} in the JSON "
                f"DOM. Expected at level: {len(shape)}"
            )
        out.append(_convert(value, dtype))
    elif level >= len(shape):
        raise _error(f"Encountered list at unexpected level: {level} expected < {len(shape)}")
    elif len(value) != shape[level]:
        raise _error(
            f"Encountered list at unexpected size: {len(value)} at level: {level} "
            f"expected size: {shape[level]}"
        )
    else:
        for item in value:
            _flatten(item, level + 1, shape, dtype, out)


def _convert(value: Any, dtype: int) -> Any:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if dtype == DT_FLOAT and number:
        return value  # any JSON number, rounded to float32 (2.20 dropped the lossless check)
    if dtype in _INT_RANGES and number and isinstance(value, int):
        low, high = _INT_RANGES[dtype]
        if low <= value <= high:
            return value
    if dtype == DT_STRING and isinstance(value, str):
        return value.encode("utf-8")
    if dtype == DT_STRING and isinstance(value, dict):
        if not _is_b64(value):
            raise _error(f"JSON Value: {_dump(value)} not formatted correctly for base64 data")
        try:  # like absl::Base64Unescape: the standard alphabet, padding optional
            return base64.b64decode(value["b64"] + "=" * (-len(value["b64"]) % 4), validate=True)
        except (binascii.Error, ValueError):
            raise _error("Unable to base64 decode") from None
    kind = _JSON_TYPES.get(type(value), str(value) if isinstance(value, bool) else "Number")
    raise _error(
        f"JSON Value: {_dump(value)} Type: {kind} is not of expected type: {dtype_string(dtype)}"
    )


def _shape(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(map(str, shape)) + "]"


def make_json_from_tensors(outputs: Mapping[str, np.ndarray], fmt: str) -> str:
    """The response body for `outputs` (alias -> array) in the request's format (`ROW`/`COLUMNAR`)."""
    if not outputs:
        raise _error("Cannot convert empty tensor map to JSON")
    names = sorted(outputs)
    values = {name: _json_values(np.asarray(outputs[name]), name) for name in names}
    if fmt == COLUMNAR:
        document = {"outputs": values[names[0]] if len(names) == 1 else values}
    else:
        batch = None
        for name in names:
            shape = np.shape(outputs[name])
            if not shape:
                raise _error(f"Tensor name: {name} has no shape information ")
            if batch is not None and shape[0] != batch:
                message = f"has inconsistent batch size: {shape[0]} expecting: {batch}"
                raise _error(f"Tensor name: {name} {message}")
            batch = shape[0]
        if len(names) == 1:
            document = {"predictions": values[names[0]]}
        else:
            document = {"predictions": [{n: values[n][i] for n in names} for i in range(batch)]}
    return json.dumps(document, ensure_ascii=False)


def _json_values(array: np.ndarray, name: str) -> Any:
    if array.dtype.kind == "i":
        return array.tolist()
    if array.dtype == object and name.endswith("_bytes"):
        items = [_b64_object(v) for v in array.reshape(-1)]
    elif array.dtype == object:
        items = [v.decode("utf-8", errors="replace") for v in array.reshape(-1)]
    elif array.dtype.kind == "f":  # str of a NumPy float: the shortest text that reads back
        items = [float(str(v)) for v in array.reshape(-1)]
    else:
        raise _error(f"Failed to write JSON value for tensor type: {array.dtype}")
    return np.array(items, dtype=object).reshape(array.shape).tolist()


def make_json_from_error(message: str) -> str:
    """TF Serving's error body: `{"error": message}`."""
    return json.dumps({"error": message}, indent=4, ensure_ascii=False)


def _b64_object(data: bytes) -> dict[str, str]:
    return {"b64": base64.b64encode(data).decode("ascii")}


def json_from_array(values: Any) -> Any:
    """Array-like -> nested lists JSON can carry (str for text, {"b64": ...} for raw bytes).

    Bytes that are UTF-8 travel as text, others as `{"b64": ...}`.

    Raises:
        TypeError: for complex values.
    """
    array = np.asarray(values, dtype=object if _is_text(values) else None)
    if array.dtype == object or array.dtype.kind in ("U", "S"):
        return _map_nested(array.astype(object).tolist(), _string_to_json)
    if array.dtype.kind == "c":
        raise TypeError(f"JSON cannot carry complex values. Received dtype: {array.dtype}")
    return array.tolist()


def _is_text(values: Any) -> bool:
    if isinstance(values, np.ndarray):
        return values.dtype == object or values.dtype.kind in ("U", "S")
    probe = values
    while isinstance(probe, (list, tuple)) and probe:
        probe = probe[0]
    return isinstance(probe, (str, bytes))


def _string_to_json(value: Any) -> Any:
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return _b64_object(value)
    if isinstance(value, np.bytes_):
        return _string_to_json(bytes(value))
    return str(value)


def _map_nested(value: Any, fn) -> Any:
    if isinstance(value, list):
        return [_map_nested(item, fn) for item in value]
    return fn(value)


def array_from_json(value: Any) -> np.ndarray:
    """An answer's JSON value as an array: strings and `{"b64": ...}` as `bytes` (object dtype).

    JSON has no dtypes: numbers come back as NumPy infers them (int64, float64).
    `{"b64": ...}` is read by `base64.b64decode` (TF Serving answers padded
    standard base64), not as `predict_inputs` reads a request (padding optional,
    other characters refused, a non-string value not base64).
    """

    def convert(item: Any) -> Any:
        if isinstance(item, str):
            return item.encode("utf-8")
        if isinstance(item, dict) and set(item) == {"b64"}:
            return base64.b64decode(item["b64"])
        return item

    converted = _map_nested(value, convert)
    probe = converted
    while isinstance(probe, list) and probe:
        probe = probe[0]
    if isinstance(probe, bytes):
        return np.array(converted, dtype=object)
    return np.asarray(converted)
