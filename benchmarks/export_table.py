"""Every export variant of one trained run in one table, with the tutorial design beside it.

One trained run (`--run-dir`; without it a small model is trained first, as
`export_decode.py` does) is exported once per variant, each written by the
code of `keras-attention export` (`keras_attention.export.cli.run_export`,
the variant's flags plus `--no-check`), and loaded as `tensorflow_model_server`
loads it: tag `serve` in a `tf.compat.v1.Session`, run through the
SignatureDef's tensor names (`SavedModelSession`). The variants:

- `--weights` float32, bfloat16 and int8 (the choices of the CLI's
  `--weights` but `auto`, which resolves to one of them; `export/weight_storage.py`), each at `--precision float32` and
  at the policy `--precision auto` picks on this machine (`mixed_bfloat16`
  on a CPU with AVX512_BF16 or AMX; those rows are left out where it picks
  float32), over the whole target vocabulary (`--shortlist none`);
- each of these again with a vocabulary shortlist (`--shortlist K`, K from
  this script's `--shortlist`, default `AUTO_K` = 100, and the CLI's default
  `--shortlist-frequent`);
- with `--xla`, each of these again with `--jit-compile`.

The script prints which rows it left out and why: no mixed precision where
`auto` picks float32, no XLA without `--xla`, and any flags the CLI refuses
(it refuses `--shortlist K` with `--jit-compile`). Then
the default export: what `keras-attention export RUN --export-dir BASE`
writes with no flag, its settings read from the CLI's parser (not assumed).
Where they equal a variant's (`auto` resolved: the precision on this
machine, the shortlist for the run's target vocabulary), that row is the
default (marked `*`); otherwise the default export is a row of its own.

Then two rows for the design most users copy: the exported `Translator` of
TensorFlow's "Neural machine translation with attention" tutorial
(https://www.tensorflow.org/text/tutorials/nmt_with_attention, sections
"Export" and "[Optional] Use a dynamic loop"). A `tf.Module` whose
`translate` is a `tf.function` over a `[None]` string batch: it encodes,
calls the decoder one step at a time in a Python `for` loop
(`get_next_token`: argmax, `done` flags, padding once a sentence has
ended), collects the tokens and joins them to strings; saved with
`tf.saved_model.save(module, path, signatures={"serving_default":
module.translate})`. Greedy only, as in the tutorial. The tutorial writes the
loop two ways, one row each:

- `tutorial (dynamic loop)`: `for t in tf.range(max_length)`, tokens in a
  `tf.TensorArray`, `if tf.reduce_all(done): break`. Autograph turns the loop
  into a `tf.while_loop` whose condition includes the `break`, so it stops
  once every sentence has ended. The tutorial's faster version; the summary
  line's comparison.
- `tutorial (unrolled)`: `for _ in range(max_length)` with a Python list and
  `if tf.executing_eagerly() and tf.reduce_all(done): break`, the tutorial's
  first `translate`. In a graph the condition is always false and the loop
  is unrolled: every call runs `max_length` steps.

Both are built from the same trained model's pieces, in float32 (the
tutorial has no mixed precision): `Translator.encode_source` (our text
processing), `model.initial_decode_state` (the encoder), `Translator.next_logits`
(one decoder step), `target_vectorizer.decode`; `max_length` is the run's
`max_output_length`, as in our exports. With Keras 3 the tutorial's export as
written (the module holds the Keras model) loads on the Session path but fails
at its first run ("Could not find variable ..."); the module here holds the
model's `tf.Variable`s instead (`[v.value for v in model.variables]`) and the
vectorizers (their lookup tables), which runs. The script reports the share of
the tutorial's translations identical to the float32 export's greedy ones.

Columns (every row decodes the same test sentences in this one process, the
rows taking turns over `--repeats` rounds, best pass kept):

- `vars MB`: bytes of the version's `variables/` directory.
- `+RSS MiB`: resident memory a fresh Python process gains by loading the
  version (`SavedModelSession`): RSS after the load minus RSS before it, with
  TensorFlow, tf-text and the loader already imported (the JSON file also has
  both, and RSS after one request).
- `gr bN`, `bm bN`: target tokens per second of
  `serving_default` (greedy) and `beam_search` (the export's beam width, 4 by
  default) at batch N: the tokens of the row's own translations (`[END]` not
  counted) over the best pass's seconds.
- `p50 ms`, `p99 ms`: latency of one greedy request of one sentence (batch 1),
  over every batch-1 pass.
- `BLEU gr`, `BLEU bm`: sacreBLEU (all references) of greedy and beam
  translations of the run's test split (the first `--max-sentences` distinct
  sources, as `keras-attention evaluate --max-sentences` takes them).
- `GFLOP/s`, `% peak`: the matmul FLOPs of the row's greedy translations at
  the largest batch (`harness.decoding_flops`: the encoder once, one decoder
  step per token and one for `[END]`; the steps a batch runs for sentences
  that have already ended are not counted) per second, and their share of
  this machine's matmul peak in the row's compute dtype (a 2048x2048 matmul,
  the best of the measurements before and after every round).

The last line printed is

    default export: A.AAx float32 at batch 64, B.BBx at batch 1, BLEU delta C.CC, int8 D.DDx smaller, E.EEx tutorial

A: greedy tokens/s of the default export over the baseline's at the largest
batch size (64 by default; the line names the batch); B: batch-1 greedy p50
latency of the baseline over the default export's; C: beam BLEU of the
default export minus the float32 export's; D: the float32 export's
`variables/` bytes over the int8 export's (both `--precision float32`); E:
greedy tokens/s of the default export over the tutorial design's (dynamic
loop) at the largest batch size. "float32 export" means `--precision float32
--weights float32`; the baseline (row `float32 / float32, every row`) is the
float32 export as exports decoded before 2026-12-02, computing every row of a
batch until its longest sentence ends (`drop_finished=False`, see
`benchmarks/finished_rows.py`). The line before it gives the default export
against the tutorial design at batch 1 (greedy tokens/s, and p50 latency), and
the one before that A and B against today's float32 export.

    python benchmarks/export_table.py --run-dir RUN [--xla] [--out table.json]
    python benchmarks/export_table.py --max-sentences 50 --batch-sizes 1,8,16 --repeats 1
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import io
import tempfile
import time
from pathlib import Path

import harness

harness.quiet_tensorflow()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_attention.auto import AUTO as AUTO_WEIGHTS  # noqa: E402
from keras_attention.evaluation.bleu import score_translations  # noqa: E402
from keras_attention.export import SavedModelSession  # noqa: E402
from keras_attention.export import cli as export_cli  # noqa: E402
from keras_attention.export.export_precision import with_precision  # noqa: E402
from keras_attention.export.weight_storage import resolve_weights  # noqa: E402
from keras_attention.inference.trained_run import load_translator  # noqa: E402
from keras_attention.inference.translator import Translator  # noqa: E402
from keras_attention.precision import resolve_precision  # noqa: E402
from keras_attention.runs.train_config import TrainConfig  # noqa: E402
from keras_attention.shortlist.defaults import AUTO_K, auto_shortlist_size  # noqa: E402

TUTORIAL_URL = "https://www.tensorflow.org/text/tutorials/nmt_with_attention"

GREEDY, BEAM = "serving_default", "beam_search"


COMPUTE_DTYPES = {"float32": "float32", "mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}
"""The matmul dtype of each precision policy (whose peak a row is set against)."""


# ------------------------------------------------------------------ the design most users copy


class TutorialTranslator(tf.Module):
    """The tutorial's exported `Translator` (see the module docstring), greedy.

    Args:
        translator: a float32 `Translator` whose pieces it runs.
        dynamic: `True` for the `tf.range` loop with a `tf.TensorArray` (stops when
            every sentence has ended); `False` for the unrolled Python loop (always
            `max_output_length` steps in a graph).
    """

    def __init__(self, translator, dynamic: bool = True):
        super().__init__()
        self.translator = translator  # a plain object: what it holds is tracked below
        self.source_vectorizer = translator.source_vectorizer  # and their lookup tables
        self.target_vectorizer = translator.target_vectorizer
        # The tutorial's module holds the Keras model. With Keras 3 the variables of such
        # a SavedModel do not restore on the Session path ("Could not find variable ..."
        # at the first run); holding the model's tf.Variables themselves works (holding
        # both would store every weight twice).
        self.model_variables = [variable.value for variable in translator.model.variables]
        self.dynamic = dynamic
        self.max_length = translator.max_output_length
        target = translator.target_vectorizer
        self.start_id, self.end_id, self.pad_id = target.start_id, target.end_id, target.pad_id

    def get_next_token(self, step, next_token, done, state):
        """One decoder step: the argmax token, `done` updated, padding once ended."""
        logits, state, _ = self.translator.next_logits(step, next_token, state)
        next_token = tf.argmax(logits, axis=-1, output_type=tf.int32)
        done = done | (next_token == self.end_id)
        next_token = tf.where(done, tf.constant(self.pad_id, tf.int32), next_token)
        return next_token, done, state

    def token_ids(self, texts):
        """Token ids `(batch_size, steps)`, padding after `[END]` (which is padded too)."""
        source_ids, _ = self.translator.encode_source(texts)
        state = self.translator.model.initial_decode_state(source_ids)
        batch_size = tf.shape(texts)[0]
        next_token = tf.fill([batch_size], tf.constant(self.start_id, tf.int32))
        done = tf.zeros([batch_size], tf.bool)
        if self.dynamic:
            tokens = tf.TensorArray(tf.int32, size=1, dynamic_size=True)
            for t in tf.range(self.max_length):
                next_token, done, state = self.get_next_token(t, next_token, done, state)
                tokens = tokens.write(t, next_token)
                if tf.reduce_all(done):
                    break
            return tf.transpose(tokens.stack())
        tokens = []
        for t in range(self.max_length):
            next_token, done, state = self.get_next_token(t, next_token, done, state)
            tokens.append(next_token)
            if tf.executing_eagerly() and tf.reduce_all(done):
                break
        return tf.stack(tokens, axis=1)

    @tf.function(input_signature=[tf.TensorSpec(dtype=tf.string, shape=[None])])
    def translate(self, inputs):
        return self.translator.target_vectorizer.decode(self.token_ids(inputs))


def save_tutorial(translator, directory: Path, dynamic: bool) -> tuple[Path, object]:
    """Saves the tutorial design as `directory/1`; returns the path and an in-process
    function that gives its tokens per sentence (for counting, never timed)."""
    module = TutorialTranslator(translator, dynamic=dynamic)
    path = directory / "1"
    tf.saved_model.save(module, str(path), signatures={GREEDY: module.translate})
    lengths = tf.function(
        lambda texts: tf.reduce_sum(
            tf.cast(tf.not_equal(module.token_ids(texts), module.pad_id), tf.int32), axis=1
        ),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    return path, lengths


# ------------------------------------------------------------------------------ the variants


def export_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="keras-attention export")
    export_cli.add_export_arguments(parser)
    return parser


def cli_default(parser: argparse.ArgumentParser, flag: str):
    action = parser._option_string_actions.get(flag)  # noqa: SLF001 - argparse has no getter
    return None if action is None else action.default


def cli_choices(parser: argparse.ArgumentParser, flag: str) -> list[str]:
    action = parser._option_string_actions.get(flag)  # noqa: SLF001
    return list(action.choices) if action is not None and action.choices else []


def export_settings(parser: argparse.ArgumentParser, run_dir: Path, flags: list[str]) -> dict:
    """What `keras-attention export RUN --export-dir BASE FLAGS` is asked to do, with
    `--precision` resolved on this machine, `--weights` for that precision and
    `--shortlist` for the run's target vocabulary (so `auto` equals what each picks)."""
    settings = vars(parser.parse_args([str(run_dir), "--export-dir", "BASE", *flags]))
    settings.pop("check", None)
    if settings.get("precision") is not None:
        settings["precision"] = resolve_precision(settings["precision"]).policy
    if settings.get("weights") == AUTO_WEIGHTS:
        compute_dtype = COMPUTE_DTYPES.get(settings.get("precision"), "float32")
        settings["weights"] = resolve_weights(AUTO_WEIGHTS, compute_dtype)
    if settings.get("shortlist") == "auto":
        settings["shortlist"] = auto_shortlist_size(
            run_translator(run_dir).target_vectorizer.vocabulary_size,
            settings.get("jit_compile", False),
            compute_dtype=COMPUTE_DTYPES.get(settings.get("precision"), "float32"),
        )
    return settings


@functools.cache
def run_translator(run_dir: Path) -> Translator:
    """The run's `Translator`, loaded once for the script (its vocabulary size decides
    `--shortlist auto`; the tutorial rows are built from it)."""
    return load_translator(run_dir)


def variants(
    parser: argparse.ArgumentParser, xla: bool, shortlist: int | None
) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """`(row name, CLI flags)` per variant, float32 / float32 first, and a note per
    kind of row left out."""
    notes = []
    auto = resolve_precision("auto")
    precisions = ["float32"] + ([auto.policy] if auto.policy != "float32" else [])
    if auto.policy == "float32":
        notes.append(f"no mixed-precision rows: --precision auto picks {auto.describe()}")
    weights = [w for w in cli_choices(parser, "--weights") if w != AUTO_WEIGHTS]
    shortlists: list[int | None] = [None, shortlist or AUTO_K]
    jits = [False, True] if xla else [False]
    if not xla:
        notes.append("no XLA rows: run with --xla to add --jit-compile to every variant")
    rows = []
    for jit in jits:
        for size in shortlists:
            for precision in precisions:
                for weight in weights:
                    flags = ["--precision", precision, "--weights", weight]
                    name = f"{precision} / {weight}"
                    if jit:
                        flags.append("--jit-compile")
                        name += " + XLA"
                    if size is None:
                        flags += ["--shortlist", "none"]
                    else:
                        flags += ["--shortlist", str(size)]
                        name += f" + shortlist {size}"
                    rows.append((name, flags))
    return rows, notes


class ExportRefused(RuntimeError):
    """`keras-attention export` refused the flags (it exited with its error status)."""


def cli_export(parser: argparse.ArgumentParser, run_dir: Path, base: Path, flags: list[str]):
    """Exports as `keras-attention export RUN --export-dir BASE --no-check FLAGS` does;
    returns the new version's path. Raises `ExportRefused` with the CLI's message."""
    args = parser.parse_args([str(run_dir), "--export-dir", str(base), "--no-check", *flags])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = export_cli.run_export(args)
    if code != 0:
        raise ExportRefused((err.getvalue() or out.getvalue()).strip()[-1000:])
    return max((p for p in base.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))


# ---------------------------------------------------------------------------------- the rows


class Row:
    """One SavedModel version on the Session path, and what was measured of it."""

    def __init__(self, name: str, path: Path, signatures: tuple[str, ...], precision: str):
        self.name, self.path, self.signatures, self.precision = name, path, signatures, precision
        self.session = SavedModelSession(path)
        self.flags: list[str] | None = None
        self.default = False
        self.baseline = False  # the float32 export as exports decoded before drop_finished
        self.count_tokens = None  # texts -> lengths, for a row without a `length` output
        defs = self.session.signature_defs
        self.input_key = {s: next(iter(defs[s].inputs)) for s in signatures}
        self.output_key = {
            s: "translation" if "translation" in defs[s].outputs else next(iter(defs[s].outputs))
            for s in signatures
        }
        self.error: str | None = None
        self.rss: dict = {}
        self.best: dict[tuple[str, int], float] = {}
        self.latencies: list[float] = []
        self.lengths: dict[str, list[int]] = {}
        self.bleu: dict[str, float] = {}
        self.bleu_outputs: dict[str, list[str]] = {}

    def run(self, signature: str, texts: list[str]) -> np.ndarray:
        batch = np.array([t.encode("utf-8") for t in texts], dtype=object)
        key = self.output_key[signature]
        return self.session.run(signature, {self.input_key[signature]: batch}, [key])[key]

    def token_lengths(self, signature: str, texts: list[str], batch_size: int) -> list[int]:
        lengths = []
        for i in range(0, len(texts), batch_size):
            batch = texts[i : i + batch_size]
            if self.count_tokens is not None:
                lengths += self.count_tokens(tf.constant(batch)).numpy().tolist()
                continue
            strings = np.array([t.encode("utf-8") for t in batch], dtype=object)
            outputs = self.session.run(signature, {self.input_key[signature]: strings}, ["length"])
            lengths += outputs["length"].tolist()
        return lengths

    def translate_all(self, signature: str, texts: list[str], batch_size: int) -> list[str]:
        """Translations in input order, the sentences batched by length (less padding)."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        results: list[str] = [""] * len(texts)
        for start in range(0, len(order), batch_size):
            indices = order[start : start + batch_size]
            outputs = self.run(signature, [texts[i] for i in indices])
            for index, output in zip(indices, outputs.tolist(), strict=True):
                results[index] = output.decode("utf-8")
        return results

    def one_pass(self, signature: str, texts: list[str], batch_size: int) -> list[float]:
        """Seconds of each request of one pass over `texts` in batches of `batch_size`."""
        seconds = []
        for i in range(0, len(texts), batch_size):
            batch = texts[i : i + batch_size]
            started = time.perf_counter()
            self.run(signature, batch)
            seconds.append(time.perf_counter() - started)
        return seconds


FLOAT32_FLAGS = ["--precision", "float32", "--weights", "float32", "--shortlist", "none"]
INT8_FLAGS = ["--precision", "float32", "--weights", "int8", "--shortlist", "none"]


def build_export_rows(
    cli: argparse.ArgumentParser,
    run_dir: Path,
    scratch: Path,
    wanted: list[tuple[str, list[str]]],
) -> tuple[list[Row], list[tuple[str, str]], list[str]]:
    """Exports and loads every variant, and the default export unless it is one of them.
    Returns the rows, `(name, error)` of those that failed, and a note per variant the
    CLI refused."""
    default_settings = export_settings(cli, run_dir, [])
    rows: list[Row] = []
    failed: list[tuple[str, str]] = []
    refused: list[str] = []
    candidates = list(wanted)
    if not any(export_settings(cli, run_dir, flags) == default_settings for _, flags in wanted):
        candidates.append(("default export (no flags)", []))
    for index, (name, flags) in enumerate(candidates):
        settings = export_settings(cli, run_dir, flags)
        try:
            with harness.Stopwatch() as watch:
                path = cli_export(cli, run_dir, scratch / f"export-{index}", flags)
                row = Row(name, path, (GREEDY, BEAM), settings["precision"])
        except ExportRefused as error:
            refused.append(f"{name}: `keras-attention export` refuses {' '.join(flags)}: {error}")
            continue
        except Exception as error:  # noqa: BLE001 - reported with the table
            failed.append((name, f"{type(error).__name__}: {error}"[:300]))
            continue
        row.flags = flags
        row.default = settings == default_settings
        rows.append(row)
        print(f"{name}: exported and loaded in {watch.seconds:.1f} s", flush=True)
    return rows, failed, refused


BASELINE = "float32 / float32, every row"


@contextlib.contextmanager
def every_row_to_the_end():
    """Within: `Translator.strategy` builds searches that compute every row to the
    end (`drop_finished=False`), as exports decoded before 2026-12-02."""
    original = Translator.strategy

    def strategy(self, *args, **kwargs):
        built = original(self, *args, **kwargs)
        if not built.drop_finished:
            return built
        return type(built).from_config({**built.get_config(), "drop_finished": False})

    Translator.strategy = strategy
    try:
        yield
    finally:
        Translator.strategy = original


def build_baseline_row(
    cli: argparse.ArgumentParser, run_dir: Path, scratch: Path
) -> tuple[list[Row], list[tuple[str, str]]]:
    """The summary's baseline: the float32 export, its searches computing every row
    to the end (`every_row_to_the_end`). Returns `([row], [])`, or `([], [(name,
    error)])` when it fails (the summary then compares with today's float32 export)."""
    try:
        with harness.Stopwatch() as watch, every_row_to_the_end():
            path = cli_export(cli, run_dir, scratch / "export-baseline", FLOAT32_FLAGS)
            row = Row(BASELINE, path, (GREEDY, BEAM), "float32")
    except Exception as error:  # noqa: BLE001 - reported with the table
        return [], [(BASELINE, f"{type(error).__name__}: {error}"[:300])]
    row.flags, row.baseline = FLOAT32_FLAGS, True
    print(f"{BASELINE}: exported and loaded in {watch.seconds:.1f} s", flush=True)
    return [row], []


def build_tutorial_rows(translator, scratch: Path) -> list[Row]:
    rows = []
    for name, dynamic in (("tutorial (dynamic loop)", True), ("tutorial (unrolled)", False)):
        directory = scratch / ("tutorial-dynamic" if dynamic else "tutorial-unrolled")
        with harness.Stopwatch() as watch:
            path, count_tokens = save_tutorial(translator, directory, dynamic)
            row = Row(name, path, (GREEDY,), "float32")
        row.count_tokens = count_tokens
        rows.append(row)
        print(f"{name}: saved and loaded in {watch.seconds:.1f} s", flush=True)
    return rows


def warm_up(rows: list[Row], timed: list[str], batch_sizes: list[int]) -> list[tuple[str, str]]:
    """Runs every shape once; returns `(name, error)` of the rows that fail (and marks them)."""
    failed = []
    for row in rows:
        try:
            for signature in row.signatures:
                for batch_size in batch_sizes:
                    row.run(signature, timed[:batch_size])
        except Exception as error:  # noqa: BLE001 - reported with the table
            row.error = f"{type(error).__name__}: {error}"[:300]
            failed.append((row.name, row.error))
    return failed


def time_rows(
    rows: list[Row], timed: list[str], batch_sizes: list[int], repeats: int, peaks: dict
) -> None:
    """`repeats` rounds, the rows taking turns (so that a change of the machine's speed
    falls on all of them); the best pass is kept, and every batch-1 greedy latency. The
    matmul peak is measured again after each round, the best kept."""
    for _ in range(repeats):
        for row in rows:
            for signature in row.signatures:
                for batch_size in batch_sizes:
                    seconds = row.one_pass(signature, timed, batch_size)
                    key = (signature, batch_size)
                    row.best[key] = min(row.best.get(key, float("inf")), sum(seconds))
                    if signature == GREEDY and batch_size == 1:
                        row.latencies += seconds
        for dtype in peaks:
            peaks[dtype] = max(peaks[dtype], harness.matmul_peak_gflops(dtype))


def row_figures(
    row: Row,
    batch_sizes: list[int],
    source_lengths: list[int],
    train_config: dict,
    max_output_length: int,
    beam_width: int,
    peaks: dict,
) -> dict:
    """Every figure of one row, as the JSON file records it."""
    names = {GREEDY: "greedy", BEAM: "beam"}
    figures: dict = {
        "name": row.name,
        "flags": row.flags,
        "default_export": row.default,
        "baseline": row.baseline,
        "precision": row.precision,
        "variables_bytes": harness.variables_bytes(row.path),
        "rss_mib": row.rss,
        "tokens": {names[s]: sum(row.lengths[s]) for s in row.signatures},
        "best_pass_seconds": {},
        "tokens_per_second": {},
        "gflops_per_second": {},
        "share_of_peak": {},
        "bleu": {names[s]: row.bleu[s] for s in row.signatures},
    }
    if "loaded_mib" in row.rss:
        figures["rss_load_mib"] = row.rss["loaded_mib"] - row.rss["before_mib"]
    peak = peaks[COMPUTE_DTYPES.get(row.precision, "float32")]
    for signature in row.signatures:
        hypotheses = 1 if signature == GREEDY else beam_width
        flops = [
            harness.decoding_flops(
                train_config, source, min(length + 1, max_output_length), hypotheses
            )
            for source, length in zip(source_lengths, row.lengths[signature], strict=True)
        ]
        total_flops = None if None in flops else sum(flops)
        for name in ("best_pass_seconds", "tokens_per_second", "gflops_per_second"):
            figures[name][names[signature]] = {}
        figures["share_of_peak"][names[signature]] = {}
        for batch_size in batch_sizes:
            seconds = row.best[(signature, batch_size)]
            gflops = None if total_flops is None else total_flops / seconds / 1e9
            figures["best_pass_seconds"][names[signature]][batch_size] = seconds
            figures["tokens_per_second"][names[signature]][batch_size] = (
                sum(row.lengths[signature]) / seconds
            )
            figures["gflops_per_second"][names[signature]][batch_size] = gflops
            figures["share_of_peak"][names[signature]][batch_size] = (
                None if gflops is None else gflops / peak
            )
    latencies = np.array(row.latencies) * 1e3
    figures["latency_ms"] = {
        "requests": int(latencies.size),
        "p50": float(np.percentile(latencies, 50)),
        "p99": float(np.percentile(latencies, 99)),
    }
    return figures


def fmt(value, spec: str, width: int) -> str:
    """`value` right-aligned in `width` columns, `-` for `None`."""
    return f"{'-':>{width}}" if value is None else f"{value:>{width}{spec}}"


def print_table(figures: list[dict], batch_sizes: list[int], beam_width: int) -> None:
    largest = batch_sizes[-1]
    columns = [f"gr b{b}" for b in batch_sizes] + [f"bm b{b}" for b in batch_sizes]
    print(
        f"\ntok/s: target tokens per second; gr = greedy (serving_default), bm = beam_search "
        f"(width {beam_width}); p50/p99: batch-1 greedy latency; GFLOP/s and % of peak: "
        f"greedy at batch {largest}; * = the default export"
    )
    header = (
        f"{'variant':<46}{'vars MB':>8}{'+RSS MiB':>9}"
        + "".join(f"{c:>9}" for c in columns)
        + f"{'p50 ms':>8}{'p99 ms':>8}{'BLEU gr':>8}{'BLEU bm':>8}{'GFLOP/s':>9}{'% peak':>8}"
    )
    print(header)
    for row in figures:
        speeds = row["tokens_per_second"]
        cells = "".join(fmt(speeds["greedy"].get(b), ".1f", 9) for b in batch_sizes)
        cells += "".join(fmt(speeds.get("beam", {}).get(b), ".1f", 9) for b in batch_sizes)
        share = row["share_of_peak"]["greedy"][largest]
        print(
            f"{('* ' if row['default_export'] else '  ') + row['name']:<46}"
            f"{row['variables_bytes'] / 1e6:>8.2f}"
            f"{fmt(row.get('rss_load_mib'), '.0f', 9)}{cells}"
            f"{row['latency_ms']['p50']:>8.1f}{row['latency_ms']['p99']:>8.1f}"
            f"{row['bleu']['greedy']:>8.2f}{fmt(row['bleu'].get('beam'), '.2f', 8)}"
            f"{fmt(row['gflops_per_second']['greedy'][largest], '.2f', 9)}"
            f"{fmt(None if share is None else share * 100, '.2f', 7)}%"
        )


def summary(figures: list[dict], largest: int) -> dict:
    """The last line's figures (`None` where a row is missing)."""

    def find(condition):
        return next((row for row in figures if condition(row)), None)

    default = find(lambda row: row["default_export"])
    float32 = find(lambda row: row["flags"] == FLOAT32_FLAGS and not row.get("baseline"))
    before = find(lambda row: row.get("baseline")) or float32
    int8 = find(lambda row: row["flags"] == INT8_FLAGS)
    tutorial = find(lambda row: row["name"] == "tutorial (dynamic loop)")

    def greedy(row, batch_size=largest):
        return None if row is None else row["tokens_per_second"]["greedy"].get(batch_size)

    def divide(a, b):
        return None if a is None or b is None or b == 0 else a / b

    def p50(row):
        return None if row is None else row["latency_ms"]["p50"]

    return {
        "default_over_float32_greedy": divide(greedy(default), greedy(before)),
        "float32_over_default_p50": divide(p50(before), p50(default)),
        "default_over_float32_now_greedy": divide(greedy(default), greedy(float32)),
        "float32_now_over_default_p50": divide(p50(float32), p50(default)),
        "beam_bleu_delta": None
        if default is None or float32 is None
        else default["bleu"]["beam"] - float32["bleu"]["beam"],
        "float32_over_int8_variables": divide(
            float32 and float32["variables_bytes"], int8 and int8["variables_bytes"]
        ),
        "default_over_tutorial_greedy": divide(greedy(default), greedy(tutorial)),
        "default_over_tutorial_greedy_batch_1": divide(greedy(default, 1), greedy(tutorial, 1)),
        "tutorial_over_default_p50": divide(p50(tutorial), p50(default)),
        "batch_size": largest,
    }


def comparison_lines(figures: dict) -> list[str]:
    """The lines before the summary line: the default export against today's float32
    export, and against the tutorial's design at batch 1 (each left out without its rows)."""
    lines = []
    if None not in (
        figures["default_over_float32_now_greedy"],
        figures["float32_now_over_default_p50"],
    ):
        lines.append(
            "against the float32 export that also drops finished rows: "
            f"{figures['default_over_float32_now_greedy']:.2f}x at batch {figures['batch_size']}, "
            f"{figures['float32_now_over_default_p50']:.2f}x at batch 1"
        )
    if None not in (
        figures["default_over_tutorial_greedy_batch_1"],
        figures["tutorial_over_default_p50"],
    ):
        lines.append(
            "against the tutorial's design (dynamic loop) at batch 1: "
            f"{figures['default_over_tutorial_greedy_batch_1']:.2f}x its greedy tokens/s, "
            f"its p50 latency {figures['tutorial_over_default_p50']:.2f}x the default export's"
        )
    return lines


def summary_line(figures: dict) -> str:
    def text(value, spec):
        return "n/a" if value is None else format(value, spec)

    return (
        f"default export: {text(figures['default_over_float32_greedy'], '.2f')}x float32 at "
        f"batch {figures['batch_size']}, {text(figures['float32_over_default_p50'], '.2f')}x at "
        f"batch 1, BLEU delta {text(figures['beam_bleu_delta'], '+.2f')}, int8 "
        f"{text(figures['float32_over_int8_variables'], '.2f')}x smaller, "
        f"{text(figures['default_over_tutorial_greedy'], '.2f')}x tutorial"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    harness.add_run_arguments(parser, train_steps=400)
    parser.add_argument(
        "--batch-sizes", default="1,8,64", help="comma-separated batch sizes, 1 among them"
    )
    parser.add_argument("--sentences", type=int, default=128, help="test sentences per timed pass")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds (best is kept)")
    parser.add_argument(
        "--max-sentences",
        type=int,
        default=None,
        metavar="N",
        help="BLEU on the first N distinct test sources, timed sentences drawn from them "
        "(default: all)",
    )
    parser.add_argument("--xla", action="store_true", help="add --jit-compile variants")
    parser.add_argument(
        "--shortlist",
        type=int,
        default=None,
        metavar="K",
        help=f"K of the shortlist rows (default: {AUTO_K}, what --shortlist auto picks for a "
        "large target vocabulary)",
    )
    parser.add_argument("--out", metavar="FILE.json", help="also write every figure here")
    args = parser.parse_args(argv)
    try:
        batch_sizes = sorted({int(b) for b in args.batch_sizes.split(",")})
    except ValueError:
        parser.error(f"--batch-sizes takes integers. Received: {args.batch_sizes!r}")
    if 1 not in batch_sizes or batch_sizes[0] < 1:
        parser.error(f"--batch-sizes must include 1, all >= 1. Received: {args.batch_sizes!r}")
    for name in ("sentences", "repeats", "max_sentences"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1. Received: {value}")
    largest = batch_sizes[-1]
    machine = harness.print_machine_header()

    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        run_dir = (
            Path(args.run_dir)
            if args.run_dir
            else harness.train_small_run(scratch, args.train_steps, args.size)
        )
        train_config = dataclasses.asdict(TrainConfig.load(run_dir))
        sources, references = harness.test_sources(run_dir, args.max_sentences)
        rng = np.random.default_rng(0)
        picked = rng.choice(len(sources), min(args.sentences, len(sources)), replace=False)
        timed = [sources[i] for i in picked]

        cli = export_parser()
        beam_width = export_settings(cli, run_dir, [])["beam_width"]
        wanted, notes = variants(cli, args.xla, args.shortlist)
        rows, failed, refused = build_export_rows(cli, run_dir, scratch, wanted)
        notes += refused
        baseline, baseline_failed = build_baseline_row(cli, run_dir, scratch)
        rows += baseline
        failed += baseline_failed
        translator = with_precision(run_translator(run_dir), "float32")
        rows += build_tutorial_rows(translator, scratch)
        failed += warm_up(rows, timed, batch_sizes)
        rows = [row for row in rows if row.error is None]

        peaks = {
            dtype: harness.matmul_peak_gflops(dtype)
            for dtype in sorted({COMPUTE_DTYPES.get(row.precision, "float32") for row in rows})
        }
        time_rows(rows, timed, batch_sizes, args.repeats, peaks)

        # Untimed: tokens, BLEU, memory.
        bleu_signature = None
        for row in rows:
            for signature in row.signatures:
                row.lengths[signature] = row.token_lengths(signature, timed, largest)
                row.bleu_outputs[signature] = row.translate_all(signature, sources, 64)
                scores = score_translations(row.bleu_outputs[signature], references)
                row.bleu[signature] = scores.bleu
                bleu_signature = scores.bleu_signature
            try:
                row.rss = harness.session_load_rss(row.path, GREEDY, timed[0])
            except RuntimeError as error:
                row.rss = {"error": str(error)[:300]}
        source_lengths = (
            tf.math.count_nonzero(translator.source_vectorizer(tf.constant(timed)), axis=1)
            .numpy()
            .tolist()
        )
        figures = [
            row_figures(
                row,
                batch_sizes,
                source_lengths,
                train_config,
                translator.max_output_length,
                beam_width,
                peaks,
            )
            for row in rows
        ]
        float32_row = next(
            (row for row in rows if row.flags == FLOAT32_FLAGS and not row.baseline), None
        )
        agreement = {}
        if float32_row is not None:
            reference = float32_row.bleu_outputs[GREEDY]
            for row, row_figure in zip(rows, figures, strict=True):
                same = [a == b for a, b in zip(row.bleu_outputs[GREEDY], reference, strict=True)]
                row_figure["identical_greedy_to_float32"] = agreement[row.name] = float(
                    np.mean(same)
                )
        for row in rows:
            row.session.close()

    config = train_config
    kind, why_no_flops = harness.flop_count_kind(config)
    default = next((row for row in figures if row["default_export"]), None)
    print(
        f"\nModel: {config['attention']} attention"
        + (f" ({config['score']})" if config["attention"] == "luong" else "")
        + f", embedding {config['embedding_dim']}, encoder {config['encoder_units']}, decoder "
        f"{config['decoder_units']}, vocabularies {config['source_vocabulary_size']}/"
        f"{config['target_vocabulary_size']} ({config['tokenizer']}), trained in "
        f"{config['precision']}; run {run_dir}"
    )
    print(
        f"{len(timed)} test sentences per timed pass, best of {args.repeats} rounds; BLEU on "
        f"{len(sources)} distinct test sources ({bleu_signature}); matmul peak (2048^3, best "
        "of the run): "
        + ", ".join(f"{dtype} {value:,.0f} GFLOP/s" for dtype, value in peaks.items())
    )
    print_table(figures, batch_sizes, beam_width)
    if default is not None:
        default_settings = export_settings(cli, run_dir, [])
        print(
            f"* default export = `keras-attention export` with no flags: precision "
            f"{cli_default(cli, '--precision')} -> {default_settings['precision']}, weights "
            f"{cli_default(cli, '--weights')} -> {default_settings['weights']}, shortlist {cli_default(cli, '--shortlist')} -> "
            f"{default_settings['shortlist'] or 'none'}, beam width {beam_width}"
            + (", XLA" if default_settings.get("jit_compile") else "")
        )
    print(
        "+RSS MiB: RSS of a fresh process after loading the version minus before it "
        "(TensorFlow, tf-text and the loader imported)"
    )
    sizes = sorted(
        {
            row["flags"][row["flags"].index("--shortlist") + 1]
            for row in figures
            if row["flags"] and "--shortlist" in row["flags"]
        }
        - {"none"}
    )
    for size in sizes:
        print(
            f"shortlist {size}: --shortlist {size} --shortlist-frequent "
            f"{cli_default(cli, '--shortlist-frequent')} (the CLI's default)"
        )
    float32 = next(
        (row for row in figures if row["flags"] == FLOAT32_FLAGS and not row["baseline"]), None
    )
    for row in figures:
        if float32 is not None and row["name"].startswith("tutorial"):
            speed = row["tokens_per_second"]["greedy"][largest]
            print(
                f"the design alone, both float32: the float32 export's greedy tokens/s at batch "
                f"{largest} are {float32['tokens_per_second']['greedy'][largest] / speed:.2f}x "
                f"{row['name']}'s"
            )
    if kind is None:
        print(f"GFLOP/s: not counted, {why_no_flops}")
    for name, share in agreement.items():
        if name.startswith("tutorial"):
            print(
                f"{name}: {share:.1%} of its translations identical to the float32 export's "
                f"greedy ones ({len(sources)} test sources)"
            )
    for note in notes:
        print(f"left out: {note}")
    for name, error in failed:
        print(f"failed: {name}: {error}")
    figures_summary = summary(figures, largest)
    if args.out:
        harness.write_json(
            args.out,
            {
                "run_dir": str(run_dir),
                "train_config": config,
                "batch_sizes": batch_sizes,
                "beam_width": beam_width,
                "timed_sentences": len(timed),
                "bleu_sentences": len(sources),
                "bleu_signature": bleu_signature,
                "repeats": args.repeats,
                "matmul_peak_gflops": peaks,
                "tutorial": TUTORIAL_URL,
                "rows": figures,
                "left_out": notes,
                "failed": [{"name": name, "error": error} for name, error in failed],
                "summary": {**figures_summary, "line": summary_line(figures_summary)},
            },
            machine,
        )
    for line in comparison_lines(figures_summary):
        print(line)
    print(summary_line(figures_summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
