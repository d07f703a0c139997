"""The REST API over real HTTP: TF Serving's routes, JSON formats and error table."""

import json
import urllib.error
import urllib.request

import numpy as np
import pytest
from helpers.serving import session_outputs

from keras_attention.serving import ModelServer, ServerOptions
from keras_attention.serving.server.model_server import free_port


def _call(server, method, path, body=None, raw: bytes | None = None):
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(server.rest_url + path, data=data, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_row_format_single_input(server, translator_base):
    status, body = _call(
        server, "POST", "/v1/models/translator:predict", {"instances": ["the cat", "a"]}
    )
    assert status == 200
    expected = session_outputs(translator_base / "1", "serving_default", ["the cat", "a"])
    assert [row["translation"] for row in body["predictions"]] == ["CAT THE", "A"]
    assert [row["tokens"] for row in body["predictions"]] == [["CAT", "THE"], ["A", ""]]
    np.testing.assert_array_equal(
        np.array([row["attention"] for row in body["predictions"]], np.float32),
        expected["attention"],
    )
    np.testing.assert_array_equal(
        np.array([row["score"] for row in body["predictions"]], np.float32), expected["score"]
    )


def test_row_format_objects_and_b64(server):
    body = {
        "signature_name": "beam_search",
        "instances": [{"text": "a b"}, {"text": {"b64": "Y2F0"}}],
    }  # b64("cat")
    status, answer = _call(server, "POST", "/v1/models/translator/versions/1:predict", body)
    assert status == 200
    assert [row["translation"] for row in answer["predictions"]] == ["B A", "CAT"]
    assert answer["predictions"][0]["score"] == -1.375  # -2 * 0.5 - 0.25 (known "a") - 0.125


def test_columnar_format(server, translator_base):
    status, body = _call(
        server, "POST", "/v1/models/translator:predict", {"inputs": {"text": ["the dog", ""]}}
    )
    assert status == 200
    outputs = body["outputs"]
    expected = session_outputs(translator_base / "1", "serving_default", ["the dog", ""])
    assert outputs["translation"] == ["DOG THE", ""]
    assert outputs["length"] == expected["length"].tolist()
    np.testing.assert_array_equal(np.array(outputs["attention"], np.float32), expected["attention"])
    status, plain = _call(server, "POST", "/v1/models/translator:predict", {"inputs": ["x"]})
    assert status == 200 and plain["outputs"]["translation"] == ["X"]


def test_single_output_signature_answers_bare_values(server):
    status, body = _call(server, "POST", "/v1/models/slow:predict", {"instances": [3, 4]})
    assert (status, body) == (200, {"predictions": [3, 4]})
    status, body = _call(server, "POST", "/v1/models/slow:predict", {"inputs": [5]})
    assert (status, body) == (200, {"outputs": [5]})


def test_model_status_and_metadata_routes(server):
    status, body = _call(server, "GET", "/v1/models/translator")
    assert status == 200
    assert body == {
        "model_version_status": [
            {
                "version": "1",
                "state": "AVAILABLE",
                "status": {"error_code": "OK", "error_message": ""},
            }
        ]
    }
    assert _call(server, "GET", "/v1/models/translator/versions/1")[1] == body
    status, metadata = _call(server, "GET", "/v1/models/translator/metadata")
    assert status == 200
    assert metadata["model_spec"] == {"name": "translator", "signature_name": "", "version": "1"}
    signatures = metadata["metadata"]["signature_def"]["signature_def"]
    text = signatures["serving_default"]["inputs"]["text"]
    assert text["dtype"] == "DT_STRING"
    assert text["tensor_shape"]["dim"][0]["size"] == "-1"
    assert signatures["beam_search"]["method_name"] == "tensorflow/serving/predict"
    status, _ = _call(server, "GET", "/V1/MODELS/translator/versions/1/metadata")
    assert status == 200  # routes match case-insensitively, like TF Serving's


ERROR_TABLE = [
    (
        "unknown model",
        "POST",
        "/v1/models/nope:predict",
        {"instances": ["a"]},
        404,
        "Servable not found for request: Latest(nope)",
    ),
    (
        "unknown version",
        "POST",
        "/v1/models/translator/versions/3:predict",
        {"instances": ["a"]},
        404,
        "Servable not found for request: Specific(translator, 3)",
    ),
    (
        "unknown label",
        "POST",
        "/v1/models/translator/labels/x:predict",
        {"instances": ["a"]},
        400,
        "Unrecognized servable version label: x",
    ),
    (
        "unknown signature",
        "POST",
        "/v1/models/translator:predict",
        {"signature_name": "x", "instances": ["a"]},
        400,
        'Serving signature name: "x" not found in signature def',
    ),
    (
        "missing key",
        "POST",
        "/v1/models/translator:predict",
        {"foo": 1},
        400,
        "Missing 'inputs' or 'instances' key",
    ),
    (
        "both keys",
        "POST",
        "/v1/models/translator:predict",
        {"inputs": ["a"], "instances": ["a"]},
        400,
        None,
    ),
    (
        "wrong type",
        "POST",
        "/v1/models/translator:predict",
        {"instances": [1]},
        400,
        "Failed to process element: 0 of 'instances' list. Error: INVALID_ARGUMENT: JSON Value: 1 "
        "Type: Number is not of expected type: string",
    ),
    (
        "wrong input name",
        "POST",
        "/v1/models/translator:predict",
        {"inputs": {"txt": ["a"]}},
        400,
        "Missing named input: text in 'inputs' object.",
    ),
    (
        "ragged",
        "POST",
        "/v1/models/slow:predict",
        {"inputs": [[1, 2], [3]]},
        400,
        "Encountered list at unexpected size: 1 at level: 1 expected size: 2",
    ),
    ("empty instances", "POST", "/v1/models/translator:predict", {"instances": []}, 400, None),
    (
        "not an object",
        "POST",
        "/v1/models/translator:predict",
        ["a"],
        400,
        'JSON Value: ["a"] Is not object',
    ),
    (
        "bad signature type",
        "POST",
        "/v1/models/translator:predict",
        {"signature_name": 3, "inputs": ["a"]},
        400,
        None,
    ),
    (
        "malformed",
        "POST",
        "/v1/models/translator:translate",
        {},
        400,
        "Malformed request: POST /v1/models/translator:translate",
    ),
    (
        "status unknown",
        "GET",
        "/v1/models/nope",
        None,
        404,
        "Could not find any versions of model nope",
    ),
    (
        "status version",
        "GET",
        "/v1/models/translator/versions/7",
        None,
        404,
        "Could not find version 7 of model translator",
    ),
    ("no model name", "GET", "/v1/models", None, 400, "Missing model name in request."),
    (
        "metadata unknown",
        "GET",
        "/v1/models/nope/metadata",
        None,
        404,
        "Servable not found for request: Latest(nope)",
    ),
    (
        "classify outputs",
        "POST",
        "/v1/models/translator:classify",
        {"examples": [{"x": 1}]},
        400,
        "Expected one or two output Tensors, found 6",
    ),
]


@pytest.mark.parametrize(
    "method, path, body, http_status, message",
    [row[1:] for row in ERROR_TABLE],
    ids=[row[0] for row in ERROR_TABLE],
)
def test_error_table(server, method, path, body, http_status, message):
    status, answer = _call(server, method, path, body)
    assert status == http_status
    assert set(answer) == {"error"}
    if message is not None:
        assert answer["error"] == message


def test_unparsable_and_empty_bodies(server):
    status, answer = _call(server, "POST", "/v1/models/translator:predict", raw=b"{nope")
    assert status == 400 and answer["error"].startswith("JSON Parse error: ")
    status, answer = _call(server, "POST", "/v1/models/translator:predict", raw=b"")
    assert (status, answer["error"]) == (400, "JSON Parse error: The document is empty")


def test_paths_outside_the_api_are_not_found(server):
    status, answer = _call(server, "GET", "/healthz")
    assert status == 404 and "error" in answer


def test_rest_deadline_is_504(exports, tmp_path):
    from helpers.serving import add_version

    add_version(tmp_path, 1, exports["slow"])
    options = ServerOptions(
        port=0,
        rest_api_port=free_port(),
        model_name="slow",
        model_base_path=str(tmp_path),
        file_system_poll_wait_seconds=0,
        rest_api_timeout_in_ms=100,
    )
    with ModelServer(options) as model_server:
        status, answer = _call(
            model_server, "POST", "/v1/models/slow:predict", {"instances": [10**8]}
        )
        assert status == 504
        assert "error" in answer
        assert _call(model_server, "POST", "/v1/models/slow:predict", {"instances": [2]}) == (
            200,
            {"predictions": [2]},
        )


def test_request_body_limit(translator_base):
    options = ServerOptions(
        port=0,
        rest_api_port=free_port(),
        model_name="translator",
        model_base_path=str(translator_base),
        file_system_poll_wait_seconds=0,
        max_request_bytes=1000,
    )
    with ModelServer(options) as model_server:
        status, answer = _call(
            model_server, "POST", "/v1/models/translator:predict", {"instances": ["word " * 500]}
        )
    assert status == 413 and "exceeds the limit" in answer["error"]
