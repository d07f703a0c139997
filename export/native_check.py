"""`check-export --native`: the export on TensorFlow's C++ loader, in a process without Python TF.

`run_native(path, requests)` starts `python -m keras_attention.export.native_session` (which
imports only the standard library and NumPy), hands it the wheel's
`libtensorflow_cc.so.2`, tf-text's op libraries and the requests as JSON,
and returns what `TF_LoadSessionFromSavedModel` + `TF_SessionRun` answered.
`compare_outputs` holds those answers against the Python Session path's.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

import keras_attention
from keras_attention.export.native_session import decode_tensor, encode_tensor

LIBRARY = "libtensorflow_cc.so.2"
# float outputs (score, attention) may differ in the last bits between two runs of a kernel;
# strings and integers (translation, tokens, length) must be identical.
FLOAT_RTOL, FLOAT_ATOL = 1e-5, 1e-6


class NativeCheckError(RuntimeError):
    """The native process could not load or run the export."""


def _package_dir(name: str) -> Path:
    # find_spec locates a package without running its __init__ (no TensorFlow import here).
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise NativeCheckError(f"The {name!r} package is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def native_libraries() -> tuple[Path, list[Path]]:
    """The wheel's `libtensorflow_cc.so.2` and tf-text's op libraries (`python/ops/_*.so`).

    Raises:
        NativeCheckError: tensorflow or tensorflow-text is not installed, or
            the library is not in the wheel.
    """
    library = _package_dir("tensorflow") / LIBRARY
    if not library.is_file():
        raise NativeCheckError(f"{library} is missing: this tensorflow wheel has no C API")
    op_libraries = sorted((_package_dir("tensorflow_text") / "python" / "ops").glob("_*.so"))
    return library, op_libraries


def run_native(
    path: str | os.PathLike,
    requests: Sequence[tuple[Mapping[str, np.ndarray], Sequence[str]]],
    *,
    timeout: float = 600,
) -> list[list[np.ndarray]]:
    """Loads `path` with `TF_LoadSessionFromSavedModel` in a subprocess and runs `requests`.

    Args:
        path: the version directory.
        requests: `(feeds by tensor name, fetch tensor names)` per request.
        timeout: seconds for the whole subprocess.

    Returns:
        The fetched arrays of each request.

    Raises:
        NativeCheckError: the load or a run failed (TensorFlow's message), the
            process crashed, or it imported Python TensorFlow.
    """
    library, op_libraries = native_libraries()
    job = {
        "library": str(library),
        "op_libraries": [str(p) for p in op_libraries],
        "export_dir": str(Path(path).resolve()),
        "requests": [
            {"feeds": {k: encode_tensor(v) for k, v in feeds.items()}, "fetches": list(fetches)}
            for feeds, fetches in requests
        ],
    }
    # The folder that holds the `keras_attention` package the caller imported, so the
    # child finds the same one (in an installed package: site-packages).
    root = Path(keras_attention.__file__).resolve().parents[1]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    try:
        process = subprocess.run(
            [sys.executable, "-m", "keras_attention.export.native_session"],
            input=json.dumps(job),
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired as error:
        raise NativeCheckError(f"The native run took more than {timeout} s") from error
    if process.returncode != 0:
        raise NativeCheckError(
            f"The native process exited with status {process.returncode}: "
            f"{process.stderr.strip()[-2000:]}"
        )
    answer = json.loads(process.stdout)
    if answer.get("python_tensorflow_imported"):
        raise NativeCheckError("The native process imported Python TensorFlow")
    if "error" in answer:
        raise NativeCheckError(answer["error"])
    return [[decode_tensor(t) for t in outputs] for outputs in answer["outputs"]]


def compare_outputs(
    expected: Mapping[str, np.ndarray], actual: Mapping[str, np.ndarray]
) -> tuple[list[str], float]:
    """Differences between two runs' outputs by alias: strings and ints exact, floats close.

    Returns:
        `(problems, largest absolute difference between finite floats)`.
    """
    problems, largest = [], 0.0
    for alias in sorted(expected):
        want, got = np.asarray(expected[alias]), np.asarray(actual.get(alias))
        if got.shape != want.shape or got.dtype != want.dtype:
            problems.append(
                f"{alias!r} is {got.dtype} {list(got.shape)}, the Session path's "
                f"{want.dtype} {list(want.shape)}"
            )
        elif want.dtype.kind == "f":
            finite = np.isfinite(want) & np.isfinite(got)  # -inf scores of unused rows
            if finite.any():
                largest = max(largest, float(np.max(np.abs(want[finite] - got[finite]))))
            if not np.allclose(got, want, rtol=FLOAT_RTOL, atol=FLOAT_ATOL, equal_nan=True):
                problems.append(f"{alias!r} differs from the Session path's")
        elif not np.array_equal(got, want):
            problems.append(f"{alias!r} differs from the Session path's")
    return problems, largest
