"""What an install takes on disk, and what importing the client costs.

    python benchmarks/install_footprint.py [--client-venv DIR] [--repeats 5]
        [--out benchmarks/results/install_footprint.json]

On disk: the installed files of each distribution (its RECORD) summed over the
distribution and everything it requires (its `Requires-Dist` without extras,
followed through the environment this runs in): `keras-attention-seq2seq` (the full
package, the client included) and `keras-attention-client`, with TensorFlow and
tensorflow-text on their own. `--client-venv DIR` also measures a virtual environment
that holds only the client (`python -m venv DIR && DIR/bin/pip install ./serving/client`)
as a whole, pip included.

Import: `from keras_attention_client import TranslationClient` in a fresh interpreter
(the client venv's when given), seconds and modules loaded, and whether TensorFlow was
imported; then TF Serving's own Python API (`from tensorflow_serving.apis import
predict_pb2`, which imports TensorFlow) when it is installed. Medians of `--repeats`.

The Install and Client pages and the README render these figures.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import harness

FULL = "keras-attention-seq2seq"
CLIENT = "keras-attention-client"

IMPORT_SNIPPET = """
import sys, time
n = len(sys.modules)
t = time.perf_counter()
{statement}
print(time.perf_counter() - t, len(sys.modules) - n, 'tensorflow' in sys.modules)
"""
CLIENT_IMPORT = "from keras_attention_client import TranslationClient"
SERVING_IMPORT = "from tensorflow_serving.apis import predict_pb2"


def _name(requirement: str) -> str | None:
    """The distribution a `Requires-Dist` line names, or None when it needs an extra."""
    if "extra ==" in requirement.replace("extra==", "extra =="):
        return None
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return match[1] if match else None


def closure(name: str) -> list[str]:
    """`name` and every distribution it requires, installed here, recursively."""
    seen: dict[str, None] = {}
    todo = [name]
    while todo:
        current = todo.pop()
        try:
            dist = importlib.metadata.distribution(current)
        except importlib.metadata.PackageNotFoundError:
            continue
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in seen:
            continue
        seen[key] = None
        for requirement in dist.requires or []:
            required = _name(requirement)
            if required:
                todo.append(required)
    return list(seen)


def installed_bytes(name: str) -> int:
    """The bytes of the files a distribution installed (its RECORD, as found on disk)."""
    dist = importlib.metadata.distribution(name)
    total = 0
    for file in dist.files or []:
        path = Path(dist.locate_file(file))
        if path.is_file():
            total += path.stat().st_size
    return total


def tree_bytes(root: Path) -> int:
    """The bytes of every file under `root`."""
    return sum(
        (Path(folder) / file).stat().st_size
        for folder, _, files in os.walk(root)
        for file in files
        if not (Path(folder) / file).is_symlink()
    )


def import_cost(python: str, statement: str, repeats: int) -> dict:
    """Median seconds and modules of `statement` in a fresh `python`."""
    times, modules, tensorflow = [], [], False
    for _ in range(repeats):
        output = subprocess.run(
            [python, "-c", IMPORT_SNIPPET.format(statement=statement)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        times.append(float(output[0]))
        modules.append(int(output[1]))
        tensorflow = tensorflow or output[2] == "True"
    return {
        "statement": statement,
        "seconds": statistics.median(times),
        "modules": int(statistics.median(modules)),
        "imports_tensorflow": tensorflow,
        "repeats": repeats,
    }


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client-venv", type=Path, help="a venv holding only the client")
    parser.add_argument("--repeats", type=int, default=5, help="imports timed (default: 5)")
    parser.add_argument(
        "--out",
        default=str(harness.REPO / "benchmarks/results/install_footprint.json"),
        help="the results file (default: benchmarks/results/install_footprint.json)",
    )
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    harness.print_machine_header()
    on_disk = {}
    for name in (FULL, CLIENT):
        names = closure(name)
        on_disk[name] = {
            "distributions": sorted(names),
            "bytes": sum(installed_bytes(n) for n in names),
        }
    for name in ("tensorflow", "tensorflow-text"):
        on_disk[name] = {"distributions": [name], "bytes": installed_bytes(name)}
    result: dict = {"on_disk": on_disk, "precision": "not applicable (installs and imports)"}
    python = sys.executable
    if args.client_venv:
        result["client_venv"] = {"bytes": tree_bytes(args.client_venv)}
        python = str(args.client_venv / "bin" / "python")
    result["import"] = {"client": import_cost(python, CLIENT_IMPORT, args.repeats)}
    try:
        importlib.metadata.distribution("tensorflow-serving-api")
    except importlib.metadata.PackageNotFoundError:
        pass
    else:
        result["import"]["tensorflow_serving"] = import_cost(
            sys.executable, SERVING_IMPORT, args.repeats
        )
    print(json.dumps(result, indent=2))
    harness.write_json(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
