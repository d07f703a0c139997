"""Run states, epochs done, stale evaluations and the retry rules, on hand-made run directories."""

import json
import os
import subprocess
import sys

import pytest

from keras_attention.runs import run_state
from keras_attention.runs.run_directory import RunDirectory
from keras_attention.runs.train_config import CHOICES, TrainConfig


def make_run(tmp_path, config=None, history_rows=0, backup_epoch=None, model=b""):
    run = RunDirectory(tmp_path / "run")
    run.path.mkdir()
    (config or TrainConfig(out=str(run.path))).save(run.path)
    if history_rows:
        lines = ["epoch,loss,val_loss"] + [f"{i},1.0,{2.0 - i / 10}" for i in range(history_rows)]
        run.history.write_text("\n".join(lines) + "\n")
    if backup_epoch is not None:
        run.backup.mkdir()
        (run.backup / "training_metadata.json").write_text(json.dumps({"epoch": backup_epoch}))
    if model:
        run.model.write_bytes(model)
    return run


def test_epochs_done_prefers_the_backup_then_history(tmp_path):
    run = make_run(tmp_path)
    assert run_state.epochs_done(run) == 0
    run.history.write_text("epoch,loss\n0,1\n1,1\n2,1\n")
    assert run_state.epochs_done(run) == 3
    run.backup.mkdir()
    (run.backup / "training_metadata.json").write_text('{"epoch": 2, "batch": 0}')
    assert run_state.epochs_done(run) == 2


def test_a_training_state_whose_process_is_gone_reads_as_interrupted(tmp_path):
    run = make_run(tmp_path)
    run_state.write_state(run, run_state.TRAINING, epochs_done=1)
    assert run_state.read_state(run)["state"] == run_state.TRAINING  # this process is alive
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)  # fmt: skip
    record = json.loads(run.state.read_text())
    record["pid"] = int(finished.stdout)
    run.state.write_text(json.dumps(record))
    state = run_state.read_state(run)
    assert state["state"] == run_state.INTERRUPTED and state["process_gone"]
    with pytest.raises(ValueError, match="state"):
        run_state.write_state(run, "paused")


def test_another_live_trainer_is_refused(tmp_path):
    run = make_run(tmp_path)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        record = {"state": "training", "pid": sleeper.pid, "host": os.uname().nodename}
        run.state.write_text(json.dumps(record))
        with pytest.raises(ValueError, match=f"another process \\(pid {sleeper.pid}\\)"):
            run_state.claim_run_directory(run, TrainConfig(out=str(run.path)))
    finally:
        sleeper.kill()
        sleeper.wait()


def test_config_mismatch_lists_only_the_fields_that_differ(tmp_path):
    run = make_run(tmp_path, history_rows=2, backup_epoch=2, model=b"m")
    given = TrainConfig(out="elsewhere/spelled/differently", batch_size=32, cell="lstm")
    with pytest.raises(ValueError) as error:
        run_state.claim_run_directory(run, given)
    message = str(error.value)
    assert "(2 epochs done)" in message
    assert "cell: 'gru' -> 'lstm'; batch_size: 64 -> 32 (saved -> given)" in message
    assert "out" not in message.split("options:")[1].split("(saved")[0]
    assert "{" not in message, "no JSON dump"
    assert run.config.is_file(), "a refused retry changes nothing"
    # The same options, however `out` is spelled, resume.
    assert run_state.claim_run_directory(run, TrainConfig(out="x")) == 2


def test_a_run_with_no_completed_epoch_never_blocks_a_retry(tmp_path):
    run = make_run(tmp_path)
    (run.path / "splits").mkdir()
    (run.path / "splits" / "test.tsv").write_text("a\tb\n")
    run.source_vocabulary.write_text("x\n")
    run_state.write_state(run, run_state.FAILED, epochs_done=0, error="ValueError: boom")
    assert run_state.claim_run_directory(run, TrainConfig(batch_size=16)) == 0
    assert sorted(os.listdir(run.path)) == [], "the leftovers of the failed attempt are gone"


def test_a_completed_run_is_refused(tmp_path):
    run = make_run(tmp_path, history_rows=3, model=b"m")
    assert not run_state.completed_with(run, TrainConfig())
    run_state.write_state(run, run_state.COMPLETED, epochs_done=3)
    # The same options: completed, nothing to train (claiming it is still refused).
    assert run_state.completed_with(run, TrainConfig(out="spelled/differently"))
    with pytest.raises(ValueError, match="already holds a completed training run with these"):
        run_state.claim_run_directory(run, TrainConfig())
    # Other options: refused, naming just the fields that differ.
    for check in (run_state.completed_with, run_state.claim_run_directory):
        with pytest.raises(ValueError) as error:
            check(run, TrainConfig(epochs=12, cell="lstm"))
        message = str(error.value)
        assert "already holds a completed training run (3 epochs)" in message
        assert "cell: 'gru' -> 'lstm'; epochs: 'auto' -> 12 (saved -> given)" in message


def test_a_run_completed_before_state_files_reads_as_completed(tmp_path):
    run = make_run(tmp_path, history_rows=2, model=b"m")
    run.update_metrics(training={"completed": True, "epochs_run": 2})
    assert run_state.is_completed(run)
    assert run_state.completed_with(run, TrainConfig())


def test_evaluation_goes_stale_when_the_model_changes(tmp_path):
    run = make_run(tmp_path, history_rows=2, model=b"weights v1")
    assert not run_state.mark_stale_evaluation(run), "no evaluation, nothing to mark"
    run.update_metrics(evaluation={"sentences": 5, "greedy": {"bleu": 1.0}})
    assert run_state.evaluation_is_current(run) is None, "an older evaluation cannot tell"
    assert "of an unrecorded model" in run_state.format_status(run_state.run_status(run.path))
    evaluation = {"sentences": 5, "greedy": {"bleu": 12.5}, "epochs": 2,
                  "training_state": "interrupted",
                  "model_sha256": run_state.model_fingerprint(run)}  # fmt: skip
    run.update_metrics(evaluation=evaluation)
    assert run_state.evaluation_is_current(run) is True
    assert not run_state.mark_stale_evaluation(run)
    run.model.write_bytes(b"weights v2")
    assert run_state.evaluation_is_current(run) is False
    assert run_state.mark_stale_evaluation(run)
    assert run.read_metrics()["evaluation"]["stale"] is True
    run.model.write_bytes(b"weights v1")
    assert not run_state.evaluation_is_current(run), "once marked stale, it stays stale"


def test_status_and_its_text(tmp_path):
    run = make_run(tmp_path, history_rows=3, backup_epoch=3, model=b"weights")
    run_state.write_state(run, run_state.INTERRUPTED, epochs_done=3, signal="SIGINT")
    run.update_metrics(evaluation={"sentences": 7, "greedy": {"bleu": 20.0},
                                   "beam": {"bleu": 21.5}, "epochs": 2,
                                   "training_state": "interrupted", "model_sha256": "0" * 64})  # fmt: skip
    status = run_state.run_status(run.path)
    assert status["state"] == "interrupted" and status["epochs_done"] == 3
    assert status["epochs_planned"] == TrainConfig().maximum_epochs
    assert status["best_val_loss"] == pytest.approx(1.8)
    assert status["evaluation"]["current"] is False
    assert status["disk_bytes"] == sum(
        os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(run.path) for f in fs
    )
    text = run_state.format_status(status)
    assert "state:      interrupted; run the same train command to resume" in text
    assert f"epochs:     3 of {TrainConfig().maximum_epochs}" in text
    assert "best val_loss: 1.8000" in text
    assert "greedy BLEU 20.00, beam BLEU 21.50 on 7 sentences of epoch 2" in text
    assert "(interrupted run: partial model)" in text and "STALE" in text

    run_state.write_state(run, run_state.FAILED, epochs_done=0, error="ValueError: no data")
    assert "state:      failed: ValueError: no data" in run_state.format_status(
        run_state.run_status(run.path)
    )
    with pytest.raises(FileNotFoundError, match="no config.json"):
        run_state.run_status(tmp_path)


def test_choices_match_the_models_own_lists():
    from keras_attention.layers.luong_attention import SCORES
    from keras_attention.models.encoder import RNN_CELLS
    from keras_attention.models.seq2seq import ATTENTION_SHORTCUTS

    assert set(CHOICES["attention"]) == set(ATTENTION_SHORTCUTS)
    assert set(CHOICES["score"]) == set(SCORES)
    assert set(CHOICES["cell"]) == set(RNN_CELLS)
    with pytest.raises(ValueError, match="`cell` must be one of"):
        TrainConfig(cell="rnn")
