"""Data-parallel training: 1 process vs 2 workers vs MirroredStrategy, same global batch.

Trains the same `TrainConfig` (a slice of the bundled corpus, float32, no
dropout) for the same steps with:

- `none`: one process, one device (the baseline);
- `multi-worker`: two worker processes on localhost (`TF_CONFIG`);
- `mirrored`: one process, `MirroredStrategy` over `--cpu-replicas` logical
  CPU devices (or all GPUs with `--gpu`).

Prints, per mode: the median step time, target tokens/s and its ratio to the
baseline, the time of one all-reduce of a gradient-sized float32 buffer (the
communication each step pays), and the parity figure: the largest absolute
difference between the final weights and the baseline's.

    python benchmarks/distributed_training.py [--steps 30] [--batch-size 64]

Each mode runs in fresh processes (a strategy must exist before any other
TensorFlow op), started by this script with `--role worker`.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness

WARMUP = 5  # steps excluded from timing (tracing, first all-reduces)


def config_options(args, out):
    return dict(
        out=str(out),
        max_pairs=args.pairs,
        tokenizer="words",  # the figures in the README were measured on words
        embedding_dim=args.units,
        encoder_units=args.units,
        decoder_units=2 * args.units,
        source_vocabulary_size=args.vocabulary,
        target_vocabulary_size=args.vocabulary,
        batch_size=args.batch_size,
        epochs=1,
        steps_per_epoch=WARMUP + args.steps,
        dropout=0.0,
        precision=args.precision,
        validation_fraction=0.01,
        test_fraction=0.01,
        time_budget_minutes=None,
    )


def worker(args) -> int:
    from keras_attention.distribution import make_distribution

    mirrored_cpus = args.distribute == "mirrored" and not args.gpu
    distribution = make_distribution(
        args.distribute, cpu_replicas=args.cpu_replicas if mirrored_cpus else None
    )
    import keras
    import numpy as np
    import tensorflow as tf

    from keras_attention.runs.train_config import TrainConfig
    from keras_attention.training.trainer import train

    step_ends = []
    result = {}

    class Timer(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            step_ends.append(time.perf_counter())

        def on_train_end(self, logs=None):
            weights = [keras.ops.convert_to_numpy(w) for w in self.model.weights]
            np.savez(args.weights, *weights)
            size = sum(int(np.prod(w.shape)) for w in self.model.trainable_weights)
            result["parameters"] = size
            strategy = distribution.strategy

            @tf.function
            def all_reduce(buffer):
                per_replica = strategy.run(lambda: tf.identity(buffer))
                return strategy.reduce("SUM", per_replica, axis=None)

            buffer = tf.ones([size], tf.float32)
            all_reduce(buffer)
            started = time.perf_counter()
            for _ in range(10):
                all_reduce(buffer).numpy()
            result["all_reduce_ms"] = (time.perf_counter() - started) / 10 * 1e3

    config = TrainConfig(**json.loads(args.config))
    train(config, verbose=0, distribute=distribution, callbacks=[Timer()])
    steps = [b - a for a, b in zip(step_ends[WARMUP - 1 : -1], step_ends[WARMUP:], strict=True)]
    result.update(step_ms=statistics.median(steps) * 1e3, replicas=distribution.num_replicas)
    Path(args.result).write_text(json.dumps(result))
    return 0


def target_tokens_per_step(options) -> float:
    """Real (non-padding) target tokens per global batch over the timed steps."""
    from keras_attention.data import DatasetOptions, load_corpus, make_dataset, split_corpus
    from keras_attention.runs.train_config import TrainConfig
    from keras_attention.text import TextVectorizer, build_vocabulary

    config = TrainConfig(**options)
    splits = split_corpus(
        load_corpus(config.data).pairs,
        validation_fraction=config.validation_fraction,
        test_fraction=config.test_fraction,
        seed=config.seed,
        max_pairs=config.max_pairs,
    )
    source = TextVectorizer(
        build_vocabulary((s for s, _ in splits.train), config.source_vocabulary_size)
    )
    target = TextVectorizer(
        build_vocabulary((t for _, t in splits.train), config.target_vocabulary_size)
    )
    stream = make_dataset(
        splits.train,
        source,
        target,
        DatasetOptions(
            batch_size=config.batch_size,
            seed=config.seed,
            max_length=config.max_length,
            repeat=True,
        ),
    )
    counts = [
        int((batch[1].numpy() != 0).sum())
        for batch in stream.skip(WARMUP).take(config.steps_per_epoch - WARMUP)
    ]
    return sum(counts) / len(counts)


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def run_mode(args, tmp: Path, mode: str, workers: int, cpu_replicas=None):
    options = config_options(args, tmp / mode / "run")
    hosts = [f"127.0.0.1:{p}" for p in free_ports(workers)]
    processes = []
    for index in range(workers):
        env = harness.child_environment(KERAS_BACKEND="tensorflow")
        if not args.gpu:
            env["CUDA_VISIBLE_DEVICES"] = ""
        env.pop("TF_CONFIG", None)
        if mode == "multi-worker":
            env["TF_CONFIG"] = json.dumps(
                {"cluster": {"worker": hosts}, "task": {"type": "worker", "index": index}}
            )
        argv = [
            sys.executable, __file__, "--role", "worker", "--distribute", mode,
            "--config", json.dumps(options),
            "--weights", str(tmp / f"{mode}{index}.npz"),
            "--result", str(tmp / f"{mode}{index}.json"),
        ]  # fmt: skip
        argv += ["--gpu"] if args.gpu else ["--cpu-replicas", str(cpu_replicas or 1)]
        log = open(tmp / f"{mode}{index}.log", "w")
        processes.append((subprocess.Popen(argv, env=env, stdout=log, stderr=log), log))
    try:
        for process, log in processes:
            process.wait(timeout=args.timeout)
            log.close()
    finally:
        for process, _ in processes:
            if process.poll() is None:
                process.kill()
    for index, (process, _) in enumerate(processes):
        if process.returncode != 0:
            tail = (tmp / f"{mode}{index}.log").read_text()[-3000:]
            raise SystemExit(f"{mode} worker {index} failed:\n{tail}")
    return json.loads((tmp / f"{mode}0.json").read_text()), tmp / f"{mode}0.npz"


def max_difference(a_path, b_path) -> float:
    import numpy as np

    with np.load(a_path) as a, np.load(b_path) as b:
        return max(float(np.max(np.abs(a[k] - b[k]))) for k in a.files)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="timed steps (default: 30)")
    parser.add_argument("--batch-size", type=int, default=64, help="global batch (default: 64)")
    parser.add_argument("--units", type=int, default=128, help="encoder units (default: 128)")
    parser.add_argument("--vocabulary", type=int, default=4000, help="vocabulary sizes")
    parser.add_argument("--pairs", type=int, default=20000, help="corpus pairs used")
    parser.add_argument("--precision", default="float32", help="float32 | mixed_bfloat16")
    parser.add_argument("--cpu-replicas", type=int, default=2, help="mirrored: CPU replicas")
    parser.add_argument("--gpu", action="store_true", help="mirrored over all GPUs instead")
    parser.add_argument("--modes", default="none,multi-worker,mirrored")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--role", default="driver", help=argparse.SUPPRESS)
    parser.add_argument("--distribute", help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    parser.add_argument("--weights", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.role == "worker":
        harness.quiet_tensorflow()
        return worker(args)

    harness.print_machine_header()
    harness.quiet_tensorflow()
    tmp = Path(tempfile.mkdtemp(prefix="distributed_benchmark_"))
    tokens = target_tokens_per_step(config_options(args, tmp / "probe"))
    modes = args.modes.split(",")
    results = {}
    for mode in modes:
        workers = 2 if mode == "multi-worker" else 1
        replicas = None if (mode != "mirrored" or args.gpu) else args.cpu_replicas
        results[mode] = run_mode(args, tmp, mode, workers, replicas)
    baseline = results.get("none")
    print(
        f"global batch {args.batch_size}, {tokens:.0f} target tokens/step, {args.steps} timed "
        f"steps, {args.precision}, units {args.units}, "
        f"{results[modes[0]][0]['parameters']:,} parameters"
    )
    print("| mode | processes x replicas | step ms | target tokens/s | vs 1 process "
          "| all-reduce ms | max weight diff vs 1 process |")  # fmt: skip
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for mode in modes:
        result, weights = results[mode]
        workers = 2 if mode == "multi-worker" else 1
        speed = tokens / result["step_ms"] * 1e3
        ratio = baseline[0]["step_ms"] / result["step_ms"] if baseline else float("nan")
        parity = max_difference(weights, baseline[1]) if baseline else float("nan")
        all_reduce = f"{result['all_reduce_ms']:.1f}" if result["replicas"] > 1 else "-"
        print(
            f"| {mode} | {workers} x {result['replicas'] // workers} | {result['step_ms']:.1f} "
            f"| {speed:,.0f} | {ratio:.2f}x | {all_reduce} | {parity:.1e} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
