"""Helpers of the translation page's browser tests: Debian's chromium, a model without attention.

Playwright's own browser download cannot be reached from our machines, so the
tests drive the system's chromium (`apt-get install chromium`, which `.ci/run`
does) through pytest-playwright with `executable_path`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import urllib.request
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
"""Debian's chromium."""

CHROMIUM_FLAGS = [
    "--no-sandbox",  # the tests run as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # No connections of its own: the machines' network is closed.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""Flags chromium needs on a headless machine with no network but loopback."""


MAX_REQUEST_BYTES = 4096
"""The test servers' request size limit: a longer text gets the server's 413 answer."""


def chromium_missing() -> str | None:
    """Why the browser tests cannot run here, or `None` when they can."""
    if not Path(CHROMIUM).is_file():
        return f"Debian's chromium is not installed ({CHROMIUM}): apt-get install -y chromium"
    return None


def build_plain_export(export_dir: str | os.PathLike, version: int = 1) -> Path:
    """A translator without attention: `serving_default` answers `translation` and `score` only.

    `translation` is the upper-cased text, `score` minus its number of
    whitespace-separated words.
    """
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras
    import tensorflow as tf

    def translate(text):
        words = tf.strings.split(text)
        return {
            "translation": tf.strings.upper(text),
            "score": -tf.cast(words.row_lengths(), tf.float32),
        }

    archive = keras.export.ExportArchive()
    archive.add_endpoint(
        "serving_default", translate, input_signature=[tf.TensorSpec([None], tf.string)]
    )
    path = Path(export_dir) / str(version)
    archive.write_out(str(path), verbose=False)
    return path


def start_server(config: Path, *, ui: bool = True):
    """A started `ModelServer` serving `config`, with REST (and the page when `ui`) on free ports."""
    from keras_attention.serving import ModelServer, ServerOptions
    from keras_attention.serving.server.model_server import free_port

    server = ModelServer(
        ServerOptions(
            port=0,
            rest_api_port=free_port(),
            model_config_file=str(config),
            file_system_poll_wait_seconds=0,
            max_request_bytes=MAX_REQUEST_BYTES,
            ui=ui,
        )
    )
    server.start()
    return server


def post_json(url: str, document: dict, timeout: float = 60.0) -> dict:
    """POSTs `document` as JSON to `url`; the JSON answer (raises on HTTP errors)."""
    request = urllib.request.Request(
        url, json.dumps(document).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def choose_model(page, name: str) -> None:
    """Picks model `name` on the page (the listing's menu, or the name field without one)."""
    from playwright.sync_api import expect

    page.wait_for_selector("body[data-ready=true]")
    if page.is_visible("#model"):
        page.select_option("#model", name)
    else:
        page.fill("#model-name", name)
        page.dispatch_event("#model-name", "change")
    # Locator waits, not wait_for_function: the page's CSP forbids evaluating strings.
    expect(page.locator("#model-info")).to_have_text(re.compile(f"^{re.escape(name)}, "))


def heatmap(page, sentence: int, rank: int = 0) -> dict:
    """The heatmap of `sentence`'s translation `rank`, read from the page's data attributes.

    Returns `{"rows": [target tokens], "columns": [source tokens], "weights":
    [[float]] (rows x columns), "cells": number of cells}`.
    """
    return page.evaluate(
        """([sentence, rank]) => {
            const table = document.querySelector(
                `article[data-index="${sentence}"] table.heatmap[data-rank="${rank}"]`);
            const rows = [...table.querySelectorAll("th.target-token")].map((th) => th.textContent);
            const columns = [...table.querySelectorAll("th.source-token")]
                .map((th) => th.textContent);
            const weights = rows.map(() => columns.map(() => null));
            const cells = table.querySelectorAll("td.cell");
            for (const cell of cells) {
                weights[Number(cell.dataset.row)][Number(cell.dataset.column)] =
                    Number(cell.dataset.weight);
            }
            return {rows, columns, weights, cells: cells.length};
        }""",
        [sentence, rank],
    )
