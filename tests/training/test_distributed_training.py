"""Data-parallel training with real worker processes on localhost.

Each test starts processes (free ports on 127.0.0.1, CPU only, bounded waits,
all killed at the end): they are few, tiny and marked slow.
"""

import json
import os

import numpy as np
import pytest
from helpers.workers import (
    Workers,
    free_ports,
    tf_config,
    worker_env,
)

from keras_attention.training.run_directory import RunDirectory

pytestmark = pytest.mark.slow

TIMEOUT = 300  # seconds for one launch of processes (2 cores shared with other tests)


def tiny_options(data, out, **overrides):
    """A tiny float32 run without dropout, with clipping always active (exact equivalence)."""
    options = dict(
        data=str(data),
        out=str(out),
        score="general",
        embedding_dim=8,
        encoder_units=8,
        decoder_units=16,
        source_vocabulary_size=30,
        target_vocabulary_size=30,
        max_length=10,
        max_output_length=10,
        batch_size=16,
        epochs=3,
        steps_per_epoch=8,
        learning_rate=1e-2,
        global_clipnorm=0.05,
        dropout=0.0,
        validation_fraction=0.1,
        test_fraction=0.1,
        precision="float32",
        time_budget_minutes=None,
        patience=10,
    )
    options.update(overrides)
    return options


def cli_flags(options):
    flags = []
    for name, value in options.items():
        flags += ["--" + name.replace("_", "-"), "none" if value is None else str(value)]
    return flags


def load_weights(path):
    with np.load(path) as arrays:
        return [arrays[f"arr_{i}"] for i in range(len(arrays.files))]


def max_difference(a, b):
    assert [x.shape for x in a] == [y.shape for y in b]
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b, strict=True))


def run_processes(tmp_path, name, options, distribute="none", workers=1, cpu_replicas=None):
    """Trains `options` with `workers` processes of helpers.train_process; returns weight files."""
    config = tmp_path / f"{name}.json"
    config.write_text(json.dumps(options))
    hosts = [f"127.0.0.1:{p}" for p in free_ports(workers)]
    weights = [tmp_path / f"{name}_weights{i}.npz" for i in range(workers)]
    with Workers(tmp_path / f"{name}_logs") as group:
        for index in range(workers):
            argv = [
                "-m",
                "helpers.train_process",
                str(config),
                str(weights[index]),
                "--distribute",
                distribute,
            ]
            if cpu_replicas:
                argv += ["--cpu-replicas", str(cpu_replicas)]
            extra = {"TF_CONFIG": tf_config(hosts, index)} if distribute == "multi-worker" else {}
            group.start([os.sys.executable, *argv], worker_env(**extra), f"{name}{index}")
        codes = group.wait(TIMEOUT)
        assert codes == [0] * workers, group.outputs()
    return weights


@pytest.fixture(scope="module")
def single_process_run(digits_corpus, tmp_path_factory):
    """The reference: one process, one device, global batch 16."""
    tmp = tmp_path_factory.mktemp("single")
    options = tiny_options(digits_corpus, tmp / "run")
    (weights,) = run_processes(tmp, "single", options)
    return options, weights, tmp / "run"


def test_two_workers_match_one_process_and_each_other(single_process_run, tmp_path):
    options, reference_weights, reference_run = single_process_run
    reference = load_weights(reference_weights)
    options = {**options, "out": str(tmp_path / "run")}
    first, second = run_processes(tmp_path, "mw", options, "multi-worker", workers=2)
    chief, other = load_weights(first), load_weights(second)

    assert all(np.array_equal(a, b) for a, b in zip(chief, other, strict=True)), (
        "the workers' final weights differ"
    )
    # Same global batch, same steps: the same model as one process (up to
    # float summation order). Double-counted losses or bad sharding would
    # move the weights by about the learning rate (1e-2) per step.
    assert max_difference(chief, reference) < 2e-4
    initial = load_weights(f"{first}.initial.npz")
    assert max_difference(chief, initial) > 3e-2, "training did not move the weights"

    run = RunDirectory(options["out"])
    run.require_trained()
    assert json.loads(run.metrics.read_text())["training"]["distribution"] == {
        "mode": "multi-worker",
        "workers": 2,
        "replicas": 2,
    }
    assert sorted(p.name for p in run.path.iterdir()) == sorted(
        p.name for p in reference_run.iterdir()
    ), "the chief writes the same run directory as one process, and the other worker nothing"

    from keras_attention.training.trainer import load_translator

    translations = load_translator(run.path).translate_all(["1 2 3"])
    assert isinstance(translations[0]["translation"], str)


def test_mirrored_strategy_on_two_cpu_replicas_matches_one_process(single_process_run, tmp_path):
    options, reference_weights, _ = single_process_run
    options = {**options, "out": str(tmp_path / "run")}
    (weights,) = run_processes(tmp_path, "mirrored", options, "mirrored", cpu_replicas=2)
    assert max_difference(load_weights(weights), load_weights(reference_weights)) < 2e-4
