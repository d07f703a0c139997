"""The translation page of `keras-attention serve --ui`: its static files as an ASGI app.

The page (`ui/index.html`, `ui/app.js`, `ui/style.css`, shipped as package data)
is plain HTML, CSS and JavaScript with no dependencies and no build step. It
calls the server's public REST API only (`GET /v1/models`, the model status and
metadata routes, `:predict`), from the same origin; the server adds nothing for
it but the page's own paths.
"""

from __future__ import annotations

from importlib import resources

from starlette.responses import Response
from starlette.routing import BaseRoute, Route

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""Only the page's own files and same-origin API calls; no inline code, no framing."""

SECURITY_HEADERS: dict[str, str] = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
    "Cache-Control": "no-cache",
}
"""Headers of every page response; API responses do not carry them."""

FILES: dict[str, tuple[str, str]] = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/ui/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/ui/style.css": ("style.css", "text/css; charset=utf-8"),
}
"""Path -> (file in `ui/`, content type)."""

_ALLOWED = "GET, HEAD"


class TranslationPage:
    """Answers the page's paths (`/` and `/ui/...`) with its files and `SECURITY_HEADERS`.

    An ASGI app for HTTP requests on `serves(path)` paths:

    1. `GET` / `HEAD` of a path of `FILES`: 200 with the file.
    2. Another method: 405 with `Allow: GET, HEAD`.
    3. Another path under `/ui/`: 404.

    The files are read once, when the page is built. A server puts `routes()`
    before its API's catch-all, or calls the page itself where `serves(path)`.

    Example:

    >>> page = TranslationPage()
    >>> page.serves("/"), page.serves("/ui/app.js"), page.serves("/v1/models")
    (True, True, False)
    >>> page.body("/").startswith(b"<!doctype html>")
    True
    """

    def __init__(self):
        package = resources.files(__package__).joinpath("ui")
        self._files = {
            path: (package.joinpath(name).read_bytes(), content_type)
            for path, (name, content_type) in FILES.items()
        }

    def routes(self) -> list[BaseRoute]:
        """Starlette routes of `/` and `/ui/...` to this page, for any method."""
        return [Route("/", self), Route("/ui/{name:path}", self)]

    @staticmethod
    def serves(path: str) -> bool:
        """Whether `path` is the page's (`/` or under `/ui/`)."""
        return path == "/" or path.startswith("/ui/")

    def body(self, path: str) -> bytes:
        """The file served at `path` (a key of `FILES`).

        Raises:
            ValueError: `path` is not one of the page's files.
        """
        if path not in self._files:
            raise ValueError(f"path must be one of {sorted(self._files)}. Received: path={path!r}")
        return self._files[path][0]

    async def __call__(self, scope, receive, send) -> None:
        path, method = scope["path"], scope["method"]
        if path not in self._files:
            response = Response(
                f"Not found: {path}", 404, SECURITY_HEADERS, "text/plain; charset=utf-8"
            )
        elif method not in ("GET", "HEAD"):
            response = Response(
                f"Method {method} is not allowed for {path}; allowed: {_ALLOWED}",
                405,
                {**SECURITY_HEADERS, "Allow": _ALLOWED},
                "text/plain; charset=utf-8",
            )
        else:
            body, content_type = self._files[path]
            response = Response(body, 200, SECURITY_HEADERS, content_type)
        await response(scope, receive, send)
