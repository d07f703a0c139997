"""A run's life through the command line, with real processes and signals.

Ctrl-C and SIGTERM during `train`, resuming, `status`, `evaluate` on a partial
run, a stale evaluation after the resume, retries after a failure, the config
mismatch message, and a quiet stderr: the newcomer path of issue 14.
"""

import csv
import json
import os
import pty
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from keras_attention.cli import main
from keras_attention.runs import run_state
from keras_attention.runs.backup_files import backed_up_position
from keras_attention.runs.run_directory import RunDirectory

ROOT = Path(__file__).resolve().parents[1]
TINY = [
    "--embedding-dim", "16", "--encoder-units", "16", "--decoder-units", "32",
    "--attention", "luong", "--score", "general", "--input-feeding", "--tokenizer", "words", "--source-vocabulary-size", "100", "--target-vocabulary-size", "100",
    "--max-length", "12", "--max-output-length", "12", "--batch-size", "32",
    "--validation-fraction", "0.05", "--test-fraction", "0.05", "--precision", "float32",
    "--time-budget-minutes", "none",
]  # fmt: skip


def quiet_environment():
    """The environment of a user's shell: no TF_CPP_MIN_LOG_LEVEL (the test suite sets one)."""
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL",)}
    env["PYTHONPATH"] = str(ROOT)
    return env


def cli(*argv):
    return [sys.executable, "-m", "keras_attention.cli", *argv]


def history_epochs(run):
    if not run.history.is_file():
        return []
    with open(run.history, newline="") as f:
        return [int(row["epoch"]) for row in csv.DictReader(f)]


def signal_when(process, ready, signum, timeout=240):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None and not ready():
        time.sleep(0.1)
    assert process.poll() is None, "training ended before the signal: " + process.stderr.read()
    process.send_signal(signum)
    out, err = process.communicate(timeout=240)
    return process.returncode, out, err


@pytest.mark.slow
def test_ctrl_c_then_status_evaluate_resume(digits_corpus, tmp_path, capsys):
    out = tmp_path / "run"
    run = RunDirectory(out)
    argv = ["train", "--data", str(digits_corpus), "--out", str(out), "--epochs", "3",
            "--steps-per-epoch", "40", *TINY]  # fmt: skip
    process = subprocess.Popen(cli(*argv), cwd=ROOT, env=quiet_environment(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    code, _, err = signal_when(process, lambda: len(history_epochs(run)) >= 1, signal.SIGINT)

    # One line, no traceback, no TensorFlow noise; exit 130.
    done = run_state.epochs_done(run)
    assert code == 130, err
    assert 1 <= done < 3
    # Stopped mid-epoch, the run is saved where it is; during validation, at the epoch's end.
    steps = backed_up_position(run.backup)[1]
    when = f"at step {steps} of epoch {done + 1}" if steps else f"after epoch {done}"
    assert err == f"keras-attention train: interrupted {when}; run the same command to resume\n"
    assert history_epochs(run) == list(range(done)), "no half epoch is recorded"
    assert run.backup.is_dir()

    assert main(["status", str(out)]) == 0
    text = capsys.readouterr().out
    assert "state:      interrupted; run the same train command to resume" in text
    assert f"epochs:     {done} of 3" in text

    # A different option is refused with just that field named.
    assert main([*argv, "--batch-size", "16"]) == 2
    message = capsys.readouterr().err
    assert "batch_size: 32 -> 16 (saved -> given)" in message and "{" not in message

    # evaluate on the partial run warns, and records what it scored.
    assert main(["evaluate", str(out), "--beam", "1", "--max-sentences", "10"]) == 0
    warning = capsys.readouterr().err
    assert f"is interrupted after epoch {done} of 3; using the partial model" in warning
    evaluation = run.read_metrics()["evaluation"]
    assert (evaluation["training_state"], evaluation["epochs"]) == ("interrupted", done)
    assert run_state.evaluation_is_current(run)

    # The same command resumes; epochs_run counts every epoch; the evaluation is now stale.
    resumed = subprocess.run(cli(*argv), cwd=ROOT, env=quiet_environment(),
                             capture_output=True, text=True, timeout=300)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr == "", "a normal run prints only our output"
    assert history_epochs(run) == [0, 1, 2]
    training = run.read_metrics()["training"]
    assert (training["epochs_run"], training["epochs_this_session"]) == (3, 3 - done)
    assert "Trained 3 epochs" in resumed.stdout
    assert not run.backup.exists()
    status = run_state.run_status(out)
    assert status["state"] == "completed" and status["epochs_done"] == 3
    if run_state.model_fingerprint(run) != evaluation["model_sha256"]:
        assert run.read_metrics()["evaluation"]["stale"] is True
        assert main(["status", str(out)]) == 0
        assert "STALE: the model changed since" in capsys.readouterr().out


def test_sigterm_before_the_first_epoch_then_a_retry_with_other_options(
    digits_corpus, tmp_path, capsys
):
    out = tmp_path / "run"
    run = RunDirectory(out)
    argv = ["train", "--data", str(digits_corpus), "--out", str(out), "--epochs", "2",
            "--steps-per-epoch", "100000", *TINY]  # fmt: skip
    process = subprocess.Popen(cli(*argv), cwd=ROOT, env=quiet_environment(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    code, _, err = signal_when(process, run.state.is_file, signal.SIGTERM)
    assert code == 143, err
    # Before fit, or (on a slow machine) within the first epoch's steps.
    assert re.fullmatch(
        r"keras-attention train: interrupted (before the first epoch ended|at step \d+ of epoch 1); "
        r"run the same command to resume\n",
        err,
    ), err
    assert run_state.run_status(out)["state"] == "interrupted"

    # No epoch was trained, so other options are accepted without deleting anything by hand.
    retry = [*argv[:5], "--epochs", "1", "--steps-per-epoch", "3", *TINY, "--batch-size", "16"]
    assert main(retry) == 0
    assert json.loads(run.config.read_text())["batch_size"] == 16
    assert run_state.run_status(out)["state"] == "completed"


@pytest.mark.slow
def test_sigterm_mid_epoch_saves_the_step_and_the_same_command_finishes_the_epoch(
    digits_corpus, tmp_path
):
    out = tmp_path / "run"
    run = RunDirectory(out)
    argv = ["train", "--data", str(digits_corpus), "--out", str(out), "--epochs", "1",
            "--steps-per-epoch", "1500", *TINY]  # fmt: skip
    process = subprocess.Popen(cli(*argv), cwd=ROOT, env=quiet_environment(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    # fit has begun once TensorBoard's train log exists; let it take some steps.
    training_since = []

    def some_steps_taken():
        if not training_since and (run.logs / "train").is_dir():
            training_since.append(time.monotonic())
        return bool(training_since) and time.monotonic() - training_since[0] > 3

    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and process.poll() is None and not some_steps_taken():
        time.sleep(0.1)
    assert process.poll() is None, "training ended before the signal: " + process.stderr.read()
    signalled = time.monotonic()
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert time.monotonic() - signalled < 30, "a stop waits at most for one step and a backup"
    assert process.returncode == 143, err

    epoch, steps = backed_up_position(run.backup)
    assert epoch == 0 and 0 < steps < 1500
    assert err == (
        f"keras-attention train: interrupted at step {steps} of epoch 1; "
        "run the same command to resume\n"
    )
    assert history_epochs(run) == []
    assert run_state.run_status(out)["state"] == "interrupted"

    resumed = subprocess.run(cli(*argv), cwd=ROOT, env=quiet_environment(),
                             capture_output=True, text=True, timeout=600)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert history_epochs(run) == [0]
    assert run_state.run_status(out)["state"] == "completed"
    assert not run.backup.exists()


def test_a_corpus_too_small_to_split_leaves_nothing_behind(tmp_path, capsys):
    corpus = tmp_path / "two.tsv"
    corpus.write_text("Hello.\tBonjour.\nBye.\tSalut.\n", encoding="utf-8")
    out = tmp_path / "run"
    assert main(["train", "--data", str(corpus), "--out", str(out), *TINY]) == 2
    err = capsys.readouterr().err
    assert err.startswith("keras-attention train: error: ") and "Traceback" not in err
    assert not out.exists(), "nothing written, so nothing blocks a retry"


def test_translate_on_a_terminal_says_it_reads_stdin_and_stays_quiet(trained_digits_run):
    primary, secondary = pty.openpty()
    try:
        process = subprocess.Popen(cli("translate", str(trained_digits_run)), cwd=ROOT,
                                   env=quiet_environment(), stdin=secondary,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        os.close(secondary)
        os.write(primary, b"1 2 3\n\x04")  # a line, then Ctrl-D
        out, err = process.communicate(timeout=240)
    finally:
        os.close(primary)
    assert process.returncode == 0, err
    assert err == (
        "keras-attention translate: reading sentences from stdin, one per line "
        "(end with Ctrl-D; or pass TEXT arguments or --file)\n"
    )
    assert out.split()[:3] == ["un", "deux", "trois"]


def test_verbose_brings_tensorflow_logs_back(trained_digits_run):
    # Quiet by default: see the test above, whose stderr holds only our line.
    argv = cli("-v", "translate", str(trained_digits_run), "1 2")
    loud = subprocess.run(argv, cwd=ROOT, env=quiet_environment(), capture_output=True,
                          text=True, timeout=240)  # fmt: skip
    assert loud.returncode == 0, loud.stderr
    assert re.search(r"oneDNN|cuda|absl|cpu_feature_guard", loud.stderr), loud.stderr


def test_help_shows_choices_and_each_default_once(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = capsys.readouterr().out
    for choices in ("{luong,bahdanau,none}", "{gru,lstm}", "{auto,subwords,words}",
                    "{dot,general,concat,scaled_dot,cosine,location}",
                    "{auto,float32,mixed_bfloat16,mixed_float16}"):  # fmt: skip
        assert choices in text
    options = re.split(r"\n  (?=-)", text)
    assert len(options) > 25
    for option in options:
        assert option.count("(default:") <= 1, option
    assert "(default: None)" not in text
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--attention", "transformer"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'transformer'" in capsys.readouterr().err
