"""JSON <-> tensors: TF Serving's json_tensor.cc (hand-worked examples) and the REST client."""

import json
import math

import numpy as np
import pytest
from tensorflow.core.framework import types_pb2
from tensorflow.core.protobuf import meta_graph_pb2

from keras_attention_client.wire import json_tensor
from keras_attention_client.wire.errors import ServingError


def _infos(**dtypes):
    return {name: meta_graph_pb2.TensorInfo(dtype=dtype) for name, dtype in dtypes.items()}


def _fill(document, **dtypes):
    inputs, fmt = json_tensor.predict_inputs(document, "", _infos(**dtypes))
    return fmt, inputs


def test_row_format_batches_instances():
    fmt, inputs = _fill({"instances": [[1.0, 2.0], [3.0, 4.5]]}, x=types_pb2.DT_FLOAT)
    assert fmt == json_tensor.ROW
    np.testing.assert_array_equal(inputs["x"], np.array([[1, 2], [3, 4.5]], np.float32))


def test_row_format_named_inputs():
    document = {"instances": [{"a": 1, "b": "x"}, {"a": 2, "b": {"b64": "eHk="}}]}
    _, inputs = _fill(document, a=types_pb2.DT_INT64, b=types_pb2.DT_STRING)
    assert inputs["a"].tolist() == [1, 2]
    assert inputs["b"].tolist() == [b"x", b"xy"]


def test_any_json_number_is_a_float32_as_in_tf_serving_2_20():
    _, inputs = _fill({"inputs": [16777217, 0.1, 1e39]}, x=types_pb2.DT_FLOAT)
    assert inputs["x"].dtype == np.float32
    assert inputs["x"].tolist() == [16777216.0, np.float32(0.1), np.inf]


def test_columnar_format_keeps_shapes():
    fmt, inputs = _fill(
        {"inputs": {"a": [[1, 2, 3]], "b": 2.5}}, a=types_pb2.DT_INT32, b=types_pb2.DT_FLOAT
    )
    assert fmt == json_tensor.COLUMNAR
    assert inputs["a"].shape == (1, 3) and inputs["b"].shape == () and float(inputs["b"]) == 2.5


@pytest.mark.parametrize(
    "document, dtypes, message",
    [
        (
            {"instances": [1, [2]]},
            {"x": types_pb2.DT_INT32},
            "Failed to process element: 1 of 'instances' list. Error: INVALID_ARGUMENT: "
            "Expecting shape [] but got: [1]",
        ),
        (
            {"instances": [[1, 2], [3]]},
            {"x": types_pb2.DT_INT32},
            "Failed to process element: 1 of 'instances' list. Error: INVALID_ARGUMENT: "
            "Expecting tensor size: 2 but got: 1",
        ),
        (
            {"inputs": [1.5]},
            {"x": types_pb2.DT_INT32},
            "JSON Value: 1.5 Type: Number is not of expected type: int32",
        ),
        (
            {"inputs": [2**31]},
            {"x": types_pb2.DT_INT32},
            "JSON Value: 2147483648 Type: Number is not of expected type: int32",
        ),
        (
            {"inputs": [true_value := True]},
            {"x": types_pb2.DT_FLOAT},
            f"JSON Value: {json.dumps(true_value)} Type: True is not of expected type: float",
        ),
        ({"inputs": [{"b64": "!!"}]}, {"x": types_pb2.DT_STRING}, "Unable to base64 decode"),
        (
            {"inputs": [[1], 2]},
            {"x": types_pb2.DT_INT32},
            "JSON Value: 2 found at incorrect level: 2 in the JSON DOM. Expected at level: 2",
        ),
        (
            {"inputs": [1]},
            {"x": types_pb2.DT_INT32, "y": types_pb2.DT_INT32},
            "inputs is a plain value/list, but expecting an object as multiple input tensors "
            "required as per tensorinfo_map",
        ),
        (
            {"instances": [1]},
            {"x": types_pb2.DT_INT32, "y": types_pb2.DT_INT32},
            "instances is a plain list, but expecting list of objects as multiple input tensors "
            "required as per tensorinfo_map",
        ),
        (
            {"instances": [{"x": 1}]},
            {"x": types_pb2.DT_INT32, "y": types_pb2.DT_INT32},
            "Failed to process element: 0 of 'instances' list. JSON object: {\"x\":1} keys must "
            "be equal to: x,y",
        ),
    ],
)
def test_request_errors(document, dtypes, message):
    with pytest.raises(ServingError) as caught:
        _fill(document, **dtypes)
    assert caught.value.code == "INVALID_ARGUMENT"
    assert caught.value.message == message


@pytest.mark.parametrize("value", [[1.0], []])
@pytest.mark.parametrize("dtype", [types_pb2.DT_HALF, types_pb2.DT_BOOL, types_pb2.DT_DOUBLE])
def test_other_dtypes_are_unimplemented(dtype, value):
    with pytest.raises(ServingError) as caught:
        _fill({"inputs": value}, x=dtype)
    assert caught.value.code == "UNIMPLEMENTED"
    assert types_pb2.DataType.Name(dtype)[3:].lower() in caught.value.message


def test_response_formats():
    outputs = {
        "score": np.array([0.1, -2.0], np.float32),
        "text": np.array([b"a", b"b"], dtype=object),
        "raw_bytes": np.array([b"\xff", b""], dtype=object),
    }
    row = json.loads(json_tensor.make_json_from_tensors(outputs, json_tensor.ROW))
    assert row == {
        "predictions": [
            {"raw_bytes": {"b64": "/w=="}, "score": 0.1, "text": "a"},
            {"raw_bytes": {"b64": ""}, "score": -2.0, "text": "b"},
        ]
    }
    columnar = json.loads(json_tensor.make_json_from_tensors(outputs, json_tensor.COLUMNAR))
    assert columnar["outputs"]["score"] == [0.1, -2.0]
    single = json_tensor.make_json_from_tensors({"y": np.arange(4).reshape(2, 2)}, json_tensor.ROW)
    assert json.loads(single) == {"predictions": [[0, 1], [2, 3]]}


def test_float_text_is_the_shortest_round_trip_and_special_values():
    values = np.array([0.1, 1 / 3, 1e-8, 3.0, np.nan, np.inf, -np.inf], np.float32)
    text = json_tensor.make_json_from_tensors({"v": values}, json_tensor.COLUMNAR)
    assert "0.1," in text and "3.0," in text
    assert "NaN" in text and "Infinity" in text and "-Infinity" in text
    decoded = json.loads(text)["outputs"]
    np.testing.assert_array_equal(np.array(decoded[:4], np.float32), values[:4])
    assert math.isnan(decoded[4]) and decoded[5] == math.inf and decoded[6] == -math.inf


def test_row_format_needs_a_batch_dimension():
    with pytest.raises(ServingError, match="has no shape information"):
        json_tensor.make_json_from_tensors({"x": np.float32(1)}, json_tensor.ROW)
    with pytest.raises(ServingError, match="inconsistent batch size"):
        json_tensor.make_json_from_tensors({"a": np.zeros(2), "b": np.zeros(3)}, json_tensor.ROW)


def test_client_request_values_read_back_as_the_server_reads_them():
    values = {
        "text": ["a b", b"\xffcat", np.bytes_(b"\xc3\xa9")],
        "ids": np.array([[1, 2], [3, 4]], np.int32),
        "score": [0.5, -1.25],
    }
    body = {"inputs": {name: json_tensor.json_from_array(v) for name, v in values.items()}}
    assert body["inputs"]["text"] == ["a b", {"b64": "/2NhdA=="}, "é"]
    types = {"text": types_pb2.DT_STRING, "ids": types_pb2.DT_INT32, "score": types_pb2.DT_FLOAT}
    _, inputs = _fill(json.loads(json.dumps(body)), **types)
    assert inputs["text"].tolist() == [b"a b", b"\xffcat", "é".encode()]
    np.testing.assert_array_equal(inputs["ids"], values["ids"])
    np.testing.assert_array_equal(inputs["score"], np.array(values["score"], np.float32))
    with pytest.raises(TypeError, match="complex"):
        json_tensor.json_from_array(np.array([1j]))


def test_server_answers_read_back_as_the_client_reads_them():
    outputs = {
        "raw_bytes": np.array([[b"\xff"], [b""]], dtype=object),
        "text": np.array([b"a", "é".encode()], dtype=object),
        "score": np.array([0.1, -2.0], np.float32),
        "length": np.array([3, 0], np.int32),
    }
    answer = json.loads(json_tensor.make_json_from_tensors(outputs, json_tensor.COLUMNAR))
    read = {name: json_tensor.array_from_json(v) for name, v in answer["outputs"].items()}
    assert read["raw_bytes"].dtype == object and read["raw_bytes"].tolist() == [[b"\xff"], [b""]]
    assert read["text"].tolist() == [b"a", "é".encode()]
    np.testing.assert_array_equal(read["score"].astype(np.float32), outputs["score"])
    assert read["length"].tolist() == [3, 0]
