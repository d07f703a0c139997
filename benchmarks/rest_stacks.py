"""REST API on different HTTP stacks: requests/s, p50/p99 latency and memory, same API core.

Each stack serves the same `RestApi` (routing, JSON formats, TensorFlow run
on a thread pool) over one loaded export, in its own server process:

- `stdlib`: `http.server.ThreadingHTTPServer`, a thread per connection (the
  server's REST layer before Uvicorn, as it was: no TCP_NODELAY; the baseline
  of the ratios);
- `uvicorn-h11`: `RestServer` as the model server runs it (Uvicorn with h11,
  Starlette requests and responses);
- `uvicorn-httptools`: the same app on Uvicorn's httptools (llhttp) parser;
- `aiohttp`: an aiohttp.web app calling `RestApi.process` on a thread pool.

`--concurrency` client threads, each on one keep-alive connection, GET the
model's status (no TensorFlow: the stack's own cost), then POST `:predict`
with `--batch` sentences (default 1 and 32), for `--duration` seconds per
round; the stacks alternate in `--repeats` rounds (medians). Then
a burst of large bodies (`--burst-mib` MiB each, parsed in full and refused
with 400) measures each server's resident memory before, at its peak and
`--settle` seconds after.

    python benchmarks/rest_stacks.py --export-dir /tmp/export   # a base or version directory
    python benchmarks/rest_stacks.py --export-dir /tmp/export --stacks uvicorn-h11,stdlib

The serving side is one process per stack (`--serve STACK --port N`), so a
client's Python does not share the server's GIL.
"""

from __future__ import annotations

import argparse
import http.client
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import harness
import numpy as np

STACKS = ("stdlib", "uvicorn-h11", "uvicorn-httptools", "aiohttp")
SENTENCES = [
    "The cat sat on the mat.",
    "I am cold.",
    "How are you today?",
    "We will go to the beach tomorrow if it does not rain.",
    "Tom is my friend.",
    "Where is the station?",
    "She reads a book every week.",
]


# Serving side --------------------------------------------------------------------------------


def serve(stack: str, port: int, base: Path, model_name: str) -> None:
    """Serves `base` with `stack` on `port` until stdin closes."""
    import concurrent.futures

    from keras_attention.serving import ModelServer, ServerOptions
    from keras_attention.serving.server.rest_app import RestApi, RestServer, rest_app

    options = ServerOptions(
        port=0, model_name=model_name, model_base_path=str(base), file_system_poll_wait_seconds=0
    )
    server = ModelServer(options)
    server.start()
    api = RestApi(server.manager)
    executor = concurrent.futures.ThreadPoolExecutor(8, thread_name_prefix="bench-rest")
    if stack == "uvicorn-h11":
        rest = RestServer(api, "127.0.0.1", port, num_threads=8)
        rest.start()
    elif stack == "uvicorn-httptools":
        import uvicorn

        config = uvicorn.Config(
            rest_app(api, executor), http="httptools", lifespan="off", log_config=None
        )
        config.access_log = False
        threading.Thread(
            target=uvicorn.Server(config).run,
            kwargs={"sockets": [_listen(port)]},
            daemon=True,
        ).start()
    elif stack == "aiohttp":
        threading.Thread(target=_serve_aiohttp, args=(api, executor, port), daemon=True).start()
    else:
        threading.Thread(target=_serve_stdlib, args=(api, port), daemon=True).start()
    print("ready", flush=True)
    sys.stdin.read()


def _listen(port: int):
    import socket

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP_NODELAY
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(1024)
    return sock


def _serve_aiohttp(api, executor, port: int) -> None:
    import asyncio

    from aiohttp import web

    async def handle(request: web.Request) -> web.Response:
        body = await request.read() if request.method == "POST" else b""
        loop = asyncio.get_running_loop()
        answer = await loop.run_in_executor(
            executor, api.process, request.method, request.raw_path.split("?")[0], body
        )
        return web.Response(
            body=answer.body, status=answer.status, content_type=answer.content_type
        )

    app = web.Application(client_max_size=64 << 20)
    app.router.add_route("*", "/{tail:.*}", handle)
    web.run_app(app, sock=_listen(port), print=None, handle_signals=False)


def _serve_stdlib(api, port: int) -> None:
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            self.do_POST()

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            answer = api.process(self.command, self.path, body)
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)

        def log_message(self, *args) -> None:
            pass

    http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


# Client side ---------------------------------------------------------------------------------


def _post(connection: http.client.HTTPConnection, path: str, body: bytes | None) -> int:
    """POSTs `body` to `path` (GETs `path` if `body` is None); returns the status."""
    if body is None:
        connection.request("GET", path)
    else:
        connection.request("POST", path, body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    return response.status


def _load(port: int, path: str, body: bytes | None, concurrency: int, duration: float) -> dict:
    def make_call(index: int):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

        def call() -> None:
            status = _post(connection, path, body)
            if status != 200:
                raise RuntimeError(f"HTTP {status}")

        return call

    return harness.closed_loop_load(make_call, concurrency, duration, warmup=1)


def _signature_defaults(base: Path) -> dict:
    """serving_default's optional inputs at their defaults (the REST body names every input)."""
    import tensorflow as tf
    from tensorflow.core.protobuf import saved_model_pb2

    version = max((p for p in base.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    saved_model = saved_model_pb2.SavedModel.FromString((version / "saved_model.pb").read_bytes())
    signature = saved_model.meta_graphs[0].signature_def["serving_default"]
    return {name: tf.make_ndarray(proto).tolist() for name, proto in signature.defaults.items()}


def _burst(port: int, pid: int, path: str, mib: int, count: int, settle: float) -> dict:
    """`count` bodies of `mib` MiB (8 at a time), parsed in full and refused (400)."""
    values = ",".join(["1234567"] * (mib << 17))  # 8 bytes per value
    body = ('{"instances": [' + values + "]}").encode()
    before = harness.rss_mib(pid)
    peak = before
    done = threading.Event()

    def watch() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, harness.rss_mib(pid))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()

    def sender(n: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        for _ in range(n):
            if _post(connection, path, body) != 400:
                raise RuntimeError("the large body was not refused with 400")
        connection.close()

    senders = [threading.Thread(target=sender, args=(count // 8,)) for _ in range(8)]
    for thread in senders:
        thread.start()
    for thread in senders:
        thread.join()
    time.sleep(settle)
    done.set()
    watcher.join()
    return {"before_mib": before, "peak_mib": peak, "after_mib": harness.rss_mib(pid)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--export-dir", type=Path, help="Export base or version directory.")
    parser.add_argument("--model-name", default="translator")
    parser.add_argument("--stacks", default=",".join(STACKS))
    parser.add_argument("--batch", default="1,32", help="Sentences per request.")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--burst-mib", type=int, default=16)
    parser.add_argument("--burst-count", type=int, default=32)
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--serve", choices=STACKS, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    export = args.export_dir.resolve()
    base = export.parent if (export / "saved_model.pb").exists() else export
    if args.serve:
        serve(args.serve, args.port, base, args.model_name)
        return 0
    machine = harness.print_machine_header()
    from keras_attention.serving.server.model_server import free_port

    stacks = args.stacks.split(",")
    servers = {}
    for stack in stacks:
        port = free_port()
        child = subprocess.Popen(
            [sys.executable, __file__, f"--serve={stack}", f"--port={port}"]
            + [f"--export-dir={export}", f"--model-name={args.model_name}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=harness.child_environment(),
            text=True,
        )
        if child.stdout.readline().strip() != "ready":
            raise SystemExit(f"{stack} did not start")
        time.sleep(1.0)
        servers[stack] = (port, child)
    path = f"/v1/models/{args.model_name}:predict"
    defaults = _signature_defaults(base)
    results: dict = {"load": [], "memory": {}}
    try:
        for batch in ["status"] + [int(b) for b in args.batch.split(",")]:
            if batch == "status":  # GET model status: the HTTP stack's own cost, no TensorFlow
                target, body = f"/v1/models/{args.model_name}", None
            else:
                sentences = [SENTENCES[i % len(SENTENCES)] for i in range(batch)]
                target = path
                body = json.dumps({"inputs": {**defaults, "text": sentences}}).encode()
            rounds: dict[str, list[dict]] = {stack: [] for stack in stacks}
            for _ in range(args.repeats):
                for stack in stacks:
                    port = servers[stack][0]
                    rounds[stack].append(_load(port, target, body, args.concurrency, args.duration))
            row = {"batch": batch}
            for stack in stacks:
                row[stack] = {
                    k: float(np.median([r[k] for r in rounds[stack]])) for k in rounds[stack][0]
                }
            results["load"].append(row)
            reference = row[stacks[0]]["requests_per_s"]
            for stack in stacks:
                cell = row[stack]
                print(
                    f"batch {batch!s:>6} {stack:18s} {cell['requests_per_s']:8.1f} req/s "
                    f"({cell['requests_per_s'] / reference:4.2f}x {stacks[0]}) "
                    f"p50 {cell['p50_ms']:7.1f} ms  p99 {cell['p99_ms']:7.1f} ms",
                    flush=True,
                )
        for stack in stacks:
            port, child = servers[stack]
            memory = _burst(port, child.pid, path, args.burst_mib, args.burst_count, args.settle)
            results["memory"][stack] = memory
            print(
                f"memory {stack:18s} {args.burst_count} x {args.burst_mib} MiB bodies: RSS "
                f"{memory['before_mib']:.0f} MiB before, {memory['peak_mib']:.0f} peak, "
                f"{memory['after_mib']:.0f} after {args.settle:g} s",
                flush=True,
            )
    finally:
        for _, child in servers.values():
            child.stdin.close()
            child.terminate()
            child.wait(timeout=60)
    if args.json is not None:
        harness.write_json(args.json, results, machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
