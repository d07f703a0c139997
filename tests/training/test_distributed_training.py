"""Data-parallel training with real worker processes on localhost.

Each test starts processes (free ports on 127.0.0.1, CPU only, bounded waits,
all killed at the end): they are few, tiny and marked slow.
"""

import csv
import json
import os
import signal
import time

import numpy as np
import pytest
from helpers.workers import (
    Workers,
    free_ports,
    tf_config,
    train_command,
    worker_env,
)

from keras_attention.runs.backup_files import backed_up_epoch
from keras_attention.runs.run_directory import RunDirectory

pytestmark = pytest.mark.slow

TIMEOUT = 300  # seconds for one launch of processes (2 cores shared with other tests)


def tiny_options(data, out, **overrides):
    """A tiny float32 run without dropout, with clipping always active (exact equivalence)."""
    options = dict(
        data=str(data),
        out=str(out),
        attention="luong",
        score="general",
        embedding_dim=8,
        encoder_units=8,
        decoder_units=16,
        tokenizer="words",
        source_vocabulary_size=30,
        target_vocabulary_size=30,
        max_length=10,
        max_output_length=10,
        batch_size=16,
        epochs=4,
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


def test_two_workers_read_their_own_parts_and_train_one_model(single_process_run, tmp_path):
    options, reference_weights, reference_run = single_process_run
    reference = load_weights(reference_weights)
    options = {**options, "out": str(tmp_path / "run")}
    first, second = run_processes(tmp_path, "mw", options, "multi-worker", workers=2)
    chief, other = load_weights(first), load_weights(second)

    assert all(np.array_equal(a, b) for a, b in zip(chief, other, strict=True)), (
        "the workers' final weights differ"
    )
    # Each worker reads its own half of the corpus's lines (tests/data checks the parts),
    # so the global batches are not one process's: the same number of steps of the same
    # global batch size train a model as good, not the same model. A double-counted loss
    # or a worker training on the other's batches would move the weights by about the
    # learning rate (1e-2) per step more, and the losses below by far more than 5 %.
    assert max_difference(chief, reference) < 0.5
    final = RunDirectory(options["out"]).read_metrics()["training"]["final"]
    expected = RunDirectory(reference_run).read_metrics()["training"]["final"]
    assert final["loss"] == pytest.approx(expected["loss"], rel=0.05)
    assert final["val_loss"] == pytest.approx(expected["val_loss"], rel=0.05)
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

    from keras_attention.inference.trained_run import load_translator

    translations = load_translator(run.path).translate_all(["1 2 3"])
    assert isinstance(translations[0].text, str)


def test_mirrored_strategy_on_two_cpu_replicas_matches_one_process(single_process_run, tmp_path):
    options, reference_weights, reference_run = single_process_run
    options = {**options, "out": str(tmp_path / "run")}
    (weights,) = run_processes(tmp_path, "mirrored", options, "mirrored", cpu_replicas=2)
    assert max_difference(load_weights(weights), load_weights(reference_weights)) < 2e-5
    assert_same_reported_losses(RunDirectory(options["out"]), RunDirectory(reference_run))


def assert_same_reported_losses(run, reference):
    """Same training and validation loss as one process (a doubled loss would show here).

    Clipping and Adam hide a constant factor on the gradients from the weights.
    """
    final = run.read_metrics()["training"]["final"]
    expected = reference.read_metrics()["training"]["final"]
    assert final["loss"] == pytest.approx(expected["loss"], rel=1e-5)
    assert final["masked_accuracy"] == pytest.approx(expected["masked_accuracy"], abs=1e-6)
    # Validation batches padded to a multiple of the replicas weigh a little more.
    assert final["val_loss"] == pytest.approx(expected["val_loss"], rel=1e-3)


def history_epochs(run):
    with open(run.history, newline="") as f:
        return [int(row["epoch"]) for row in csv.DictReader(f)]


def model_weights(path):
    import keras

    import keras_attention.models.seq2seq  # noqa: F401 (registers Seq2Seq for loading)

    return [np.asarray(w) for w in keras.saving.load_model(path, compile=False).get_weights()]


def two_worker_command(options, hosts, index):
    return train_command(
        *cli_flags(options),
        "--distribute", "multi-worker", "--worker-hosts", hosts, "--task-index", str(index),
    )  # fmt: skip


@pytest.fixture(scope="module")
def uninterrupted_two_workers(digits_corpus, tmp_path_factory):
    """Two workers through the command line, with dropout: the reference of a resumed run."""
    tmp = tmp_path_factory.mktemp("two_workers")
    options = tiny_options(digits_corpus, tmp / "run", dropout=0.2)
    hosts = ",".join(f"127.0.0.1:{p}" for p in free_ports(2))
    with Workers(tmp / "logs") as group:
        for index in range(2):
            group.start(two_worker_command(options, hosts, index), worker_env(), f"worker{index}")
        assert group.wait(TIMEOUT) == [0, 0], group.outputs()
    return options, RunDirectory(options["out"])


def history_rows(run):
    with open(run.history, newline="") as f:
        return list(csv.DictReader(f))


def test_killed_worker_stops_the_other_and_relaunch_resumes(uninterrupted_two_workers, tmp_path):
    """SIGKILL worker 1 after epoch 1; worker 0 fails fast; the same commands resume, and
    the resumed run is the uninterrupted two-worker run: same losses, same weights, bit for
    bit (dropout on, so the random-generator states must come back too)."""
    options, reference = uninterrupted_two_workers
    run = RunDirectory(tmp_path / "run")
    options = {**options, "out": str(run.path)}
    hosts = ",".join(f"127.0.0.1:{p}" for p in free_ports(2))

    with Workers(tmp_path / "first") as group:
        for index in range(2):
            group.start(two_worker_command(options, hosts, index), worker_env(), f"worker{index}")
        deadline = time.monotonic() + TIMEOUT
        while backed_up_epoch(run.backup) < 1 and time.monotonic() < deadline:
            assert all(p.poll() is None for p in group.processes), group.outputs()
            time.sleep(0.05)
        assert backed_up_epoch(run.backup) >= 1, group.outputs()
        os.kill(group.processes[1].pid, signal.SIGKILL)
        killed_at = time.monotonic()
        codes = group.wait(120)
        failed_after = time.monotonic() - killed_at
        assert codes[0] == 2, group.outputs()
        assert "lost the cluster" in group.output(0) and "resume from epoch" in group.output(0)
        assert failed_after < 60, f"worker 0 took {failed_after:.0f} s to notice"

    resume_at = backed_up_epoch(run.backup)
    assert 1 <= resume_at < options["epochs"], "killed after the last epoch"
    assert not run.metrics.exists()

    with Workers(tmp_path / "relaunch") as group:
        for index in range(2):
            group.start(two_worker_command(options, hosts, index), worker_env(), f"worker{index}")
        assert group.wait(TIMEOUT) == [0, 0], group.outputs()
    metrics = run.read_metrics()["training"]
    assert metrics["epochs_run"] == options["epochs"]
    assert metrics["epochs_this_session"] == options["epochs"] - resume_at
    assert history_epochs(run)[-1] == options["epochs"] - 1
    assert not run.backup.exists()
    # The resumed run trained on the same batches from the same state (weights,
    # optimizer, random generators): the uninterrupted run's losses and model.
    # Measured on this machine (2 CPU workers, float32): equal, not just close.
    assert history_rows(run) == history_rows(reference)
    for mine, theirs in zip(model_weights(run.model), model_weights(reference.model), strict=True):
        np.testing.assert_array_equal(mine, theirs)
