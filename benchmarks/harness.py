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

Also shared: a small trained run for scripts that need one (`train_small_run`),
a run's test sentences and references (`test_sources`), the size of an export's
variables and the memory of a process that loads it (`variables_bytes`,
`session_load_rss`), and the FLOP counts and matmul peak that figures are set
against (`forward_matmuls`, `decoding_flops`, `matmul_peak_gflops`).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import json
import os
import platform
import re
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
    from keras_attention.runs.train_config import TrainConfig

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
    """The short hash of `repo`'s HEAD, with `+dirty` if tracked files other than
    `benchmarks/results/` have uncommitted changes; `"unknown"` without git or outside a
    repository."""
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
    # The results files the benchmarks write are not code: a second script run after a
    # first one wrote its results still runs the committed code.
    changes = git(
        "status", "--porcelain", "--untracked-files=no", "--", ".", ":!benchmarks/results"
    )
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
        # oneDNN's instruction-set cap (e.g. AVX2 on a CPU with AMX), when one is set.
        "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA") or None,
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
    if info.get("onednn_max_cpu_isa"):
        flags += f" (oneDNN capped at {info['onednn_max_cpu_isa']})"
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


def record_name(name: str) -> str:
    """An argparse type: a record name of lowercase letters, digits and underscores."""
    if not re.fullmatch(r"[a-z0-9_]+", name):
        raise argparse.ArgumentTypeError(
            f"a record name is lowercase letters, digits and underscores. Received: {name!r}"
        )
    return name


def write_record(path: str | os.PathLike, section: str, name: str, record: Mapping) -> None:
    """Sets `section.name` of the results file at `path` (made if missing) to `record`,
    keeping its other records."""
    path = Path(path)
    results = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    results.setdefault(section, {})[name] = record
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


# ---------------------------------------------------------------- runs, exports

SMALL_RUN_SIZES = {
    # embedding, encoder units, decoder units, source and target vocabulary
    "small": (64, 64, 128, 2000, 3000),
    "default": (256, 256, 512, 12000, 16000),  # TrainConfig's sizes, word vocabularies
}
"""The model sizes `train_small_run` trains."""


def add_run_arguments(parser, train_steps: int) -> None:
    """`--run-dir RUN`, or a small run trained first: `--train-steps` (default
    `train_steps`) and `--size` (a key of `SMALL_RUN_SIZES`), for `train_small_run`."""
    parser.add_argument("--run-dir", help="a trained run (default: train a small one)")
    parser.add_argument(
        "--train-steps", type=int, default=train_steps, help="steps of the default run"
    )
    parser.add_argument(
        "--size",
        choices=sorted(SMALL_RUN_SIZES),
        default="small",
        help="model size of the default run",
    )


def train_small_run(directory: Path, steps: int, size: str = "small") -> Path:
    """Trains a model on 20,000 pairs of the bundled corpus for `steps` steps (batch 64,
    float32, word vocabularies, `TrainConfig`'s other defaults) into `directory/run`;
    returns that run directory. `size` is a key of `SMALL_RUN_SIZES`."""
    from keras_attention.runs.train_config import TrainConfig
    from keras_attention.training.trainer import train

    if size not in SMALL_RUN_SIZES:
        raise ValueError(f"`size` must be one of {sorted(SMALL_RUN_SIZES)}. Received: {size!r}")
    embedding, encoder, decoder, source_size, target_size = SMALL_RUN_SIZES[size]
    config = TrainConfig(
        out=str(Path(directory) / "run"),
        tokenizer="words",
        embedding_dim=embedding,
        encoder_units=encoder,
        decoder_units=decoder,
        source_vocabulary_size=source_size,
        target_vocabulary_size=target_size,
        max_pairs=20000,
        epochs=1,
        steps_per_epoch=steps,
        batch_size=64,
        validation_fraction=0.02,
        test_fraction=0.05,
        precision="float32",
        time_budget_minutes=None,
    )
    with Stopwatch() as watch:
        train(config, verbose=0)
    print(f"Trained a {size} model for {steps} steps in {watch.seconds:.0f} s", flush=True)
    return Path(config.out)


def test_sources(
    run_dir: str | os.PathLike, max_sentences: int | None = None
) -> tuple[list[str], list[list[str]]]:
    """The distinct source sentences of a run's test split and all the references of
    each, in the order `keras-attention evaluate` scores them (the first
    `max_sentences` with a limit)."""
    from keras_attention.data import group_references, load_corpus
    from keras_attention.runs.run_directory import RunDirectory

    grouped = group_references(load_corpus(RunDirectory(run_dir).test_split).pairs)
    if max_sentences is not None:
        grouped = grouped[:max_sentences]
    return [source for source, _ in grouped], [refs for _, refs in grouped]


def add_race_arguments(parser, sentences: int, run_help: str = "a trained run") -> None:
    """`--run-dir`, `--batch-sizes`, `--sentences`, `--repeats`: the arguments of a
    benchmark that races ways of translating one run's test sources (`race`)."""
    parser.add_argument("--run-dir", required=True, help=run_help)
    parser.add_argument("--batch-sizes", default="1,8,64", help="comma-separated batch sizes")
    parser.add_argument("--sentences", type=int, default=sentences, help="test sentences per pass")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds (best is kept)")


def race_setup(args) -> tuple[list[int], object, list[str]]:
    """`(batch sizes, translator, test sources)` of `add_race_arguments`' `args`, after
    the machine header and a line naming the run's dtype policy."""
    batch_sizes = sorted({int(b) for b in args.batch_sizes.split(",")})
    quiet_tensorflow()
    from keras_attention.inference.trained_run import load_translator

    print_machine_header()
    translator = load_translator(args.run_dir)
    print(f"Run {args.run_dir}: policy {translator.model.dtype_policy.name}", flush=True)
    sources, _ = test_sources(args.run_dir)
    return batch_sizes, translator, sources


def source_batches(sources, batch_size: int, sentences: int) -> list:
    """The first `sentences` sources (a whole number of batches, at least one) in
    batches of `batch_size`, as string tensors."""
    import tensorflow as tf

    count = min(sentences, len(sources))
    count = max(batch_size, count - count % batch_size)
    return [tf.constant(sources[i : i + batch_size]) for i in range(0, count, batch_size)]


def same_rows(a, b):
    """The share of rows (token sequences, padded with 0) that two outputs agree on."""
    import numpy as np

    width = max(a.shape[1], b.shape[1])
    a, b = (np.pad(x, [(0, 0), (0, width - x.shape[1])]) for x in (a, b))
    return float(np.mean(np.all(a == b, axis=1)))


def race(functions: dict, batches: list, repeats: int) -> dict:
    """Best seconds of each function over all `batches`, the functions taking turns."""
    best = {name: float("inf") for name in functions}
    for _ in range(repeats):
        for name, function in functions.items():
            with Stopwatch() as watch:
                for batch in batches:
                    function(batch)
            best[name] = min(best[name], watch.seconds)
    return best


def variables_bytes(version: str | os.PathLike) -> int:
    """Bytes of the files in a SavedModel's `variables/` directory."""
    return sum(f.stat().st_size for f in (Path(version) / "variables").iterdir() if f.is_file())


def rss_mib(pid: int | str = "self") -> float:
    """A process's resident memory (`VmRSS` of Linux's `/proc/<pid>/status`), MiB."""
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024  # kB
    raise RuntimeError(f"No VmRSS in /proc/{pid}/status")


_SESSION_LOAD_CHILD = """
import json, sys
import numpy as np
import harness
harness.quiet_tensorflow()
from keras_attention.export import SavedModelSession
before = harness.rss_mib()
session = SavedModelSession(sys.argv[1])
loaded = harness.rss_mib()
signature = session.signature_defs[sys.argv[2]]
inputs = {name: np.array([sys.argv[3].encode()], dtype=object) for name in signature.inputs}
session.run(sys.argv[2], inputs)
print(json.dumps({"before_mib": before, "loaded_mib": loaded, "after_request_mib": harness.rss_mib()}))
"""


def session_load_rss(
    version: str | os.PathLike, signature: str = "serving_default", text: str = "Hello."
) -> dict[str, float]:
    """Resident memory of a fresh Python process that loads a SavedModel version as
    TF Serving does (`SavedModelSession`: tag `serve`, a TF1 Session) and runs one request.

    Returns MiB `before_mib` (TensorFlow, tf-text and the loader imported, nothing
    loaded), `loaded_mib` (after the load: variables restored, the init op run) and
    `after_request_mib` (after one batch-1 request of `signature` with `text` fed to
    its string inputs).
    """
    result = subprocess.run(
        [sys.executable, "-c", _SESSION_LOAD_CHILD, str(version), signature, text],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parent,
        env=child_environment(),
        timeout=600,
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"Loading {version} in a fresh process failed: {result.stderr.strip()[-2000:]}"
        )
    return json.loads(result.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ FLOPs, peak


def forward_matmuls(kind, sizes, vocabulary, batch, source_length, target_length):
    """The matmuls of one batch's forward pass (teacher-forced), from the layer shapes.

    Returns `(name, b, m, k, n, count)` rows: `count` matmuls of a `(b, m, k) x (b, k, n)`
    batch each (`b = 1` for a plain matmul). Work that does not depend on the
    recurrence is written as one matmul over all steps (the encoder's input
    projections too, which Keras runs per step), so the shapes are the most
    favourable the math allows. `kind`: `"tutorial"`, or a `Seq2Seq` attention type
    (`"luong"` with a dot-product score (`dot`, `cosine`: the same matmuls) and no input
    feeding, `"bahdanau"` with the maxout deep
    output), tied output for `Seq2Seq`. Elementwise ops, softmax and the optimizer are
    not matmuls and are not counted. `sizes`: `embedding_dim`, `encoder_units`,
    `decoder_units`, GRU cells (3 gates), one bidirectional encoder layer.
    """
    e, u, d = sizes["embedding_dim"], sizes["encoder_units"], sizes["decoder_units"]
    B, Ts, Tt = batch, source_length, target_length  # noqa: N806 (the papers' names)
    dv = 2 * u  # bidirectional annotations
    rows = [
        ("encoder input kernels (2 directions)", 1, B * Ts, e, 3 * u, 2),
        ("encoder recurrent kernels", 1, B, u, 3 * u, 2 * Ts),
    ]
    if kind == "luong":  # without input feeding: the attention runs after the loop
        rows += [
            ("decoder GRU input e, all steps", 1, B * Tt, e, 3 * d, 1),
            ("decoder GRU recurrent", 1, B, d, 3 * d, Tt),
            ("scores s . h_i, all steps", B, Tt, dv, Ts, 1),
            ("context, all steps", B, Tt, Ts, dv, 1),
            ("h~ = tanh(W_c [c; s])", 1, B * Tt, dv + d, d, 1),
            ("readout to the embedding size", 1, B * Tt, d, e, 1),
            ("vocabulary projection", 1, B * Tt, e, vocabulary, 1),
        ]
        return rows
    units = d  # attention units
    rows += [
        ("query W_q s", 1, B, d, units, Tt),
        ("scores v . tanh(...)", 1, B * Ts, units, 1, Tt),
        ("context", B, 1, Ts, dv, Tt),
        ("decoder GRU input [e; c]", 1, B, e + dv, 3 * d, Tt),
        ("decoder GRU recurrent", 1, B, d, 3 * d, Tt),
    ]
    if kind == "tutorial":
        return rows + [
            ("keys W_k h, every step", 1, B * Ts, dv, units, Tt),
            ("readout tanh(W [s; c; e])", 1, B, d + dv + e, e, Tt),
            ("vocabulary projection, every step", 1, B, e, vocabulary, Tt),
        ]
    return rows + [
        ("keys W_k h, once", 1, B * Ts, dv, units, 1),
        ("deep output (maxout)", 1, B * Tt, d + dv + e, 2 * e, 1),
        ("vocabulary projection (tied)", 1, B * Tt, e, vocabulary, 1),
    ]


def flop_count_kind(train_config: Mapping) -> tuple[str | None, str]:
    """Which `forward_matmuls` kind describes a run's model (its `config.json` as a
    dict): `("luong" | "bahdanau", "")`, or `(None, why not)` for a model it does not
    count (LSTM cells, stacked encoders, untied output, other Luong scores, input
    feeding, the conditional GRU, no attention)."""
    config = dict(train_config)
    problems = []
    if config.get("cell", "gru") != "gru":
        problems.append(f"cell={config.get('cell')!r}")
    if config.get("encoder_layers", 1) != 1:
        problems.append(f"encoder_layers={config.get('encoder_layers')!r}")
    if not config.get("tie_embeddings", True):
        problems.append("tie_embeddings=False")
    attention = config.get("attention")
    if attention == "luong":
        if config.get("score") not in ("dot", "scaled_dot", "cosine"):
            problems.append(f"score={config.get('score')!r}")
        if config.get("input_feeding"):
            problems.append("input_feeding=True")
    elif attention == "bahdanau":
        if config.get("conditional"):
            problems.append("conditional=True")
    else:
        problems.append(f"attention={attention!r}")
    if problems:
        return None, "the FLOP count does not cover " + ", ".join(problems)
    return attention, ""


def decoding_flops(
    train_config: Mapping, source_length: int, steps: int, hypotheses: int = 1
) -> float | None:
    """Matmul FLOPs of translating one sentence: the encoder once over `source_length`
    tokens, then `steps` decoder steps (the step that emits `[END]` included) for each
    of `hypotheses` (1 for greedy, the beam width for beam search), from
    `forward_matmuls` at batch 1 with the run's sizes. `None` for a model
    `flop_count_kind` does not describe."""
    kind, _ = flop_count_kind(train_config)
    if kind is None:
        return None
    sizes = {key: train_config[key] for key in ("embedding_dim", "encoder_units", "decoder_units")}
    rows = forward_matmuls(
        kind, sizes, train_config["target_vocabulary_size"], 1, source_length, steps
    )
    total = 0.0
    for name, b, m, k, n, count in rows:
        once = name.startswith(("encoder", "keys"))  # per sentence, not per hypothesis
        total += 2 * b * m * k * n * count * (1 if once else hypotheses)
    return total


def matmul_peak_gflops(dtype, size: int = 2048, repeats: int = 10) -> float:
    """Best GFLOP/s of a `size x size` matmul in `dtype` (this machine, now)."""
    import tensorflow as tf

    a = tf.random.normal((size, size), dtype=tf.float32)
    a = tf.cast(a, dtype)
    matmul = tf.function(lambda x: tf.matmul(x, x))
    best = min(time_calls(lambda: matmul(a).numpy(), repeats))
    return 2 * size**3 / best / 1e9
