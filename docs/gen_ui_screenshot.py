"""Takes the screenshot of the translation page (`keras-attention serve --ui`) for the docs.

    python docs/gen_ui_screenshot.py EXPORT_BASE [--model-name fra-eng]
        [--out docs/images/translation_page.png] [--width 1000] [--n-best 3]

1. Starts `keras-attention serve --ui` on free ports with the export's base
   directory (`keras-attention export RUN_DIR --export-dir EXPORT_BASE`) and
   waits for its ready line.
2. Opens the page in Debian's chromium (headless, driven by Playwright;
   `apt-get install chromium`, `pip install -e ".[test]"`), picks the model,
   beam search (with `--n-best` translations where the export takes `n_best`)
   and types `SENTENCES`.
3. Presses Ctrl+Enter, points at the strongest cell of the first heatmap and
   saves a full-page screenshot to `--out`; prints what the page sent.

The server is stopped at the end, whatever happens.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "docs" / "images" / "translation_page.png"
SENTENCES = ["I am very happy to see you again.", "Where is the train station?"]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Headless chromium on a machine whose only network is loopback (running as root).
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
READY = re.compile(r"REST (http://[^\s,]+)")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serve(base: Path, model_name: str, timeout: float = 300.0):
    """Starts `keras-attention serve --ui`; returns (process, REST URL) once it serves."""
    command = shutil.which("keras-attention", path=str(Path(sys.executable).parent))
    # `python -m keras_attention.serving` takes the same flags as `keras-attention serve`.
    command = [command, "serve"] if command else [sys.executable, "-m", "keras_attention.serving"]
    process = subprocess.Popen(
        [
            *command,
            "--port=0",
            f"--rest_api_port={free_port()}",
            f"--model_name={model_name}",
            f"--model_base_path={base}",
            "--ui",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    found: list[str] = []
    reader = threading.Thread(
        target=lambda: found.extend(m.group(1) for m in map(READY.search, process.stdout) if m),
        daemon=True,
    )
    reader.start()
    deadline = time.monotonic() + timeout
    while not found:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise SystemExit(f"keras-attention serve did not start (exit {process.poll()})")
        time.sleep(0.2)
    return process, found[0]


def screenshot(url: str, model_name: str, out: Path, width: int, n_best: int) -> dict:
    """Translates `SENTENCES` on the page at `url`; saves the screenshot; the request sent."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": width, "height": 800})
        page.set_default_timeout(120_000)
        page.goto(f"{url}/?model={model_name}")
        expect(page.locator("#model-info")).to_have_text(re.compile(f"^{model_name}, "))
        if page.is_enabled('input[name="strategy"][value="beam"]'):
            page.check('input[name="strategy"][value="beam"]')
        if page.is_visible("#n-best"):
            page.fill("#n-best", str(n_best))
        page.fill("#text", "\n".join(SENTENCES))
        with page.expect_request(lambda request: request.url.endswith(":predict")) as sent:
            page.press("#text", "Control+Enter")
        page.locator("article.sentence, #error:not(:empty)").first.wait_for()
        error = page.locator("#error").inner_text()
        if error:
            raise SystemExit(f"The page shows an error: {error}")
        cells = page.locator('article[data-index="0"] td.cell')
        weights = [float(w) for w in cells.evaluate_all("cs => cs.map((c) => c.dataset.weight)")]
        if weights:
            cells.nth(max(range(len(weights)), key=weights.__getitem__)).hover()
        out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(out), full_page=True)
        browser.close()
        return json.loads(sent.value.post_data)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("export_base", type=Path, help="an export's base directory")
    parser.add_argument("--model-name", default="fra-eng")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--width", type=int, default=1000, help="viewport width in pixels")
    parser.add_argument("--n-best", type=int, default=3, help="translations per sentence")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).is_file():
        raise SystemExit(f"{CHROMIUM} not found: apt-get install -y chromium")
    process, url = serve(args.export_base.resolve(), args.model_name)
    try:
        sent = screenshot(url, args.model_name, args.out, args.width, args.n_best)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    print(f"{args.out}: the page at {url}/ sent {json.dumps(sent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
