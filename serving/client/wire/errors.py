"""`ServingError`, the one exception of the clients (and of the local server, internally).

Also the status-code tables both sides use: gRPC code names and numbers, and TF
Serving's REST mapping of codes to HTTP statuses (and back, for the REST client).
"""

from __future__ import annotations

# gRPC status code names (google.rpc.Code / tensorflow.error.Code share names and numbers).
STATUS_CODES: dict[str, int] = {
    "OK": 0,
    "CANCELLED": 1,
    "UNKNOWN": 2,
    "INVALID_ARGUMENT": 3,
    "DEADLINE_EXCEEDED": 4,
    "NOT_FOUND": 5,
    "ALREADY_EXISTS": 6,
    "PERMISSION_DENIED": 7,
    "RESOURCE_EXHAUSTED": 8,
    "FAILED_PRECONDITION": 9,
    "ABORTED": 10,
    "OUT_OF_RANGE": 11,
    "UNIMPLEMENTED": 12,
    "INTERNAL": 13,
    "UNAVAILABLE": 14,
    "DATA_LOSS": 15,
    "UNAUTHENTICATED": 16,
}
_CODE_NAMES = {number: name for name, number in STATUS_CODES.items()}

# TF Serving's REST mapping, tensorflow_serving/model_servers/http_server.cc (ToHTTPStatusCode).
HTTP_STATUS_FOR_CODE: dict[str, int] = {
    "OK": 200,
    "CANCELLED": 499,
    "UNKNOWN": 500,
    "INVALID_ARGUMENT": 400,
    "DEADLINE_EXCEEDED": 504,
    "NOT_FOUND": 404,
    "ALREADY_EXISTS": 409,
    "PERMISSION_DENIED": 403,
    "RESOURCE_EXHAUSTED": 429,
    "FAILED_PRECONDITION": 400,
    "ABORTED": 409,
    "OUT_OF_RANGE": 400,
    "UNIMPLEMENTED": 501,
    "INTERNAL": 500,
    "UNAVAILABLE": 503,
    "DATA_LOSS": 500,
    "UNAUTHENTICATED": 401,
}

# The reverse mapping is ambiguous (400 is INVALID_ARGUMENT, FAILED_PRECONDITION or
# OUT_OF_RANGE); the REST client reports the most common code for each HTTP status.
CODE_FOR_HTTP_STATUS: dict[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    413: "RESOURCE_EXHAUSTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def code_name(code: int | str) -> str:
    """Returns the status code name for a number or a name (case-insensitive).

    Args:
        code: a gRPC / TensorFlow status code number (e.g. `5`) or name (`"NOT_FOUND"`).

    Returns:
        The upper-case name, e.g. `"NOT_FOUND"`.
    """
    if isinstance(code, bool):
        raise TypeError(f"Expected a status code name or number. Received: code={code!r}")
    if isinstance(code, int):
        if code not in _CODE_NAMES:
            raise ValueError(f"Unknown status code number. Received: code={code}")
        return _CODE_NAMES[code]
    if isinstance(code, str):
        name = code.upper()
        if name.startswith("STATUSCODE."):
            name = name[len("STATUSCODE.") :]
        if name not in STATUS_CODES:
            raise ValueError(
                f"Unknown status code name; expected one of {sorted(STATUS_CODES)}. "
                f"Received: code={code!r}"
            )
        return name
    raise TypeError(f"Expected a status code name or number. Received: code={code!r}")


class ServingError(Exception):
    """An error answered by a model server (or a failure to reach one).

    Every failure of `TranslationClient` and `RestTranslationClient` surfaces as
    this one type, carrying the gRPC status code name and the server's message,
    so callers can branch on `error.code` whatever the transport:

    - gRPC: `code` is the RPC's status code, `message` its details.
    - REST: `code` is mapped back from the HTTP status (TF Serving's table:
      400 → `INVALID_ARGUMENT`, 404 → `NOT_FOUND`, 504 → `DEADLINE_EXCEEDED`,
      503 → `UNAVAILABLE`, ...), `message` is the `{"error": msg}` body and
      `http_status` the HTTP status.
    - Connection refused / unreachable host: `UNAVAILABLE`; client-side
      timeout: `DEADLINE_EXCEEDED`.

    The local server raises it internally too; its servicers turn it into the
    gRPC status (or HTTP status and JSON body) TF Serving would answer.

    Args:
        code: status code name (e.g. `"NOT_FOUND"`) or number.
        message: the server's error message.
        http_status: the HTTP status, for errors that came over REST.

    Example:

    ```python
    try:
        client.translate(["hello"])
    except ServingError as error:
        if error.code == "NOT_FOUND":
            ...
    ```
    """

    def __init__(self, code: int | str, message: str = "", *, http_status: int | None = None):
        self.code = code_name(code)
        self.message = str(message)
        self.http_status = http_status
        super().__init__(self.code, self.message)

    @property
    def code_number(self) -> int:
        """The numeric status code (e.g. 5 for `NOT_FOUND`)."""
        return STATUS_CODES[self.code]

    @property
    def retryable(self) -> bool:
        """Whether retrying the same call may succeed (only `UNAVAILABLE`)."""
        return self.code == "UNAVAILABLE"

    def __str__(self) -> str:
        return f"{self.code}: {self.message}" if self.message else self.code

    def __repr__(self) -> str:
        extra = f", http_status={self.http_status}" if self.http_status is not None else ""
        return f"ServingError(code={self.code!r}, message={self.message!r}{extra})"

    def __reduce__(self):
        return (_rebuild, (self.code, self.message, self.http_status))


def _rebuild(code: str, message: str, http_status: int | None) -> ServingError:
    return ServingError(code, message, http_status=http_status)
