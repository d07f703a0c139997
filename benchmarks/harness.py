"""What the benchmark scripts share: quiet TensorFlow, timers, the machine header, JSON.

A script quiets TensorFlow before anything imports it, and prints the header
first thing in `main`, so that figures copied from its output carry their
source (date, commit, command, CPU, library versions):

    import harness

    harness.quiet_tensorflow()

    import tensorflow as tf  # noqa: E402

    def main(argv=None):
        args = parse_args(argv)
        harness.print_machine_header()

`write_json(path, payload)` writes a result file with the same record under
`"machine"`. The scripts import this module as `harness`: run as
`python benchmarks/<script>.py`, their folder is the first entry of `sys.path`.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path

from keras_attention import tensorflow_logging

REPO = Path(__file__).resolve().parents[1]
"""The repository root: its git commit is the benchmarks' source."""

CPUINFO = Path("/proc/cpuinfo")

# The CPU features that decide how fast float32 and bfloat16 matmuls run (oneDNN
# picks its kernels by them); reported in this order, upper-case as in Intel's docs.
RELEVANT_CPU_FLAGS = (
    "avx2",
    "fma",
    "avx512f",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
)


def quiet_tensorflow() -> None:
    """Keeps TensorFlow's notices out of the output and imports it.

    `keras_attention.tensorflow_logging`'s `configure` and `import_tensorflow`:
    left alone with `KERAS_ATTENTION_VERBOSE=1` or a `TF_CPP_MIN_LOG_LEVEL` of the
    user's. Call before anything imports TensorFlow.
    """
    verbose = tensorflow_logging.verbose_from_environment()
    tensorflow_logging.configure(verbose)
    tensorflow_logging.import_tensorflow(verbose)


def seq2seq_arguments(**settings) -> dict:
    """`Seq2Seq` keyword arguments from `TrainConfig`-style settings (`attention`,
    `score`, `normalize`, sizes, `precision`, ...), through the one description the
    trainer uses (`TrainConfig.model_arguments()`); other `Seq2Seq` arguments (such as
    `deep_output`) pass through. Precision float32 and no dropout unless given."""
    from keras_attention.training.train_config import TrainConfig

    fields = {field.name for field in dataclasses.fields(TrainConfig)}
    known = {key: value for key, value in settings.items() if key in fields}
    config = TrainConfig(**{"precision": "float32", "dropout": 0.0, **known})
    others = {key: value for key, value in settings.items() if key not in fields}
    return {**config.model_arguments(), **others}


def child_environment(**overrides: str) -> dict[str, str]:
    """This process's environment for a child Python process: this checkout first on
    `PYTHONPATH`, TensorFlow's C++ errors kept (`TF_CPP_MIN_LOG_LEVEL=2`: a child's
    output is read when it fails), `overrides` set."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", **overrides)
    env["PYTHONPATH"] = os.pathsep.join(
        path for path in (str(REPO), env.get("PYTHONPATH", "")) if path
    )
    return env


# ---------------------------------------------------------------------- timing


class Stopwatch:
    """Seconds since it was made, or until its `with` block ended.

    `with Stopwatch() as watch: train(config)`, then `watch.seconds`; made without
    `with`, `seconds` is the time so far.
    """

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.stopped: float | None = None

    def __enter__(self) -> Stopwatch:
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stopped = time.perf_counter()

    @property
    def seconds(self) -> float:
        end = time.perf_counter() if self.stopped is None else self.stopped
        return end - self.started


def time_calls(fn: Callable[[], object], repeats: int, warmup: int = 1) -> list[float]:
    """Seconds of each of `repeats` calls of `fn()`, after `warmup` untimed calls
    (tracing, first allocations). `fn` must finish its work before it returns
    (call `.numpy()` on what it computes)."""
    for _ in range(warmup):
        fn()
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - started)
    return seconds


def closed_loop_load(
    make_call: Callable[[int], Callable[[], object]],
    concurrency: int,
    duration: float,
    warmup: int = 2,
) -> dict:
    """`concurrency` threads each call `make_call(i)()` back to back for `duration` s (after
    `warmup` untimed calls each, all starting together); returns the number of requests,
    requests/s and the p50/p99 latency in ms. A call that raises fails the run."""
    import threading

    import numpy as np

    latencies: list[list[float]] = [[] for _ in range(concurrency)]
    errors: list[BaseException] = []
    start_barrier = threading.Barrier(concurrency + 1)
    stop = threading.Event()

    def worker(index: int) -> None:
        call = make_call(index)
        for _ in range(warmup):  # warm the path (callables, connections)
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
    if errors:
        raise RuntimeError(f"{len(errors)} requests failed; first: {errors[0]!r}")
    flat = np.array([x for per_thread in latencies for x in per_thread])
    return {
        "requests": int(flat.size),
        "requests_per_s": flat.size / elapsed,
        "p50_ms": float(np.percentile(flat, 50) * 1e3),
        "p99_ms": float(np.percentile(flat, 99) * 1e3),
    }


def fit_step_seconds(model, data, steps: int) -> list[float]:
    """Wall-clock seconds of each of `steps` batches of one `model.fit` epoch on `data`
    (from the callback at the batch's start to the one at its end)."""
    import keras

    seconds = []

    class StepTimer(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            self.started = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            seconds.append(time.perf_counter() - self.started)

    model.fit(data, steps_per_epoch=steps, epochs=1, verbose=0, callbacks=[StepTimer()])
    return seconds


# --------------------------------------------------------------------- machine


def git_commit(repo: Path = REPO) -> str:
    """The short hash of `repo`'s HEAD, with `+dirty` if tracked files have uncommitted
    changes; `"unknown"` without git or outside a repository."""
    # No optional locks: `git status` must not take the index lock of a checkout
    # others commit in.
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")

    def git(*args: str) -> str | None:
        try:
            result = subprocess.run(
                ["git", "-C", str(repo), *args],
                capture_output=True,
                text=True,
                timeout=30,
                env=env,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return result.stdout.strip() if result.returncode == 0 else None

    commit = git("rev-parse", "--short", "HEAD")
    if not commit:
        return "unknown"
    changes = git("status", "--porcelain", "--untracked-files=no")
    return commit + ("+dirty" if changes else "")


def cpu_description(cpuinfo: Path = CPUINFO) -> tuple[str, list[str]]:
    """The CPU's model name and which of `RELEVANT_CPU_FLAGS` it has (upper-case), from
    Linux's `/proc/cpuinfo`; elsewhere `platform`'s processor name and no flags."""
    fields: dict[str, str] = {}
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        if not line.strip():
            if fields:  # the first processor's block is enough
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    model = fields.get("model name") or platform.processor() or platform.machine() or "unknown"
    present = set(fields.get("flags", "").split())
    return model, [flag.upper() for flag in RELEVANT_CPU_FLAGS if flag in present]


def _memory_gib() -> float | None:
    """Total memory, from Linux's `/proc/meminfo` (`None` elsewhere)."""
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)  # kB -> GiB
    except (OSError, ValueError, IndexError):
        pass
    return None


def _version(module: str, *distributions: str) -> str:
    """The version of `module` if it is imported, else of the first installed of
    `distributions` (without importing it)."""
    if module in sys.modules:
        version = getattr(sys.modules[module], "__version__", None)
        if version:
            return str(version)
    for distribution in distributions:
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "not installed"


def machine_info(repo: Path = REPO, cpuinfo: Path = CPUINFO) -> dict:
    """When, from which commit and command, and on what a benchmark runs."""
    cpu, flags = cpu_description(cpuinfo)
    return {
        "date": datetime.now().astimezone().isoformat(timespec="seconds"),
        "commit": git_commit(repo),
        "command": shlex.join(["python", *sys.argv]),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "cpu_flags": flags,
        "memory_gib": _memory_gib(),
        "platform": platform.platform(terse=True),
        "python": platform.python_version(),
        "tensorflow": _version("tensorflow", "tensorflow", "tensorflow-cpu", "tf-nightly"),
        "keras": _version("keras", "keras", "keras-nightly"),
    }


def machine_header(info: Mapping | None = None) -> str:
    """Two lines for the top of a benchmark's output: date, commit and command; the
    machine and library versions. `info` defaults to `machine_info()`."""
    info = machine_info() if info is None else info
    memory = f", {info['memory_gib']:g} GiB" if info.get("memory_gib") else ""
    flags = " ".join(info["cpu_flags"]) or "no AVX2, AVX-512 or AMX"
    return (
        f"{info['date']}, commit {info['commit']}: {info['command']}\n"
        f"{info['cpu']}, {info['cores']} cores{memory}, {flags}; {info['platform']}, "
        f"Python {info['python']}, TensorFlow {info['tensorflow']}, Keras {info['keras']}"
    )


def print_machine_header() -> dict:
    """Prints `machine_header()` and returns the `machine_info()` it shows."""
    info = machine_info()
    print(machine_header(info), flush=True)
    return info


def write_json(path: str | os.PathLike, payload: Mapping, info: Mapping | None = None) -> None:
    """Writes `payload` as indented JSON with `"machine": info` added (default:
    `machine_info()` now)."""
    if not isinstance(payload, Mapping):
        raise TypeError(f"write_json takes a mapping. Received: {type(payload).__name__}")
    if "machine" in payload:
        raise ValueError(
            f"The payload has its own 'machine' field. Received: {payload['machine']!r}"
        )
    record = {**payload, "machine": dict(machine_info() if info is None else info)}
    Path(path).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
