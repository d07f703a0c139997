"""The translation page of `keras-attention serve --ui`: its static files as an ASGI app.

The page (`static/`: plain HTML, CSS and JavaScript, package data) calls the server's
public REST API only, from the same origin.
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
"""Path -> (file in `static/`, content type)."""


class TranslationPage:
    """Answers the page's paths (`/` and `/ui/...`) with its files and `SECURITY_HEADERS`.

    An ASGI app: `GET` / `HEAD` of a path of `FILES` answers the file (read once),
    another method 405 with `Allow: GET, HEAD`, another path 404.

    Example:

    >>> [route.path for route in TranslationPage().routes()]
    ['/', '/ui/{name:path}']
    """

    def __init__(self):
        package = resources.files(__package__).joinpath("static")
        self._files = {
            path: (package.joinpath(name).read_bytes(), content_type)
            for path, (name, content_type) in FILES.items()
        }

    def routes(self) -> list[BaseRoute]:
        """Starlette routes of `/` and `/ui/...` to this page, for any method."""
        return [Route("/", self), Route("/ui/{name:path}", self)]

    async def __call__(self, scope, receive, send) -> None:
        path, method, text = scope["path"], scope["method"], "text/plain; charset=utf-8"
        if path not in self._files:
            response = Response(f"Not found: {path}", 404, SECURITY_HEADERS, text)
        elif method not in ("GET", "HEAD"):
            message = f"Method {method} is not allowed for {path}; allowed: GET, HEAD"
            response = Response(message, 405, {**SECURITY_HEADERS, "Allow": "GET, HEAD"}, text)
        else:
            body, content_type = self._files[path]
            response = Response(body, 200, SECURITY_HEADERS, content_type)
        await response(scope, receive, send)
