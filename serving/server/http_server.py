"""A threaded HTTP server for the REST API (standard library only)."""

from __future__ import annotations

import http.server
import logging
import socket
import threading

from keras_attention.serving.server import json_tensor
from keras_attention.serving.server.rest_api_handler import RestApiHandler

logger = logging.getLogger(__name__)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, handler_class, api: RestApiHandler, max_request_bytes: int):
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.api = api
        self.max_request_bytes = max_request_bytes
        self.in_flight = 0
        self.stopping = False
        self.idle = threading.Condition()
        super().__init__(address, handler_class)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    # Idle keep-alive connections are dropped after this many seconds.
    timeout = 30

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._dispatch(b"")

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = self.headers.get("Content-Length")
        if length is None:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                return self._reply(
                    411,
                    json_tensor.make_json_from_error(
                        "Chunked bodies are not supported; send Content-Length"
                    ),
                )
            length = "0"
        try:
            size = int(length)
        except ValueError:
            return self._reply(
                400, json_tensor.make_json_from_error(f"Bad Content-Length: {length}")
            )
        if size > self.server.max_request_bytes:
            self.close_connection = True
            return self._reply(
                413,
                json_tensor.make_json_from_error(
                    f"Request body of {size} bytes exceeds the limit of "
                    f"{self.server.max_request_bytes} bytes"
                ),
            )
        self._dispatch(self.rfile.read(size))

    def do_PUT(self) -> None:  # noqa: N802 - http.server's naming
        self._dispatch(b"")

    do_DELETE = do_PUT
    do_PATCH = do_PUT

    def _dispatch(self, body: bytes) -> None:
        server = self.server
        with server.idle:
            server.in_flight += 1
        try:
            response = server.api.process(self.command, self.path, body)
            self._reply(response.status, response.body, response.content_type)
        finally:
            with server.idle:
                server.in_flight -= 1
                server.idle.notify_all()

    def _reply(self, status: int, body: str, content_type: str = "application/json") -> None:
        payload = body.encode("utf-8")
        if self.server.stopping:
            self.close_connection = True
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - http.server's signature
        logger.debug("REST %s - %s", self.address_string(), format % args)


class HttpServer:
    """Serves a `RestApiHandler` over HTTP/1.1 from a thread per connection.

    Args:
        api: answers the requests.
        host: interface to bind.
        port: port to bind (0: any free port; see `port`).
        max_request_bytes: larger bodies are refused with 413.

    Example:

    ```python
    server = HttpServer(RestApiHandler(manager), "127.0.0.1", 8501)
    server.start()
    ...
    server.stop(grace=5.0)
    ```
    """

    def __init__(
        self, api: RestApiHandler, host: str, port: int, *, max_request_bytes: int = 64 << 20
    ):
        self._server = _Server((host, port), _Handler, api, max_request_bytes)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port."""
        return self._server.server_address[1]

    def start(self) -> None:
        """Starts accepting connections in a background thread."""
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="serving-rest", daemon=True
        )
        self._thread.start()

    def stop(self, grace: float | None = None) -> None:
        """Stops accepting, lets running requests finish (up to `grace` s), closes."""
        server = self._server
        server.stopping = True
        if self._thread is not None:
            server.shutdown()
            self._thread.join()
        with server.idle:
            server.idle.wait_for(lambda: server.in_flight == 0, timeout=grace)
        server.server_close()
