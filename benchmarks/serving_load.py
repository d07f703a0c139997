"""Load test: batch-1 translation requests over gRPC, with and without server-side batching.

For each concurrency (default 1, 4, 16), `concurrency` threads, one
`TranslationClient` each, send one sentence per request
(`client.translate([sentence])`) as fast as they can, for `--duration`
seconds per round, against three paths:

- `in-process`: the same threads call the version's Session directly
  (TF Serving's path, `keras_attention.saved_model_session.SavedModelSession`),
  no RPC: the baseline;
- `gRPC`: `python -m keras_attention.serving` in its own process, requests run one by one
  (concurrently, each its own Session run);
- `gRPC + batching`: a second server process with `--enable_batching
  --batching_parameters_file=FILE` (default: `BATCHING_PARAMETERS` below),
  which merges concurrent requests into batched Session runs.

The paths alternate in `--repeats` short rounds per cell (a shared machine's
load then hits them alike); the script prints the medians of requests/s and
p50/p99 latency, and the batched / unbatched throughput ratio.

    python benchmarks/serving_load.py                       # trains a default-size model briefly
    python benchmarks/serving_load.py --export-dir /models/translator --repeats 5

`--export-dir` is either a base directory (integer version subdirectories; the
latest is used) or one version directory. Without it, a model of the default
size (TrainConfig's) is trained for `--train-steps` steps on the bundled
corpus and exported into a temporary directory (`export_decode.py`'s
`train_small_run`).
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import harness
import numpy as np

SENTENCES = [
    "The cat sat on the mat.",
    "I am cold.",
    "How are you today?",
    "We will go to the beach tomorrow if it does not rain.",
    "Tom is my friend.",
    "Where is the station?",
    "She reads a book every week.",
]
PATHS = ("in-process", "gRPC", "gRPC + batching")

# The batching server's default BatchingParameters: one batch thread (its Session run uses
# every core through TensorFlow's intra-op pool); batches of up to 16 (the highest default
# concurrency), each waiting at most 20 ms to fill (on this project's 2-core machine it
# beat 5 and 50 ms); the price is up to 20 ms more latency for a lone request.
BATCHING_PARAMETERS = """
max_batch_size { value: 16 }
batch_timeout_micros { value: 20000 }
max_enqueued_batches { value: 1000 }
num_batch_threads { value: 1 }
"""


def _version_dir(export_dir: Path) -> Path:
    if (export_dir / "saved_model.pb").exists():
        return export_dir
    versions = [p for p in export_dir.iterdir() if p.is_dir() and p.name.isdigit()]
    if not versions:
        raise SystemExit(f"No saved_model.pb or integer version directory in {export_dir}")
    return max(versions, key=lambda p: int(p.name))


def _build_export(scratch: Path, steps: int) -> Path:
    """A default-size model trained for `steps` steps, exported as `scratch/export/1`."""
    from keras_attention.export import TranslatorExporter

    run = harness.train_small_run(scratch, steps, size="default")
    return TranslatorExporter.from_run(run).export(scratch / "export").path


def _median(rounds: list[dict]) -> dict:
    return {key: float(np.median([r[key] for r in rounds])) for key in rounds[0]}


def _in_process(version_dir: Path, signature: str):
    from keras_attention.saved_model_session import SavedModelSession

    bundle = SavedModelSession(version_dir, name="translator", version=1)

    def make_call(index: int):
        inputs = {"text": np.array([SENTENCES[index % len(SENTENCES)]], dtype=object)}
        return lambda: bundle.run(signature, inputs)

    return bundle, make_call


def _start_server(base: Path, model_name: str, port: int, batching: Path | None):
    command = [
        sys.executable,
        "-m",
        "keras_attention.serving",
        f"--port={port}",
        f"--model_name={model_name}",
        f"--model_base_path={base}",
        "--file_system_poll_wait_seconds=0",
        "--grpc_max_threads=32",
        "--log_level=WARNING",
    ]
    if batching is not None:
        command += ["--enable_batching", f"--batching_parameters_file={batching}"]
    return subprocess.Popen(command, env=harness.child_environment())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--export-dir",
        type=Path,
        default=None,
        help="Export base directory or version directory (default: train and export a "
        "default-size model in a temporary directory).",
    )
    parser.add_argument("--train-steps", type=int, default=40)
    parser.add_argument("--model-name", default="translator")
    parser.add_argument("--signature", default="serving_default")
    parser.add_argument("--concurrency", default="1,4,16")
    parser.add_argument(
        "--batching-parameters",
        type=Path,
        default=None,
        help="BatchingParameters text proto of the batching server (default: "
        "BATCHING_PARAMETERS in this script; deploy/batching_parameters.txt is the one "
        "for the real server).",
    )
    parser.add_argument(
        "--keep-export",
        type=Path,
        default=None,
        help="Without --export-dir: write the trained export here (reuse it with "
        "--export-dir) instead of a temporary directory.",
    )
    parser.add_argument(
        "--duration", type=float, default=3.0, help="Seconds per measurement round."
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="Rounds per path and cell (medians reported)."
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=None,
        help="Also write the results here (JSON: `results`, a row per concurrency, and `machine`).",
    )
    args = parser.parse_args(argv)
    machine = harness.print_machine_header()
    harness.quiet_tensorflow()

    from keras_attention.serving.server.model_server import free_port
    from keras_attention_client import TranslationClient

    concurrencies = [int(c) for c in args.concurrency.split(",")]
    with tempfile.TemporaryDirectory() as scratch:
        if args.export_dir is None:
            version_dir = _build_export(args.keep_export or Path(scratch), args.train_steps)
            print(f"Exported to {version_dir}")
        else:
            version_dir = _version_dir(args.export_dir.resolve())
        base = Path(scratch) / "base"
        base.mkdir()
        (base / "1").symlink_to(version_dir, target_is_directory=True)
        batching = args.batching_parameters
        if batching is None:
            batching = Path(scratch) / "batching_parameters.txt"
            batching.write_text(BATCHING_PARAMETERS)

        bundle, in_process_call = _in_process(version_dir, args.signature)
        ports = {"gRPC": free_port(), "gRPC + batching": free_port()}
        servers = [
            _start_server(base, args.model_name, ports["gRPC"], None),
            _start_server(base, args.model_name, ports["gRPC + batching"], batching),
        ]
        results = []
        try:
            for port in ports.values():
                with TranslationClient(f"127.0.0.1:{port}", model_name=args.model_name) as probe:
                    probe.wait_until_available(timeout=600)
            for concurrency in concurrencies:
                clients = {
                    path: [
                        TranslationClient(
                            f"127.0.0.1:{port}",
                            model_name=args.model_name,
                            signature_name=args.signature,
                        )
                        for _ in range(concurrency)
                    ]
                    for path, port in ports.items()
                }

                def remote(path, clients=clients):
                    def make_call(index: int):
                        client = clients[path][index]
                        sentence = SENTENCES[index % len(SENTENCES)]
                        return lambda: client.translate([sentence])

                    return make_call

                makers = {"in-process": in_process_call, **{p: remote(p) for p in ports}}
                rounds: dict[str, list[dict]] = {path: [] for path in PATHS}
                # Alternate the paths in short rounds and keep the medians, so a load
                # change on a shared machine hits all of them alike.
                for _ in range(args.repeats):
                    for path in PATHS:
                        rounds[path].append(
                            harness.closed_loop_load(makers[path], concurrency, args.duration)
                        )
                for path_clients in clients.values():
                    for client in path_clients:
                        client.close()
                row = {"concurrency": concurrency, **{p: _median(rounds[p]) for p in PATHS}}
                row["batching_speedup"] = (
                    row["gRPC + batching"]["requests_per_s"] / row["gRPC"]["requests_per_s"]
                )
                results.append(row)
                print(
                    f"concurrency {concurrency:3d} | "
                    + " | ".join(
                        f"{path} {row[path]['requests_per_s']:7.1f} req/s "
                        f"p50 {row[path]['p50_ms']:7.1f} p99 {row[path]['p99_ms']:7.1f} ms"
                        for path in PATHS
                    )
                    + f" | batching / unbatched {row['batching_speedup']:.2f}x",
                    flush=True,
                )
        finally:
            for server in servers:
                server.send_signal(signal.SIGTERM)
            for server in servers:
                server.wait(timeout=120)
            bundle.retire()
    print("\nbatch-1 requests, gRPC with batching / without:")
    for row in results:
        print(f"  concurrency {row['concurrency']:3d}: {row['batching_speedup']:.2f}x")
    if args.json is not None:
        harness.write_json(args.json, {"results": results}, machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
