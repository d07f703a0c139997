"""Training start-up, memory and throughput as the corpus grows, in both input forms.

Builds synthetic English→French corpora of `--sizes` pairs from the bundled one:
each pair joins 1-3 random bundled pairs, and a quarter of them get an invented
name on both sides, so the vocabulary grows with the corpus as real corpora's do.
Each size is written as one gzip TSV file and as 8 aligned plain-text shards
(`train.K.en` / `train.K.fr`). For every corpus and form, a fresh process runs
`train()` (the library call behind `keras-attention train`) with a small model
for two epochs of `--steps` steps and is stopped after the first epoch, then a
second process resumes it; each prints:

- seconds from the process start to the end of its first training step (the
  resumed run: to its first step after the resume point);
- peak RSS of the process (`ru_maxrss`);
- steady-state training steps/s (steps 10 to `--steps`) and target tokens/s
  (steps/s times the mean target tokens of the same batches, counted on the
  same stream after training).

A last process compares the streamed pipeline's steady-state tokens/s with the
in-memory pipeline (`make_dataset` over a list of pairs, `repeat=True`) on the
bundled corpus: one model, the two pipelines taking turns (`--rounds` rounds); and
the seconds a resumed run spends reaching its position in the stream, per 1,000
steps trained (`Dataset.skip` over 2,000 batches).

    python benchmarks/corpus_scale.py [--sizes 250000 1000000 4000000 16000000]
        [--forms tsv aligned] [--steps 60] [--rounds 3] [--work DIR]
        [--out benchmarks/results/corpus_scale.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

_STARTED = time.monotonic()

import harness  # noqa: E402

SIZES = (250_000, 1_000_000, 4_000_000, 16_000_000)
SHARDS = 8
SKIP_STEPS = 2000  # the resume-position cost is measured over this many batches
MODEL = dict(embedding_dim=64, encoder_units=64, decoder_units=128, batch_size=64)
_SYLLABLES = ("ka", "lo", "mi", "ra", "zu", "vek", "tor", "bel", "sha", "quin", "dro", "fen")


def _invented_name(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))).capitalize()


def synthetic_pairs(count: int, seed: int = 0):
    """`count` pairs recombined from the bundled corpus (see the module docstring)."""
    from keras_attention.data import load_corpus

    pairs = load_corpus().pairs
    rng = random.Random(seed)
    for _ in range(count):
        chosen = [pairs[rng.randrange(len(pairs))] for _ in range(rng.randint(1, 3))]
        source = " ".join(s for s, _ in chosen)
        target = " ".join(t for _, t in chosen)
        if rng.random() < 0.25:
            name = _invented_name(rng)
            source, target = f"{name}: {source}", f"{name} : {target}"
        yield source, target


def build_corpus(directory: Path, size: int) -> dict[str, str]:
    """Writes (once) the corpus of `size` pairs in both forms; returns their `--data` specs."""
    directory.mkdir(parents=True, exist_ok=True)
    tsv = directory / f"corpus-{size}.tsv.gz"
    aligned = directory / f"aligned-{size}"
    done = directory / f"corpus-{size}.done"
    if not done.is_file():
        started = time.monotonic()
        aligned.mkdir(exist_ok=True)
        sources = [open(aligned / f"train.{k}.en", "w", encoding="utf-8") for k in range(SHARDS)]
        targets = [open(aligned / f"train.{k}.fr", "w", encoding="utf-8") for k in range(SHARDS)]
        with gzip.open(tsv, "wt", encoding="utf-8", compresslevel=1) as out:
            for index, (source, target) in enumerate(synthetic_pairs(size)):
                out.write(f"{source}\t{target}\n")
                sources[index % SHARDS].write(source + "\n")
                targets[index % SHARDS].write(target + "\n")
        for f in sources + targets:
            f.close()
        done.touch()
        print(f"built {size:,} pairs in {time.monotonic() - started:.0f} s", flush=True)
    return {
        "tsv": str(tsv),
        "aligned": f"src={aligned}/train.*.en,tgt={aligned}/train.*.fr",
    }


# ------------------------------------------------------------------ child processes


def _config(spec: str, out: str, steps: int):
    from keras_attention.runs.train_config import TrainConfig

    return TrainConfig(
        data=[spec],
        out=out,
        tokenizer="words",
        epochs=2,
        steps_per_epoch=steps,
        precision="float32",
        time_budget_minutes=None,
        **MODEL,
    )


def _mean_target_tokens(config, batches: int) -> float:
    """Mean non-padding target tokens of the first `batches` batches of the run's stream."""
    import numpy as np

    from keras_attention.data import make_stream
    from keras_attention.data.corpus_stream import training_pairs
    from keras_attention.runs.run_data import held_out, sample_splits
    from keras_attention.runs.run_directory import RunDirectory
    from keras_attention.runs.run_vectorizers import load_vectorizers
    from keras_attention.training.trainer import DatasetOptions

    splits = sample_splits(config)
    source_vectorizer, target_vectorizer = load_vectorizers(RunDirectory(config.out), config)
    pairs = training_pairs(
        splits.scans, held_out(config, splits), splits.strides, config.shuffle_buffer, config.seed
    )
    options = DatasetOptions(
        batch_size=config.batch_size,
        max_length=config.max_length,
        max_length_ratio=config.max_length_ratio,
    )
    dataset = make_stream(pairs, source_vectorizer, target_vectorizer, options).take(batches)
    counts = [int(np.count_nonzero(target)) for _, target in dataset.as_numpy_iterator()]
    return sum(counts) / len(counts)


def child_train(spec: str, out: str, steps: int, stop_after_epoch: bool) -> dict:
    """One `train()` call; returns its timings and peak memory (runs in a fresh process)."""
    harness.quiet_tensorflow()
    import keras

    from keras_attention.training.interrupt_on_signal import TrainingInterrupted
    from keras_attention.training.trainer import train

    ends = []

    class Clock(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            ends.append(time.monotonic())

        def on_epoch_end(self, epoch, logs=None):
            if stop_after_epoch:
                os.kill(os.getpid(), 2)  # SIGINT: stopped after its first epoch

    config = _config(spec, out, steps)
    try:
        train(config, verbose=0, callbacks=[Clock()])
    except TrainingInterrupted:
        pass
    steady = ends[10:steps]
    steps_per_second = (len(steady) - 1) / (steady[-1] - steady[0]) if len(steady) > 1 else None
    tokens = _mean_target_tokens(config, min(steps, 60)) if stop_after_epoch else None
    return {
        "first_step_seconds": round(ends[0] - _STARTED, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "steps_per_second": steps_per_second and round(steps_per_second, 3),
        "mean_target_tokens": tokens and round(tokens, 1),
    }


def child_pipelines(steps: int, rounds: int) -> dict:
    """Streamed vs in-memory pipeline, one model, turns; tokens/s of each (fresh process)."""
    harness.quiet_tensorflow()
    import numpy as np

    from keras_attention.data import (
        DatasetOptions,
        load_corpus,
        make_dataset,
        make_stream,
        split_corpus,
    )
    from keras_attention.data.corpus_files import corpus_list
    from keras_attention.data.corpus_sample import sample_corpora
    from keras_attention.data.corpus_scan import scan_corpora
    from keras_attention.data.corpus_stream import HeldOut, training_pairs
    from keras_attention.runs.run_vectorizers import make_vectorizers
    from keras_attention.runs.train_config import TrainConfig
    from keras_attention.text import build_vocabulary
    from keras_attention.training.trainer import build_model

    config = TrainConfig(tokenizer="words", precision="float32", **MODEL)
    splits = split_corpus(load_corpus().pairs, seed=0)
    source_vocabulary = build_vocabulary((s for s, _ in splits.train), 12000)
    target_vocabulary = build_vocabulary((t for _, t in splits.train), 16000)
    config = dataclasses.replace(config, source_vocabulary_size=12000, target_vocabulary_size=16000)
    source_vectorizer, target_vectorizer = make_vectorizers(
        config, source_vocabulary, target_vocabulary
    )
    in_memory = make_dataset(
        splits.train,
        source_vectorizer,
        target_vectorizer,
        DatasetOptions(batch_size=64, max_length=config.max_length, seed=0, repeat=True),
    )
    scans = scan_corpora(corpus_list(None))
    held_out = HeldOut()
    sample = sample_corpora(scans, held_out)
    pairs = training_pairs(scans, held_out, sample.strides, config.shuffle_buffer, 0)
    streamed = make_stream(
        pairs,
        source_vectorizer,
        target_vectorizer,
        DatasetOptions(batch_size=64, max_length=config.max_length, max_length_ratio=9.0),
    )
    # A resumed run positions the stream with `skip`: the cost of reaching step N.
    skip_seconds = {}
    for skipped in (0, SKIP_STEPS):
        started = time.monotonic()
        next(iter(streamed.skip(skipped)))
        skip_seconds[skipped] = time.monotonic() - started
    model = build_model(config, 12000, 16000, total_steps=10**6)
    model.build()
    pipelines = {"in_memory": in_memory, "streamed": streamed}
    # Each fit starts a new iterator: the same first batches every round.
    tokens = {
        name: [int(np.count_nonzero(t)) for _, t in data.take(steps).as_numpy_iterator()][5:]
        for name, data in pipelines.items()
    }
    seconds = {name: [] for name in pipelines}
    for _ in range(rounds):
        for name, data in pipelines.items():
            seconds[name].append(sum(harness.fit_step_seconds(model, data, steps)[5:]))
    return {
        **{
            name: {
                "tokens_per_second": round(sum(tokens[name]) * rounds / sum(seconds[name]), 1),
                "round_seconds": [round(x, 2) for x in seconds[name]],
            }
            for name in pipelines
        },
        "skip_seconds_per_1000_steps": round(
            (skip_seconds[SKIP_STEPS] - skip_seconds[0]) * 1000 / SKIP_STEPS, 2
        ),
    }


def _run_child(*args: str) -> dict:
    command = [sys.executable, __file__, "--child", *args]
    done = subprocess.run(
        command, capture_output=True, text=True, env=harness.child_environment(), check=False
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(
            f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return json.loads(lines[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument(
        "--forms", nargs="+", choices=("tsv", "aligned"), default=["tsv", "aligned"]
    )
    parser.add_argument("--steps", type=int, default=60, help="training steps per epoch")
    parser.add_argument("--rounds", type=int, default=3, help="turns of the pipeline comparison")
    parser.add_argument("--work", default="/tmp/keras-attention-corpus-scale")
    parser.add_argument("--out", default=str(harness.REPO / "benchmarks/results/corpus_scale.json"))
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, *rest = args.child
        if kind == "train":
            spec, out, steps, stop = rest
            result = child_train(spec, out, int(steps), stop == "stop")
        else:
            result = child_pipelines(int(rest[0]), int(rest[1]))
        print(json.dumps(result), flush=True)
        return
    info = harness.print_machine_header()
    work = Path(args.work)
    rows = []
    for size in args.sizes:
        specs = build_corpus(work, size)
        for form in args.forms:
            out = work / f"run-{size}-{form}"
            subprocess.run(["rm", "-rf", str(out)], check=True)
            first = _run_child("train", specs[form], str(out), str(args.steps), "stop")
            resumed = _run_child("train", specs[form], str(out), str(args.steps), "go")
            tokens = (first["steps_per_second"] or 0) * (first["mean_target_tokens"] or 0)
            row = {
                "pairs": size,
                "form": form,
                "first_step_seconds": first["first_step_seconds"],
                "peak_rss_mib": first["peak_rss_mib"],
                "steps_per_second": first["steps_per_second"],
                "target_tokens_per_second": round(tokens, 1),
                "resume_first_step_seconds": resumed["first_step_seconds"],
                "resume_peak_rss_mib": resumed["peak_rss_mib"],
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    base = {form: next((r for r in rows if r["form"] == form), None) for form in args.forms}
    for row in rows:
        first = base[row["form"]]
        row["first_step_ratio"] = round(row["first_step_seconds"] / first["first_step_seconds"], 2)
        row["peak_rss_ratio"] = round(row["peak_rss_mib"] / first["peak_rss_mib"], 2)
    pipelines = _run_child("pipelines", str(args.steps), str(args.rounds))
    skip_cost = pipelines.pop("skip_seconds_per_1000_steps")
    ratio = pipelines["streamed"]["tokens_per_second"] / pipelines["in_memory"]["tokens_per_second"]
    print(
        f"{'pairs':>12} {'form':>8} {'first step s':>13} {'x':>5} {'peak RSS MiB':>13} {'x':>5} "
        f"{'tokens/s':>9} {'resume s':>9}"
    )
    for r in rows:
        print(
            f"{r['pairs']:>12,} {r['form']:>8} {r['first_step_seconds']:>13.1f} "
            f"{r['first_step_ratio']:>5.2f} {r['peak_rss_mib']:>13.0f} {r['peak_rss_ratio']:>5.2f} "
            f"{r['target_tokens_per_second']:>9.0f} {r['resume_first_step_seconds']:>9.1f}"
        )
    print(
        f"bundled corpus, steady-state target tokens/s: streamed "
        f"{pipelines['streamed']['tokens_per_second']:.0f}, in memory "
        f"{pipelines['in_memory']['tokens_per_second']:.0f} ({ratio:.2f}x); a resume reaches "
        f"its position at {skip_cost:.1f} s per 1,000 steps trained"
    )
    harness.write_json(
        args.out,
        {
            "command": "python benchmarks/corpus_scale.py " + " ".join(argv or sys.argv[1:]),
            "model": MODEL,
            "steps": args.steps,
            "rows": rows,
            "pipelines": {**pipelines, "streamed_over_in_memory": round(ratio, 3)},
            "resume_skip_seconds_per_1000_steps": skip_cost,
        },
        info,
    )


if __name__ == "__main__":
    main()
