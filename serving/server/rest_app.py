"""TF Serving's REST API: the transport-free `RestApi`, its ASGI app `rest_app`, `RestServer`."""

from __future__ import annotations

import asyncio
import concurrent.futures
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
from typing import NamedTuple

import uvicorn
from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute
from tensorflow_serving.apis import model_pb2
from uvicorn.protocols.http.h11_impl import H11Protocol

from keras_attention.serving.server import predict
from keras_attention.serving.server.servable_manager import ServableManager
from keras_attention_client.wire import json_tensor
from keras_attention_client.wire.errors import HTTP_STATUS_FOR_CODE, ServingError

logger = logging.getLogger(__name__)

# tensorflow_serving/model_servers/http_rest_api_util.cc, with `/v1/models[/]` (our listing):
# groups model name, version, label, prediction action, "metadata".
_ROUTE = re.compile(
    r"(?i)/v1/models(?:/?|/([^/:]+)(?:/versions/(\d+)|/labels/([^/:]+))?"
    r"(?::(classify|regress|predict)|/(metadata))?)"
)
OPENAPI_PATH = "/v1/openapi.json"
_READ_ONLY, _POST_ONLY = "GET, HEAD, OPTIONS", "OPTIONS, POST"
_PRINT = {"preserving_proto_field_name": True, "always_print_fields_with_no_presence": True}


class RestResponse(NamedTuple):
    """An HTTP answer: status, body and headers."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = {}  # never mutated


def error_response(status: int, message: str, **headers: str) -> RestResponse:
    """`{"error": message}`, TF Serving's error body."""
    return RestResponse(status, json_tensor.make_json_from_error(message).encode(), headers=headers)


class RestApi:
    """TF Serving's REST routes (`/v1/models`, `/v1/openapi.json`: ours), JSON formats and errors.

    Paths match case-insensitively, model names are URL-decoded. Errors answer
    `{"error": message}` with TF Serving's HTTP status for the code; other paths
    under `/v1/` are 400 "Malformed request", others 404; OPTIONS answers 204
    with `Allow`, a wrong method 405. `timeout_in_ms` (<= 0: none) bounds each
    Session run; `runner` runs it (the server's `Batcher.run` with `--enable_batching`).
    """

    def __init__(self, manager: ServableManager, *, timeout_in_ms=30000, runner=None):
        self.manager = manager
        self.timeout_in_ms = timeout_in_ms if timeout_in_ms > 0 else None
        self.runner = runner

    def process(self, method: str, path: str, body: bytes = b"") -> RestResponse:
        """Answers one request, blocking (`path`: raw, still percent-encoded, no query)."""
        method = "GET" if method == "HEAD" else method  # the server sends the headers only
        route = _ROUTE.fullmatch(path)
        if route is None:
            allowed = _READ_ONLY if path == OPENAPI_PATH else None
        else:
            allowed = _POST_ONLY if route[4] else _READ_ONLY
        try:
            if allowed is None and (method == "OPTIONS" or not path.lower().startswith("/v1/")):
                return error_response(404, f"Not found: {path}")
            if method == "OPTIONS":
                return RestResponse(204, b"", headers={"Allow": allowed})
            if allowed is not None and method not in allowed.split(", "):
                message = f"Method {method} is not allowed for {path}; allowed: {allowed}"
                return error_response(405, message, Allow=allowed)
            if path == OPENAPI_PATH:
                openapi = resources.files("keras_attention.serving").joinpath("openapi.json")
                return RestResponse(200, openapi.read_bytes())
            if allowed is None:
                raise ServingError("INVALID_ARGUMENT", f"Malformed request: {method} {path}")
            return RestResponse(200, self._answer(*route.groups(), body).encode())
        except ServingError as failure:
            logger.debug("REST %s %s failed: %s", method, path, failure)
            return error_response(HTTP_STATUS_FOR_CODE.get(failure.code, 500), failure.message)
        except Exception:  # noqa: BLE001 - a request must never kill the server
            logger.exception("REST %s %s failed unexpectedly", method, path)
            return error_response(500, "Internal error; the server's log has the details")

    def _answer(self, model, version, label, action, metadata, body: bytes) -> str:
        if model is None:
            return json_format.MessageToJson(self.manager.list_models(), indent=1, **_PRINT)
        spec = model_pb2.ModelSpec(name=urllib.parse.unquote(model))
        if version and int(version) >= 2**63:
            message = f"Failed to convert version: {version} to numeric."
            raise ServingError("INVALID_ARGUMENT", message)
        if version:
            spec.version.value = int(version)
        elif label:
            spec.version_label = urllib.parse.unquote(label)
        if metadata:
            with self.manager.servable(spec) as session:
                answer = predict.get_model_metadata(session)
            document = json_format.MessageToDict(answer, **_PRINT)
            del document["metadata"]["signature_def"]["@type"]  # TF Serving prints the map only
            return json.dumps(document, indent=1)
        if not action:
            return json_format.MessageToJson(self.manager.model_status(spec), indent=1, **_PRINT)
        document = json_tensor.parse_json(body)
        signature_name = json_tensor.signature_name_of(document)
        name = signature_name or predict.DEFAULT_SIGNATURE
        with self.manager.servable(spec) as session:
            if action.lower() != "predict":
                refused = {"classify": predict.CLASSIFY, "regress": predict.REGRESS}
                predict.refuse(session, refused[action.lower()], signature_name)
            if name not in session.signature_defs:
                message = f'Serving signature name: "{name}" not found in signature def'
                raise ServingError("INVALID_ARGUMENT", message)
            signature = session.signature_defs[name]
            inputs, fmt = json_tensor.predict_inputs(document, signature_name, signature.inputs)
            run = {"timeout_in_ms": self.timeout_in_ms, "runner": self.runner}
            outputs = predict.predict(session, signature_name, inputs, **run)
        return json_tensor.make_json_from_tensors(outputs, fmt)


def rest_app(
    api: RestApi,
    executor: concurrent.futures.Executor,
    *,
    max_request_bytes: int = 64 << 20,
    read_timeout: float = 30.0,
    routes: Sequence[BaseRoute] = (),
) -> Starlette:
    """The Starlette app of `api`, after `routes` (which answer for themselves).

    POST bodies are read up to `max_request_bytes` (413) within `read_timeout` s
    (408), then `api.process` runs on `executor`; every error is JSON.
    """

    async def handle(request: Request) -> RestResponse:
        scope = request.scope
        path = scope.get("raw_path", b"").decode("latin-1") or urllib.parse.quote(scope["path"])
        body = b""
        if request.method == "POST":
            body = await _read_body(request, max_request_bytes, read_timeout)
            if isinstance(body, RestResponse):
                return body
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(executor, api.process, request.method, path, body)

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

    starlette = Starlette(routes=routes)
    starlette.router.default = app  # every path no route matches (any bytes, any method)
    return starlette


async def _read_body(request: Request, limit: int, timeout: float) -> bytes | RestResponse:
    # Refusals close the connection, which spares reading the rest of the body.
    def too_large(size: int) -> RestResponse:
        message = f"Request body of {size} bytes exceeds the limit of {limit} bytes"
        return error_response(413, message, Connection="close")

    length = int(request.headers.get("content-length", 0))  # the HTTP parser checked it
    if length > limit:
        return too_large(length)
    chunks: list[bytes] = []

    async def read() -> RestResponse | bytes:
        async for chunk in request.stream():
            chunks.append(chunk)
            if sum(map(len, chunks)) > limit:
                return too_large(sum(map(len, chunks)))
        return b"".join(chunks)

    try:
        return await asyncio.wait_for(read(), timeout)
    except asyncio.TimeoutError:
        message = f"The request body was not received within {timeout:g} s"
        return error_response(408, message, Connection="close")


class _JsonErrorH11Protocol(H11Protocol):
    """Uvicorn's h11 protocol whose answer to an unparsable request is TF Serving's JSON."""

    def send_400_response(self, msg: str) -> None:
        body = json_tensor.make_json_from_error(msg).encode()
        head = [b"HTTP/1.1 400 Bad Request"]
        head += [name + b": " + value for name, value in self.server_state.default_headers]
        head += [b"content-type: application/json", b"content-length: %d" % len(body)]
        self.transport.write(b"\r\n".join([*head, b"connection: close"]) + b"\r\n\r\n" + body)
        self.transport.close()


class RestServer:
    """Serves `rest_app(api, ..., **app_options)` with Uvicorn (h11) from a background thread.

    `api.process` runs on `num_threads` threads (0: 4 per CPU); a request head
    incomplete after 64 KiB is refused; idle connections close after 30 s.
    """

    def __init__(self, api: RestApi, host: str, port: int, *, num_threads: int = 0, **app_options):
        # IPPROTO_TCP named, so asyncio sets TCP_NODELAY on each connection: without it a
        # response's second write (the body) waits for the client's delayed ACK (~40 ms).
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._socket.bind((host, port))
            self._socket.listen(1024)
        except OSError:
            self._socket.close()
            raise
        self._executor = concurrent.futures.ThreadPoolExecutor(
            num_threads or 4 * (os.cpu_count() or 1), thread_name_prefix="serving-rest"
        )
        app = rest_app(api, self._executor, **app_options)
        self._server = uvicorn.Server(
            uvicorn.Config(
                app,
                http=_JsonErrorH11Protocol,
                loop="asyncio",
                lifespan="off",
                log_config=None,
                access_log=False,
                timeout_keep_alive=30,
                h11_max_incomplete_event_size=64 << 10,
            )
        )
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    @property
    def port(self) -> int:
        """The bound port."""
        return self._socket.getsockname()[1]

    def start(self, timeout: float = 30.0) -> None:
        """Starts serving in the background; returns once it accepts connections."""
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
        if self._thread.is_alive():
            self._thread.join()
        self._socket.close()
        self._executor.shutdown(wait=False, cancel_futures=True)
