"""TF Serving's REST API (`/v1/models/...`): a transport-free core, its ASGI app and server.

- `RestApi.process(method, path, body)` answers one request: routing, TF
  Serving's JSON formats and error table. Blocking (it runs TensorFlow).
- `rest_app(api, ...)` wraps it in an ASGI app (Starlette's requests and responses): HTTP semantics (HEAD,
  OPTIONS, 405 with `Allow`), request size and read-time limits, and the
  blocking work on a thread pool so the event loop stays responsive.
- `RestServer` serves the app with Uvicorn (HTTP/1.1 parsing, framing,
  keep-alive) from a background thread.

The API is described by `keras_attention/serving/openapi.json`, served at
`/v1/openapi.json`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import json
import logging
import os
import re
import socket
import threading
import time
import urllib.parse
from collections.abc import Sequence
from importlib import resources
from typing import NoReturn

import uvicorn
from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute
from tensorflow_serving.apis import get_model_metadata_pb2, model_pb2, predict_pb2
from uvicorn.protocols.http.h11_impl import H11Protocol

from keras_attention.serving.server import inference, json_tensor
from keras_attention.serving.server.model_service import get_model_status
from keras_attention.serving.server.servable_manager import ServableManager
from keras_attention_client.wire.errors import HTTP_STATUS_FOR_CODE, ServingError
from keras_attention_client.wire.tensors import tensor_proto_to_ndarray

logger = logging.getLogger(__name__)

# tensorflow_serving/model_servers/http_rest_api_util.cc
_PREDICTION_API = re.compile(
    r"(?i)/v1/models/([^/:]+)(?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))?"
    r":(classify|regress|predict)"
)
_MODEL_STATUS_API = re.compile(
    r"(?i)/v1/models/([^/:]+)(?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))?(?:/(metadata))?"
)
_MODEL_LIST_API = re.compile(r"(?i)/v1/models/?")
_API_PREFIX = re.compile(r"(?i)/v1/.*")
OPENAPI_PATH = "/v1/openapi.json"
_MAX_VERSION = 2**63 - 1
# Deeper JSON is refused before any conversion (a tensor has at most 254 dimensions in TF,
# but no model here comes close; the limit keeps every recursive step far from Python's).
MAX_JSON_DEPTH = 100
_READ_ONLY = "GET, HEAD, OPTIONS"
_POST_ONLY = "OPTIONS, POST"


@dataclasses.dataclass(frozen=True)
class RestResponse:
    """An HTTP answer: status, body and headers."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = dataclasses.field(default_factory=dict)


def error_response(status: int, message: str, **headers: str) -> RestResponse:
    """`{"error": message}`, TF Serving's error body."""
    body = json_tensor.make_json_from_error(message).encode("utf-8")
    return RestResponse(status, body, headers=headers)


def openapi_document() -> bytes:
    """The OpenAPI 3 description of this API (`keras_attention/serving/openapi.json`)."""
    return resources.files("keras_attention.serving").joinpath("openapi.json").read_bytes()


class RestApi:
    """Answers TF Serving's REST routes, with its JSON formats and error mapping.

    Routes (model names are URL-decoded, paths match case-insensitively):

    - `GET /v1/models`: every configured model with its versions, their
      states and (when serving) signature names (not in TF Serving).
    - `GET /v1/models/NAME[/versions/N | /labels/L]`: GetModelStatus as JSON.
    - `GET /v1/models/NAME[/versions/N | /labels/L]/metadata`: the SignatureDefs.
    - `POST /v1/models/NAME[/versions/N | /labels/L]:predict`: `instances`
      (answers `predictions`) or `inputs` (answers `outputs`).
    - `POST ...:classify` / `...:regress`: refused as TF Serving refuses them
      for Predict-only signatures (`inference.reject_classify_regress`).
    - `GET /v1/openapi.json`: this API's OpenAPI 3 document.

    Errors answer `{"error": message}` with TF Serving's HTTP status for the
    code (400 `INVALID_ARGUMENT`, 404 `NOT_FOUND`, 504 `DEADLINE_EXCEEDED`,
    503 `UNAVAILABLE`, ...); other paths under `/v1/` are 400 "Malformed
    request", others 404, a route's wrong method 405 with `Allow`.

    Args:
        manager: the servable manager.
        timeout_in_ms: Session run timeout per request (TF Serving's
            `--rest_api_timeout_in_ms`); 0 or less: none.
        runner: runs Predict's Session (the server's `Batcher.run` with
            `--enable_batching`).
    """

    def __init__(
        self,
        manager: ServableManager,
        *,
        timeout_in_ms: int = 30000,
        runner: inference.Runner | None = None,
    ):
        self.manager = manager
        self.timeout_in_ms = timeout_in_ms if timeout_in_ms and timeout_in_ms > 0 else None
        self.runner = runner

    def allowed_methods(self, path: str) -> str | None:
        """The `Allow` header of `path`'s route (`None`: not a route)."""
        if path == OPENAPI_PATH:
            return _READ_ONLY
        if _PREDICTION_API.fullmatch(path):
            return _POST_ONLY
        if _MODEL_LIST_API.fullmatch(path) or _MODEL_STATUS_API.fullmatch(path):
            return _READ_ONLY
        return None

    def process(self, method: str, path: str, body: bytes = b"") -> RestResponse:
        """Answers one request (`path`: the raw, still percent-encoded path, no query)."""
        try:
            return self._process(method, path, body)
        except Exception:  # noqa: BLE001 - a request must never kill the server
            logger.exception("REST %s %s failed unexpectedly", method, path)
            return error_response(500, "Internal error; the server's log has the details")

    def _process(self, method: str, path: str, body: bytes) -> RestResponse:
        if method == "HEAD":
            method = "GET"  # the server sends the headers only
        allowed = self.allowed_methods(path)
        if allowed is not None and method not in allowed.split(", "):
            return error_response(
                405, f"Method {method} is not allowed for {path}; allowed: {allowed}", Allow=allowed
            )
        if path == OPENAPI_PATH:
            return RestResponse(200, openapi_document())
        if not _API_PREFIX.fullmatch(path):
            return error_response(404, f"Not found: {path}")
        try:
            if method == "GET" and _MODEL_LIST_API.fullmatch(path):
                return self._json(json.dumps({"models": self.manager.list_models()}, indent=1))
            match = _PREDICTION_API.fullmatch(path) or _MODEL_STATUS_API.fullmatch(path)
            if match is None:
                raise ServingError("INVALID_ARGUMENT", f"Malformed request: {method} {path}")
            spec = _model_spec(match)
            if method == "GET":
                return self._json(self._metadata(spec) if match.group(4) else self._status(spec))
            document = parse_request_json(body)
            if match.group(4).lower() != "predict":
                self._classify_or_regress(match.group(4).lower(), spec, document)
            return self._json(self._predict(spec, document))
        except ServingError as failure:
            logger.debug("REST %s %s failed: %s", method, path, failure)
            return error_response(HTTP_STATUS_FOR_CODE.get(failure.code, 500), failure.message)

    @staticmethod
    def _json(text: str) -> RestResponse:
        return RestResponse(200, text.encode("utf-8"))

    # Routes -----------------------------------------------------------------------------------

    def _predict(self, spec: model_pb2.ModelSpec, document: dict) -> str:
        request = predict_pb2.PredictRequest()
        request.model_spec.CopyFrom(spec)
        request.model_spec.signature_name = json_tensor.signature_name_of(document)
        signature_name = request.model_spec.signature_name or inference.DEFAULT_SIGNATURE
        with self.manager.servable(request.model_spec) as session:
            signature_defs = session.signature_defs
            if signature_name not in signature_defs:
                raise ServingError(
                    "INVALID_ARGUMENT",
                    f'Serving signature name: "{signature_name}" not found in signature def',
                )
            fmt = json_tensor.fill_predict_inputs(
                document,
                request.model_spec.signature_name,
                signature_defs[signature_name].inputs,
                request.inputs,
            )
            response = inference.run_predict(
                session, request, timeout_in_ms=self.timeout_in_ms, runner=self.runner
            )
        outputs = {
            alias: tensor_proto_to_ndarray(tensor) for alias, tensor in response.outputs.items()
        }
        return json_tensor.make_json_from_tensors(outputs, fmt)

    def _classify_or_regress(self, api: str, spec: model_pb2.ModelSpec, document: dict) -> NoReturn:
        spec.signature_name = json_tensor.signature_name_of(document)
        with self.manager.servable(spec) as session:
            inference.reject_classify_regress(
                session,
                inference.CLASSIFY if api == "classify" else inference.REGRESS,
                spec.signature_name,
            )

    def _status(self, spec: model_pb2.ModelSpec) -> str:
        if spec.WhichOneof("version_choice") == "version_label":
            # Status is by version; resolve the label the way a request would.
            with self.manager.servable(spec) as session:
                spec = model_pb2.ModelSpec(name=spec.name)
                spec.version.value = session.version
        response = get_model_status(self.manager, spec)
        return json_format.MessageToJson(
            response, indent=1, always_print_fields_with_no_presence=True
        )

    def _metadata(self, spec: model_pb2.ModelSpec) -> str:
        request = get_model_metadata_pb2.GetModelMetadataRequest(
            model_spec=spec, metadata_field=[inference.SIGNATURE_DEF_FIELD]
        )
        inference.validate_metadata_request(request)
        with self.manager.servable(spec) as session:
            response = inference.get_model_metadata(session)
        signature_def_map = get_model_metadata_pb2.SignatureDefMap()
        response.metadata[inference.SIGNATURE_DEF_FIELD].Unpack(signature_def_map)
        options = {
            "preserving_proto_field_name": True,
            "always_print_fields_with_no_presence": True,
        }
        document = {
            "model_spec": json_format.MessageToDict(response.model_spec, **options),
            "metadata": {"signature_def": json_format.MessageToDict(signature_def_map, **options)},
        }
        return json.dumps(document, indent=1)


def parse_request_json(body: bytes) -> dict:
    """`json_tensor.parse_json`, refusing nesting deeper than `MAX_JSON_DEPTH` and lone surrogates.

    Raises:
        ServingError: `INVALID_ARGUMENT` ("JSON Parse error: ...").
    """
    too_deep = ServingError(
        "INVALID_ARGUMENT", f"JSON Parse error: nesting deeper than {MAX_JSON_DEPTH} levels"
    )
    try:
        document = json_tensor.parse_json(body)
    except RecursionError:
        raise too_deep from None
    # A text's depth is at most its number of brackets, so most bodies skip the walk.
    check_depth = body.count(b"[") + body.count(b"{") > MAX_JSON_DEPTH
    check_strings = b"\\ud" in body or b"\\uD" in body  # surrogates are \ud800-\udfff
    stack = [(document, 1)] if check_depth or check_strings else []
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise too_deep
            if isinstance(value, dict):
                stack.extend((key, depth) for key in value)
                value = value.values()
            stack.extend((item, depth + 1) for item in value)
        elif check_strings and isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as error:  # json.loads joined the valid pairs
                raise ServingError(
                    "INVALID_ARGUMENT",
                    "JSON Parse error: The surrogate pair in string is invalid: "
                    f"lone \\u{ord(value[error.start]):04x}",
                ) from None
    return document


def _model_spec(match: re.Match) -> model_pb2.ModelSpec:
    """The ModelSpec of a route's match: URL-decoded name, version or label."""
    spec = model_pb2.ModelSpec(name=urllib.parse.unquote(match.group(1)))
    if match.group(2):
        if int(match.group(2)) > _MAX_VERSION:
            raise ServingError(
                "INVALID_ARGUMENT", f"Failed to convert version: {match.group(2)} to numeric."
            )
        spec.version.value = int(match.group(2))
    elif match.group(3):
        spec.version_label = urllib.parse.unquote(match.group(3))
    return spec


# HTTP ---------------------------------------------------------------------------------------


def rest_app(
    api: RestApi,
    executor: concurrent.futures.Executor,
    *,
    max_request_bytes: int = 64 << 20,
    read_timeout: float = 30.0,
    routes: Sequence[BaseRoute] = (),
) -> Starlette:
    """The Starlette app serving `api`: `routes` first, then every other path and method.

    TF Serving's routing (case-insensitive, URL-encoded names) is `api`'s.

    Bodies are read (POST only; Content-Length or chunked) up to
    `max_request_bytes` (413 past it) within `read_timeout` seconds (408), then
    `api.process` runs on `executor`. Every error answers `{"error": ...}`.
    """

    async def handle(request: Request) -> RestResponse:
        scope = request.scope
        path = scope.get("raw_path", b"").decode("latin-1") or urllib.parse.quote(scope["path"])
        method = request.method
        if method == "OPTIONS":
            allowed = api.allowed_methods(path)
            if allowed is None:
                return error_response(404, f"Not found: {path}")
            return RestResponse(204, b"", headers={"Allow": allowed})
        body = b""
        if method == "POST":
            body_or_error = await _read_body(request, max_request_bytes, read_timeout)
            if isinstance(body_or_error, RestResponse):
                return body_or_error
            body = body_or_error
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(executor, api.process, method, path, body)

    async def app(scope, receive, send) -> None:
        if scope["type"] != "http":
            return  # no lifespan, no websockets
        try:
            answer = await handle(Request(scope, receive))
        except Exception:  # noqa: BLE001 - answer JSON whatever happens
            logger.exception("REST %s %s failed unexpectedly", scope["method"], scope["path"])
            answer = error_response(500, "Internal error; the server's log has the details")
        response = Response(answer.body, answer.status, answer.headers, answer.content_type)
        await response(scope, receive, send)

    async def http_error(request: Request, failure: HTTPException) -> Response:
        # The routes' own 404 / 405, as JSON too.
        answer = error_response(failure.status_code, failure.detail, **(failure.headers or {}))
        return Response(answer.body, answer.status, answer.headers, answer.content_type)

    starlette = Starlette(routes=routes, exception_handlers={HTTPException: http_error})
    starlette.router.default = app  # every path no route matches (any bytes, any method)
    return starlette


async def _read_body(request: Request, limit: int, timeout: float) -> bytes | RestResponse:
    length = request.headers.get("content-length")
    if length is not None and int(length) > limit:  # the HTTP parser checked it is a number
        return _too_large(int(length), limit)
    chunks = []
    size = 0

    async def read() -> RestResponse | None:
        nonlocal size
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                return _too_large(size, limit)
            chunks.append(chunk)
        return None

    try:
        refused = await asyncio.wait_for(read(), timeout)
    except asyncio.TimeoutError:
        return error_response(
            408, f"The request body was not received within {timeout:g} s", Connection="close"
        )
    return refused or b"".join(chunks)


def _too_large(size: int, limit: int) -> RestResponse:
    # Closing the connection spares reading the rest of the body.
    message = f"Request body of {size} bytes exceeds the limit of {limit} bytes"
    return error_response(413, message, Connection="close")


class _JsonErrorH11Protocol(H11Protocol):
    """Uvicorn's h11 protocol whose answer to an unparsable request is TF Serving's JSON."""

    def send_400_response(self, msg: str) -> None:
        body = json_tensor.make_json_from_error(msg).encode("utf-8")
        head = [b"HTTP/1.1 400 Bad Request"]
        head += [name + b": " + value for name, value in self.server_state.default_headers]
        head += [
            b"content-type: application/json",
            b"content-length: " + str(len(body)).encode("ascii"),
            b"connection: close",
        ]
        self.transport.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
        self.transport.close()


class RestServer:
    """Serves a `RestApi` over HTTP/1.1 with Uvicorn, from a background thread.

    Uvicorn (with h11) parses and frames requests (Content-Length, chunked
    bodies, keep-alive, HEAD); `api.process` runs on a pool of `num_threads`
    threads, so slow inference never blocks the event loop. A request head
    still incomplete after 64 KiB is refused; idle connections close after 30 s.

    Args:
        api: answers the requests.
        host: interface to bind.
        port: port to bind (0: any free port; see `port`).
        max_request_bytes: larger bodies are refused with 413.
        num_threads: threads running requests (0: 4 per CPU).
        read_timeout: seconds to receive a request body (408 past them).
        routes: Starlette routes served before the API's (e.g. a web page).

    Example:

    ```python
    server = RestServer(RestApi(manager), "127.0.0.1", 8501)
    server.start()
    ...
    server.stop(grace=5.0)
    ```
    """

    def __init__(
        self,
        api: RestApi,
        host: str,
        port: int,
        *,
        max_request_bytes: int = 64 << 20,
        num_threads: int = 0,
        read_timeout: float = 30.0,
        routes: Sequence[BaseRoute] = (),
    ):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP named, so asyncio sets TCP_NODELAY on each connection: without it a
        # response's second write (the body) waits for the client's delayed ACK (~40 ms).
        self._socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._socket.bind((host, port))
            self._socket.listen(1024)
        except OSError:
            self._socket.close()
            raise
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=num_threads or 4 * (os.cpu_count() or 1), thread_name_prefix="serving-rest"
        )
        app = rest_app(
            api,
            self._executor,
            max_request_bytes=max_request_bytes,
            read_timeout=read_timeout,
            routes=routes,
        )
        config = uvicorn.Config(
            app,
            http=_JsonErrorH11Protocol,
            loop="asyncio",
            lifespan="off",
            log_config=None,
            access_log=False,
            timeout_keep_alive=30,
            h11_max_incomplete_event_size=64 << 10,
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port."""
        return self._socket.getsockname()[1]

    def start(self, timeout: float = 30.0) -> None:
        """Starts serving in a background thread; returns once it accepts connections."""
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="serving-rest-loop"
        )
        self._thread.daemon = True
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise OSError(f"The REST server did not start on port {self.port}")
            time.sleep(0.01)

    def stop(self, grace: float | None = None) -> None:
        """Stops accepting, lets running requests finish (up to `grace` s), closes."""
        self._server.config.timeout_graceful_shutdown = grace
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join()
        self._socket.close()
        self._executor.shutdown(wait=False, cancel_futures=True)
