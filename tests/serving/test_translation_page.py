"""`TranslationPage`: the page's files, its headers, what the files may load, and `serve --ui`.

The page in a browser, against a live server, is tested in `tests/ui`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import html.parser
import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from keras_attention.serving.ui.translation_page import (
    CONTENT_SECURITY_POLICY,
    FILES,
    SECURITY_HEADERS,
    TranslationPage,
)

UI = Path(__file__).resolve().parents[2] / "serving" / "ui" / "static"


def call(app, method: str, path: str) -> tuple[int, dict[str, str], bytes]:
    """Runs one HTTP request through the ASGI app: (status, headers, body)."""
    messages = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        messages.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": [], "query_string": b""}
    # In a thread of its own: Playwright's sync API (tests/ui) keeps a loop running in this one.
    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        thread.submit(asyncio.run, app(scope, receive, send)).result()
    start = messages[0]
    headers = {name.decode().lower(): value.decode() for name, value in start["headers"]}
    body = b"".join(m.get("body", b"") for m in messages[1:])
    return start["status"], headers, body


@pytest.fixture(scope="module")
def page():
    return TranslationPage()


@pytest.mark.parametrize(
    ("path", "name", "content_type"),
    [
        ("/", "index.html", "text/html; charset=utf-8"),
        ("/ui/app.js", "app.js", "text/javascript; charset=utf-8"),
        ("/ui/style.css", "style.css", "text/css; charset=utf-8"),
    ],
)
def test_each_file_is_served_with_the_security_headers(page, path, name, content_type):
    status, headers, body = call(page, "GET", path)
    assert status == 200
    assert body == (UI / name).read_bytes()
    assert headers["content-type"] == content_type
    for header, value in SECURITY_HEADERS.items():
        assert headers[header.lower()] == value
    assert "default-src 'none'" in headers["content-security-policy"]


def test_other_paths_and_methods_are_refused_with_the_headers(page):
    status, headers, body = call(page, "GET", "/ui/../index.html")
    assert (status, body) == (404, b"Not found: /ui/../index.html")
    assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    status, headers, body = call(page, "POST", "/")
    assert status == 405
    assert headers["allow"] == "GET, HEAD"
    assert body == b"Method POST is not allowed for /; allowed: GET, HEAD"


def test_its_routes_go_before_a_catch_all(page):
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse

    app = Starlette(routes=page.routes())
    app.router.default = PlainTextResponse("the API")
    assert call(app, "GET", "/")[2] == (UI / "index.html").read_bytes()
    assert call(app, "GET", "/ui/style.css")[2] == (UI / "style.css").read_bytes()
    assert call(app, "GET", "/ui/nothing")[0] == 404
    assert call(app, "DELETE", "/")[0] == 405
    status, headers, body = call(app, "GET", "/v1/models")
    assert (status, body) == (200, b"the API")
    assert "content-security-policy" not in headers


class _Markup(html.parser.HTMLParser):
    """Collects what a CSP of `script-src 'self'; style-src 'self'` would refuse, and links."""

    def __init__(self):
        super().__init__()
        self.links, self.inline, self.labels, self.controls = [], [], set(), []
        self._open = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.links += [attributes[a] for a in ("src", "href") if a in attributes]
        self.inline += [f"{tag} {a}" for a in attributes if a == "style" or a.startswith("on")]
        if tag == "script" and "src" not in attributes:
            self.inline.append("inline <script>")
        if tag == "style":
            self.inline.append("<style>")
        if tag == "label" and "for" in attributes:
            self.labels.add(attributes["for"])
        if tag in ("input", "select", "textarea") and attributes.get("type") != "radio":
            self.controls.append(attributes.get("id"))


def test_the_page_loads_only_its_own_files_and_has_no_inline_code():
    markup = _Markup()
    markup.feed((UI / "index.html").read_text())
    assert sorted(markup.links) == ["ui/app.js", "ui/style.css"]
    assert {"/" + link for link in markup.links} <= set(FILES)
    assert markup.inline == []
    # Every text field and menu has a <label for=...> (radios sit inside theirs).
    assert markup.controls and set(markup.controls) <= markup.labels


def test_the_script_calls_only_the_rest_api_of_its_own_origin():
    script = (UI / "app.js").read_text()
    assert not re.search(r"https?://", script)
    assert "eval(" not in script and "new Function" not in script and "innerHTML" not in script
    paths = set(re.findall(r'"(/v1/[^"]*)"', script))
    assert paths == {"/v1/models", "/v1/models/"}
    assert ":predict" in script and "/metadata" in script


# --- serve --ui -----------------------------------------------------------------------


def get(url: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return (
                response.status,
                {k.lower(): v for k, v in response.headers.items()},
                (response.read()),
            )
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def test_ui_needs_the_rest_port(translator_base):
    from keras_attention.serving import ServerOptions

    with pytest.raises(
        ValueError,
        match=r"ui serves the page on the REST port: set rest_api_port\. "
        r"Received: ui=True, rest_api_port=0",
    ):
        ServerOptions(model_base_path=str(translator_base), ui=True)


@pytest.mark.parametrize("ui", [False, True])
def test_serve_ui_adds_the_page_and_leaves_the_api_as_it_is(translator_base, ui):
    from keras_attention.serving import ModelServer
    from keras_attention.serving.server import cli
    from keras_attention.serving.server.model_server import free_port

    argv = ["--port=0", f"--rest_api_port={free_port()}", "--model_name=translator"]
    argv += [f"--model_base_path={translator_base}", "--file_system_poll_wait_seconds=0"]
    options = cli.options_from_args(cli.build_parser().parse_args(argv + ["--ui"] * ui))
    assert options.ui is ui
    with ModelServer(options) as server:
        status, headers, body = get(server.rest_url + "/")
        if ui:
            assert (status, body) == (200, (UI / "index.html").read_bytes())
            assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
            assert headers["x-frame-options"] == "DENY"
        else:
            assert status == 404
            assert json.loads(body) == {"error": "Not found: /"}
            assert "content-security-policy" not in headers
        status, headers, body = get(server.rest_url + "/v1/models/translator")
        assert status == 200 and json.loads(body)["model_version_status"][0]["state"] == (
            "AVAILABLE"
        )
        assert headers["content-type"] == "application/json"
        assert not {name.lower() for name in SECURITY_HEADERS} & set(headers)
        line = cli.serving_line(server, "serve")
        assert line.endswith(f"REST {server.rest_url}" + (f", page {server.rest_url}/" * ui))
