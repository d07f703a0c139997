"""Training runs: learning, attention alignment, resume after a kill, run-directory rules."""

import csv
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from keras_attention.inference.trained_run import load_translator
from keras_attention.runs import run_state
from keras_attention.runs.backup_files import backed_up_epoch
from keras_attention.runs.run_directory import RunDirectory
from keras_attention.runs.train_config import TrainConfig
from keras_attention.training.trainer import train


def test_model_learns_the_task_with_near_diagonal_attention(trained_digits_run):
    run = RunDirectory(trained_digits_run)
    pairs = [line.split("\t") for line in run.test_split.read_text().splitlines()]
    sources = [s for s, _ in pairs][:60]
    references = [t for _, t in pairs][:60]
    results = load_translator(run.path).translate_all(sources)

    exact = np.mean([r.text == ref for r, ref in zip(results, references, strict=True)])
    assert exact >= 0.5, f"exact-match rate {exact:.2f} (chance is ~0)"
    # One target word per source word, in order: the attention argmax of
    # output token i should be source token i.
    on_diagonal = total = 0
    for result in results:
        attention = result.attention
        steps = min(attention.shape[0], attention.shape[1])
        on_diagonal += int(np.sum(attention[:steps].argmax(-1) == np.arange(steps)))
        total += steps
    assert on_diagonal / total >= 0.8, f"diagonal share {on_diagonal / total:.2f}"


def test_run_directory_holds_everything(trained_digits_run):
    run = RunDirectory(trained_digits_run)
    run.require_trained()
    assert TrainConfig.load(run.path).epochs == 3
    metrics = run.read_metrics()["training"]
    assert metrics["completed"] and metrics["epochs_run"] == 3
    assert metrics["stopped_by"] in (None, "early stopping")
    assert run_state.read_state(run)["state"] == "completed"
    assert run.history.is_file() and run.logs.is_dir() and run.test_split.is_file()
    assert not run.backup.exists(), "the resume backup is removed after a completed run"


def test_rerun_of_completed_run_has_nothing_to_do(
    trained_digits_run, digits_corpus, make_train_config
):
    run = RunDirectory(trained_digits_run)
    before = {path: path.stat().st_mtime_ns for path in run.path.rglob("*")}
    summary = train(make_train_config(digits_corpus, trained_digits_run), verbose=0)
    assert summary["already_completed"] is True
    assert (summary["epochs_run"], summary["epochs_this_session"]) == (3, 0)
    assert summary["best_val_loss"] == run.read_metrics()["training"]["best_val_loss"]
    after = {path: path.stat().st_mtime_ns for path in run.path.rglob("*")}
    assert after == before, "nothing in the run directory is written"


def test_rerun_of_completed_run_with_another_config_is_refused(
    trained_digits_run, digits_corpus, make_train_config
):
    with pytest.raises(ValueError, match=r"completed training run \(3 epochs\).*epochs: 3 -> 5"):
        train(make_train_config(digits_corpus, trained_digits_run, epochs=5), verbose=0)


def test_time_budget_stops_training_and_keeps_a_model(digits_corpus, tmp_path, make_train_config):
    config = make_train_config(
        digits_corpus, tmp_path / "run", epochs=50, steps_per_epoch=10, time_budget_minutes=0.001
    )
    summary = train(config, verbose=0)
    assert summary["stopped_by_time_budget"] and summary["epochs_run"] == 1
    RunDirectory(config.out).require_trained()


def history_epochs(run):
    with open(run.history, newline="") as f:
        return [int(row["epoch"]) for row in csv.DictReader(f)]


@pytest.mark.slow
def test_killed_run_resumes_from_last_epoch(digits_corpus, tmp_path):
    """SIGKILL during epoch 3 of 4; the same command resumes and loses at most one epoch."""
    out = tmp_path / "run"
    argv = [
        sys.executable, "-m", "keras_attention.cli", "train",
        "--data", str(digits_corpus), "--out", str(out), "--epochs", "4",
        "--steps-per-epoch", "40", "--embedding-dim", "16", "--encoder-units", "16",
        "--decoder-units", "32", "--tokenizer", "words", "--source-vocabulary-size", "100",
        "--target-vocabulary-size", "100", "--precision", "float32",
        "--time-budget-minutes", "none",
    ]  # fmt: skip
    run = RunDirectory(out)
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and process.poll() is None:
            if run.history.is_file() and len(history_epochs(run)) >= 2:
                break
            time.sleep(0.2)
        assert process.poll() is None, "training finished before it could be killed"
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    finally:
        if process.poll() is None:
            process.kill()
    assert run.backup.is_dir() and not run.metrics.exists()
    done = history_epochs(run)
    # The history's row for an epoch is written just before that epoch's backup, so a
    # kill between the two leaves the backup one epoch behind (the resume then cuts
    # the history back to it): at most one epoch is lost.
    resume_at = backed_up_epoch(run.backup)
    assert len(done) - 1 <= resume_at <= len(done) and resume_at >= 1, (done, resume_at)
    status = run_state.run_status(out)
    assert status["state"] == "interrupted" and status["process_gone"]

    resumed = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    epochs = history_epochs(run)
    assert epochs == [0, 1, 2, 3], epochs
    training = run.read_metrics()["training"]
    assert (training["epochs_run"], training["epochs_this_session"]) == (4, 4 - resume_at)
    status = run_state.run_status(out)
    assert (status["state"], status["epochs_done"]) == ("completed", 4)


def test_config_refuses_dot_scores_with_mismatched_sizes():
    with pytest.raises(ValueError, match="decoder_units` must be twice"):
        TrainConfig(attention="luong", score="scaled_dot", encoder_units=256, decoder_units=256)
    TrainConfig(score="general", encoder_units=256, decoder_units=256)  # any sizes


def test_configs_saved_before_the_schedule_existed_load_with_a_constant_rate():
    saved = TrainConfig().to_json().replace('"learning_rate_schedule": "cosine",', "")
    assert "learning_rate_schedule" not in saved
    assert TrainConfig.from_json(saved).learning_rate_schedule == "constant"


def test_configs_saved_before_score_scale_keep_the_scale_they_trained_with():
    """Only cosine learned its scale then: an old scaled_dot run resumes with the fixed
    score (`False`), the others with the recipe's (resolved when loaded)."""
    for score, expected in (("scaled_dot", False), ("cosine", True), ("dot", False)):
        values = json.loads(TrainConfig(score=score).to_json())
        del values["score_scale"], values["scale_by_dimension"]
        assert TrainConfig.from_json(json.dumps(values)).score_scale is expected
    # Saved resolved since 0.2.0: the recipe's learned scale for scaled_dot.
    assert TrainConfig.from_json(TrainConfig(score="scaled_dot").to_json()).score_scale is True
    assert TrainConfig(score="scaled_dot").to_json().count('"score_scale": true') == 1
    with pytest.raises(ValueError, match="score_scale"):
        TrainConfig(score_scale="yes")


def test_the_recipe_options_reach_the_compiled_loss_and_optimizer(make_train_config, tmp_path):
    from keras_attention.training.trainer import build_model

    config = make_train_config(
        "unused.tsv", tmp_path, label_smoothing=0.2, ema=True, ema_momentum=0.95
    )
    model = build_model(config, 20, 30, total_steps=10)
    assert model.loss.label_smoothing == 0.2
    assert (model.optimizer.use_ema, model.optimizer.ema_momentum) == (True, 0.95)
    plain = build_model(make_train_config("unused.tsv", tmp_path), 20, 30, total_steps=10)
    assert (plain.loss.label_smoothing, plain.optimizer.use_ema) == (0.0, False)
