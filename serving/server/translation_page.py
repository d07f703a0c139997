"""The translation page of `keras-attention serve --ui`: static files and their routes.

The page (`ui/index.html`, `ui/app.js`, `ui/style.css`, shipped as package data)
is plain HTML, CSS and JavaScript with no dependencies and no build step. It
calls the server's public REST API only (`GET /v1/models`, the model status and
metadata routes, `:predict`), from the same origin; the server adds nothing for
it but these routes:

- `GET /`: `index.html`.
- `GET /ui/app.js`, `GET /ui/style.css`.

Page responses carry a Content-Security-Policy that allows only the page's own
script, style sheet and same-origin requests, and the usual security headers
(`SECURITY_HEADERS`); API responses are unchanged.
"""

from __future__ import annotations

from importlib import resources

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

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
"""Headers of every page response (`/`, `/ui/...`)."""

ASSETS: dict[str, str] = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}
"""The files of `ui/` -> their content type."""


def asset(name: str) -> bytes:
    """The bytes of the page's file `name` (a key of `ASSETS`).

    Raises:
        ValueError: `name` is not one of the page's files.
    """
    if name not in ASSETS:
        raise ValueError(f"name must be one of {sorted(ASSETS)}. Received: name={name!r}")
    return resources.files(__package__).joinpath("ui", name).read_bytes()


def page_routes() -> list[Route]:
    """The Starlette routes of the page: `/` and `/ui/NAME` (GET and HEAD).

    The files are read once, here. Put the routes before a catch-all route.
    """
    files = {name: (asset(name), content_type) for name, content_type in ASSETS.items()}

    def reply(name: str) -> Response:
        if name not in files or name == "index.html":
            return Response(
                f"Not found: /ui/{name}", 404, SECURITY_HEADERS, "text/plain; charset=utf-8"
            )
        body, content_type = files[name]
        return Response(body, 200, SECURITY_HEADERS, content_type)

    async def index(request: Request) -> Response:
        body, content_type = files["index.html"]
        return Response(body, 200, SECURITY_HEADERS, content_type)

    async def static(request: Request) -> Response:
        return reply(request.path_params["name"])

    return [
        Route("/", index, methods=["GET"]),
        Route("/ui/{name}", static, methods=["GET"]),
    ]
