"""Load test: gRPC through the local model server vs the in-process call of the same SavedModel.

For each concurrency (default 1, 4, 16) and batch size (default 1, 32):

- in-process: `concurrency` threads call the version's Session directly
  (TF Serving's path: Graph + Session on the SignatureDef's tensor names,
  `serving.saved_model_bundle.SavedModelBundle.run`);
- gRPC: `concurrency` threads, one `TranslationClient` each, call
  `client.translate(batch)` on `python -m serving` running in its own process
  (the client also splits the padded outputs into `Translation`s).

The two paths alternate in `--repeats` short rounds per cell (a shared
machine's load then hits both alike); it prints the medians of requests/s,
sentences/s and p50/p99 latency, and the gRPC / in-process throughput ratio.

    python benchmarks/serving_load.py                       # stand-in export, built in a temp dir
    python benchmarks/serving_load.py --export-dir /models/translator --repeats 5

`--export-dir` is either a base directory (integer version subdirectories; the
latest is used) or one version directory.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SENTENCES = [
    "the cat sat on the mat",
    "i am cold",
    "how are you today",
    "we will go to the beach tomorrow if it does not rain",
    "tom is a dog",
]


def _stand_in_builder():
    """The test suite's stand-in translator export (same signature contract as the real one)."""
    path = ROOT / "tests" / "serving" / "stand_in_translator_export.py"
    spec = importlib.util.spec_from_file_location("stand_in_translator_export", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_translator_export


def _version_dir(export_dir: Path) -> Path:
    if (export_dir / "saved_model.pb").exists():
        return export_dir
    versions = [p for p in export_dir.iterdir() if p.is_dir() and p.name.isdigit()]
    if not versions:
        raise SystemExit(f"No saved_model.pb or integer version directory in {export_dir}")
    return max(versions, key=lambda p: int(p.name))


def _batch(batch_size: int) -> list[str]:
    return [SENTENCES[i % len(SENTENCES)] for i in range(batch_size)]


def _run_threads(make_call, concurrency: int, duration: float) -> dict:
    """Runs `make_call(i)()` from threads i < `concurrency` for `duration` s; returns stats."""
    latencies: list[list[float]] = [[] for _ in range(concurrency)]
    errors: list[BaseException] = []
    start_barrier = threading.Barrier(concurrency + 1)
    stop = threading.Event()

    def worker(index: int) -> None:
        call = make_call(index)
        for _ in range(2):  # warm the path (callables, connections)
            call()
        start_barrier.wait()
        while not stop.is_set():
            begin = time.perf_counter()
            try:
                call()
            except BaseException as error:  # noqa: BLE001 - counted and reported
                errors.append(error)
                return
            latencies[index].append(time.perf_counter() - begin)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(concurrency)]
    for thread in threads:
        thread.start()
    start_barrier.wait()
    began = time.perf_counter()
    time.sleep(duration)
    stop.set()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    flat = np.array([x for per_thread in latencies for x in per_thread])
    if errors:
        raise RuntimeError(f"{len(errors)} requests failed; first: {errors[0]!r}")
    return {
        "requests": int(flat.size),
        "requests_per_s": flat.size / elapsed,
        "p50_ms": float(np.percentile(flat, 50) * 1e3),
        "p99_ms": float(np.percentile(flat, 99) * 1e3),
    }


def _median(rounds: list[dict]) -> dict:
    return {key: float(np.median([r[key] for r in rounds])) for key in rounds[0]}


def _in_process(version_dir: Path, signature: str):
    from serving.saved_model_bundle import SavedModelBundle

    bundle = SavedModelBundle(
        "translator", int(version_dir.name) if version_dir.name.isdigit() else 1, str(version_dir)
    )
    bundle.load()
    signature_def = bundle.meta_graph_def.signature_def[signature]
    input_name = signature_def.inputs["text"].name
    fetches = [info.name for _, info in sorted(signature_def.outputs.items())]

    def make_call(texts: list[str]):
        feeds = {input_name: np.array(texts, dtype=object)}
        return lambda: bundle.run(feeds, fetches)

    return bundle, make_call


def _start_server(base: Path, model_name: str, port: int) -> subprocess.Popen:
    command = [
        sys.executable,
        "-m",
        "serving",
        f"--port={port}",
        f"--model_name={model_name}",
        f"--model_base_path={base}",
        "--file_system_poll_wait_seconds=0",
        "--grpc_max_threads=32",
        "--log_level=WARNING",
    ]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.Popen(command, env=env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--export-dir",
        type=Path,
        default=None,
        help="Export base directory or version directory (default: build the "
        "stand-in translator in a temporary directory).",
    )
    parser.add_argument("--model-name", default="translator")
    parser.add_argument("--signature", default="serving_default")
    parser.add_argument("--concurrency", default="1,4,16")
    parser.add_argument("--batch-sizes", default="1,32")
    parser.add_argument(
        "--duration", type=float, default=1.5, help="Seconds per measurement round."
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="Rounds per path and cell (medians reported)."
    )
    parser.add_argument("--json", type=Path, default=None, help="Also write results here.")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    from serving import TranslationClient
    from serving.model_server import free_port

    concurrencies = [int(c) for c in args.concurrency.split(",")]
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    with tempfile.TemporaryDirectory() as scratch:
        if args.export_dir is None:
            version_dir = _stand_in_builder()(Path(scratch) / "stand_in", 1)
            print(f"Built the stand-in export at {version_dir}")
        else:
            version_dir = _version_dir(args.export_dir.resolve())
        base = Path(scratch) / "base"
        base.mkdir()
        (base / "1").symlink_to(version_dir, target_is_directory=True)

        bundle, make_call = _in_process(version_dir, args.signature)
        port = free_port()
        server = _start_server(base, args.model_name, port)
        results = []
        try:
            probe = TranslationClient(f"127.0.0.1:{port}", model_name=args.model_name)
            probe.wait_until_available(timeout=300)
            probe.close()
            for batch_size in batch_sizes:
                texts = _batch(batch_size)
                for concurrency in concurrencies:
                    call = make_call(texts)
                    clients = [
                        TranslationClient(
                            f"127.0.0.1:{port}",
                            model_name=args.model_name,
                            signature_name=args.signature,
                            batch_size=batch_size,
                        )
                        for _ in range(concurrency)
                    ]
                    # Alternate the two paths in short rounds and keep the medians, so a
                    # load change on a shared machine hits both alike.
                    rounds = {"in_process": [], "grpc": []}
                    for _ in range(args.repeats):
                        rounds["in_process"].append(
                            _run_threads(lambda _, call=call: call, concurrency, args.duration)
                        )
                        rounds["grpc"].append(
                            _run_threads(
                                lambda i, clients=clients, texts=texts: (
                                    lambda: clients[i].translate(texts)
                                ),
                                concurrency,
                                args.duration,
                            )
                        )
                    for client in clients:
                        client.close()
                    local, remote = _median(rounds["in_process"]), _median(rounds["grpc"])
                    ratio = remote["requests_per_s"] / local["requests_per_s"]
                    results.append(
                        {
                            "batch": batch_size,
                            "concurrency": concurrency,
                            "in_process": local,
                            "grpc": remote,
                            "ratio": ratio,
                        }
                    )
                    print(
                        f"batch {batch_size:3d} concurrency {concurrency:3d} | in-process "
                        f"{local['requests_per_s']:8.1f} req/s "
                        f"({local['requests_per_s'] * batch_size:8.1f} sent/s) "
                        f"p50 {local['p50_ms']:6.2f} p99 {local['p99_ms']:6.2f} ms | gRPC "
                        f"{remote['requests_per_s']:8.1f} req/s "
                        f"({remote['requests_per_s'] * batch_size:8.1f} sent/s) "
                        f"p50 {remote['p50_ms']:6.2f} p99 {remote['p99_ms']:6.2f} ms | "
                        f"gRPC/in-process {ratio:4.2f}",
                        flush=True,
                    )
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=120)
            bundle.retire()
    print("\ngRPC / in-process throughput:")
    for row in results:
        print(f"  batch {row['batch']:3d} concurrency {row['concurrency']:3d}: {row['ratio']:.2f}")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
