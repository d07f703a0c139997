"""The REST API over real HTTP: TF Serving's routes, JSON formats and error table, HTTP framing."""

import json
import re
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path

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
    (
        "wrong method",
        "GET",
        "/v1/models/translator:predict",
        None,
        405,
        "Method GET is not allowed for /v1/models/translator:predict; allowed: OPTIONS, POST",
    ),
    ("malformed version", "GET", "/v1/models/translator/versions/x", None, 400, None),
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


def test_model_list_route(server):
    status, body = _call(server, "GET", "/v1/models")
    assert status == 200
    models = {model["name"]: model for model in body["models"]}
    assert sorted(models) == ["gate", "slow", "translator"]
    translator = models["translator"]
    assert translator["versions"] == [
        {"version": "1", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}
    ]
    assert translator["signature_names"] == ["beam_search", "serving_default"]
    assert _call(server, "GET", "/v1/models/")[1] == body


def test_openapi_document_is_the_documented_one(server):
    """The served document is the file docs/rest-api.md includes, and a valid OpenAPI 3."""
    import schemathesis

    root = Path(__file__).resolve().parents[2]
    status, served = _call(server, "GET", "/v1/openapi.json")
    assert status == 200
    assert served == json.loads((root / "serving" / "openapi.json").read_text())
    assert '--8<-- "serving/openapi.json"' in (root / "docs" / "rest-api.md").read_text()
    schema = schemathesis.openapi.from_dict(served)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 17  # list, 3 x (status, metadata, predict, classify, regress), doc


# HTTP: framing, methods, hostile bodies ---------------------------------------------------------


def _exchange(server, raw: bytes, responses: int = 1, heads: tuple[int, ...] = ()) -> list:
    """Sends `raw` on one connection; reads `responses` answers: (status, headers, body).

    The answers at the indices `heads` (to HEAD requests) have no body. The last
    item is whatever follows the answers (`b""` once the server closed).
    """
    host, port = server.rest_url.removeprefix("http://").rsplit(":", 1)
    answers = []
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(raw)
        reader = connection.makefile("rb")
        for index in range(responses):
            status_line = reader.readline()
            if not status_line:
                break
            headers = {}
            while (line := reader.readline()) not in (b"\r\n", b""):
                name, value = line.decode("latin-1").split(":", 1)
                headers[name.strip().lower()] = value.strip()
            body = b"" if index in heads else reader.read(int(headers.get("content-length", 0)))
            answers.append((int(status_line.split()[1]), headers, body))
        answers.append(reader.read())
    return answers


def _request(method: str, path: str, body: bytes = b"", **headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: test"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    if body and "Transfer_Encoding" not in headers:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_unread_body_keeps_the_connection_in_step(server, method):
    """A body the route does not read is skipped, never parsed as the next request."""
    smuggled = _request("GET", "/v1/models/nope")
    raw = _request(method, "/v1/models/translator", smuggled) + _request(
        "GET", "/v1/models/slow", Connection="close"
    )
    *answers, rest = _exchange(server, raw, responses=3)
    expected_first = 200 if method == "GET" else 405
    assert [status for status, _, _ in answers] == [expected_first, 200]
    assert json.loads(answers[1][2])["model_version_status"][0]["version"] == "1"
    assert rest == b""  # closed after the second answer: nothing answered the smuggled one


def test_chunked_body(server):
    body = json.dumps({"instances": ["the cat"]}).encode()
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:7], body[7:]))
    raw = _request(
        "POST", "/v1/models/translator:predict", chunks + b"0\r\n\r\n", Transfer_Encoding="chunked"
    )
    (status, _, answer), _ = _exchange(server, raw + _request("GET", "/", Connection="close"), 2)[
        :2
    ]
    assert status == 200
    assert json.loads(answer)["predictions"][0]["translation"] == "CAT THE"


@pytest.mark.parametrize("length", ["-1", "abc", "1, 2"])
def test_bad_content_length_is_refused_and_closed(server, length):
    raw = _request("POST", "/v1/models/translator:predict", Content_Length=length)
    (status, headers, body), rest = _exchange(server, raw + b"{}", responses=1)
    assert status == 400
    assert headers["content-type"] == "application/json"
    assert set(json.loads(body)) == {"error"}
    assert rest == b""


def test_head_and_options(server):
    *answers, _ = _exchange(
        server,
        _request("HEAD", "/v1/models/translator")
        + _request("OPTIONS", "/v1/models/translator:predict")
        + _request("OPTIONS", "/v1/models/translator/metadata")
        + _request("HEAD", "/v1/models/nope", Connection="close"),
        responses=4,
        heads=(0, 3),
    )
    (head_status, head_headers, head_body), predict, metadata, missing = answers
    _, get_body = _call(server, "GET", "/v1/models/translator")
    assert (head_status, head_body) == (200, b"")
    assert int(head_headers["content-length"]) == len(json.dumps(get_body, indent=1))
    assert (predict[0], predict[1]["allow"], predict[2]) == (204, "OPTIONS, POST", b"")
    assert (metadata[0], metadata[1]["allow"]) == (204, "GET, HEAD, OPTIONS")
    assert (missing[0], missing[2]) == (404, b"")


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,
        json.dumps({"instances": [[[[[[[[1]]]]]]]] * 20}).replace("1", "[" * 95 + "1" + "]" * 95),
        json.dumps({"inputs": {"text": ["a"]}, "x": [[[]]]}).replace(
            "[[[]]]", "[" * 101 + "]" * 101
        ),
    ],
    ids=["100000 levels", "instances 103 levels", "101 levels beside the input"],
)
def test_deeply_nested_json_is_400(server, body):
    body = body if isinstance(body, bytes) else body.encode()
    status, answer = _call(server, "POST", "/v1/models/slow:predict", raw=body)
    assert (status, answer) == (400, {"error": "JSON Parse error: nesting deeper than 100 levels"})


def test_lone_surrogates_are_400_and_pairs_are_text(server):
    for text in ['"\\ud800"', '"a\\udc00"', '"\\ud800\\u0041"']:
        body = ('{"instances": [' + text + "]}").encode()
        status, answer = _call(server, "POST", "/v1/models/translator:predict", raw=body)
        assert status == 400 and "surrogate" in answer["error"], text
    status, answer = _call(
        server, "POST", "/v1/models/translator:predict", raw=b'{"instances": ["\\ud83d\\ude00 x"]}'
    )
    assert status == 200
    assert answer["predictions"][0]["translation"] == "X \N{GRINNING FACE}"


def test_slow_and_oversized_chunked_bodies(server):
    """A body not received within the read timeout is 408; a chunked one over the limit 413."""
    from types import SimpleNamespace

    from keras_attention.serving.server.rest_app import RestApi, RestServer

    rest = RestServer(
        RestApi(server.manager), "127.0.0.1", 0, max_request_bytes=100, read_timeout=0.5
    )
    rest.start()
    try:
        local = SimpleNamespace(rest_url=f"http://127.0.0.1:{rest.port}")
        started = time.monotonic()
        head = _request("POST", "/v1/models/translator:predict", Content_Length="10")
        (status, _, body), rest_bytes = _exchange(local, head + b"{}")
        assert (status, rest_bytes) == (408, b"")
        assert json.loads(body) == {"error": "The request body was not received within 0.5 s"}
        assert time.monotonic() - started < 5
        chunk = b"%x\r\n%s\r\n" % (60, b" " * 60)
        raw = _request(
            "POST", "/v1/models/translator:predict", chunk * 3, Transfer_Encoding="chunked"
        )
        (status, _, body), _ = _exchange(local, raw)
        assert status == 413
        # 120 or 180 bytes: as many chunks as had arrived when the limit was passed
        assert re.fullmatch(
            r"Request body of 1[28]0 bytes exceeds the limit of 100 bytes",
            json.loads(body)["error"],
        )
    finally:
        rest.stop(grace=1.0)


def test_oversized_headers_are_refused_and_closed(server):
    """A request head still incomplete past 64 KiB is refused (h11 checks as data arrives)."""
    raw = _request("GET", "/v1/models/translator", X_Padding="x" * (1 << 20))[: 100 << 10]
    (status, headers, body), rest = _exchange(server, raw)
    assert (status, headers["content-type"], rest) == (400, "application/json", b"")
    assert set(json.loads(body)) == {"error"}
