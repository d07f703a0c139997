"""The life of a run directory: its state, its epochs, and whether its evaluation is current.

A run is in one of four states, kept in `RUN_DIR/state.json`:

- `training`: a `train` process is writing to it (its pid is recorded; if
  that process is gone, e.g. killed with SIGKILL, the run reads as
  `interrupted`);
- `interrupted`: stopped by SIGINT/SIGTERM (or killed) before the end; the
  same `train` command resumes it from the last completed epoch;
- `completed`: training ended (all epochs, early stopping or time budget);
- `failed`: training raised an error; re-running resumes when epochs were
  done, and starts afresh (any options) when none were.

This module is plain Python (no TensorFlow), so `keras-attention status`
answers instantly.
"""

from __future__ import annotations

import csv
import datetime
import hashlib
import math
import os
import socket
from typing import Any

from keras_attention.runs.backup_files import (
    complete_lines,
    read_backup,
    read_json,
    write_json_atomically,
)
from keras_attention.runs.run_directory import RunDirectory

TRAINING = "training"
INTERRUPTED = "interrupted"
COMPLETED = "completed"
FAILED = "failed"
STATES = (TRAINING, INTERRUPTED, COMPLETED, FAILED)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def read_state(run: RunDirectory) -> dict[str, Any]:
    """state.json as a dict (`{}` when there is none).

    A `training` state whose process no longer runs on this host is returned
    as `interrupted`, with `"process_gone": True`.
    """
    try:
        state = read_json(run.state)  # written atomically; retried all the same
    except ValueError:
        state = None
    if not isinstance(state, dict):
        return {}
    if state.get("state") == TRAINING and not _process_alive(state):
        state = {**state, "state": INTERRUPTED, "process_gone": True}
    return state


def write_state(run: RunDirectory, state: str, **fields: Any) -> dict[str, Any]:
    """Writes state.json atomically: `state`, the time, this process, and `fields`."""
    if state not in STATES:
        raise ValueError(f"`state` must be one of {STATES}. Received: state={state!r}")
    record = {
        "state": state,
        "updated": _now(),
        "pid": os.getpid(),
        "host": socket.gethostname(),
        **fields,
    }
    run.path.mkdir(parents=True, exist_ok=True)
    write_json_atomically(run.state, record)
    return record


def _process_alive(state: dict[str, Any]) -> bool:
    pid = state.get("pid")
    if not isinstance(pid, int) or state.get("host") != socket.gethostname():
        return True  # another machine's process: we cannot tell, so trust the file
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def other_live_trainer(run: RunDirectory) -> int | None:
    """The pid of another process training into `run` right now, if any."""
    state = read_state(run)
    if state.get("state") == TRAINING and state.get("pid") != os.getpid():
        return state.get("pid")
    return None


def epochs_done(run: RunDirectory) -> int:
    """Epochs completed so far, over all sessions of the run.

    While a run is unfinished, its latest complete resume backup counts them
    (`backup_files.read_backup`); otherwise the complete rows of history.csv.
    """
    backup = read_backup(run.backup)
    if backup is not None:
        return backup.epoch
    lines = [line for line in complete_lines(run.history) if line.strip()]
    return max(0, len(lines) - 1)  # minus the header


def model_fingerprint(run: RunDirectory) -> str | None:
    """SHA-256 of model.keras (`None` without one): what an evaluation was made of."""
    if not run.model.is_file():
        return None
    digest = hashlib.sha256()
    with open(run.model, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def evaluation_is_current(
    run: RunDirectory, evaluation: dict[str, Any] | None = None
) -> bool | None:
    """Whether metrics.json's evaluation was made of the model.keras there now.

    `None` for an evaluation that predates recorded model fingerprints (it
    cannot tell); `False` without an evaluation, or for one marked stale.
    """
    if evaluation is None:
        evaluation = run.read_metrics().get("evaluation")
    if not evaluation or evaluation.get("stale"):
        return False
    recorded = evaluation.get("model_sha256")
    if recorded is None:
        return None
    return recorded == model_fingerprint(run)


def mark_stale_evaluation(run: RunDirectory) -> bool:
    """Flags metrics.json's evaluation `"stale": true` if the model changed since.

    Returns whether an evaluation was (or already was) marked stale.
    """
    evaluation = run.read_metrics().get("evaluation")
    if not evaluation:
        return False
    if evaluation.get("stale"):
        return True
    if evaluation_is_current(run, evaluation) is True:
        return False
    run.update_metrics(evaluation={**evaluation, "stale": True})
    return True


def recorded_state(run: RunDirectory) -> str | None:
    """The state `run` records (`read_state`), or `COMPLETED` for a run from before
    state.json whose metrics.json says its training completed; `None` without either."""
    state = read_state(run).get("state")
    if state is None and run.read_metrics().get("training", {}).get("completed"):
        return COMPLETED
    return state


def is_completed(run: RunDirectory) -> bool:
    """Whether `run`'s training has ended (state.json, or metrics.json for older runs)."""
    return recorded_state(run) == COMPLETED


def _saved_config(run: RunDirectory, saved):
    """`saved`, the run's `TrainConfig` if the caller has read it, else config.json's."""
    if saved is not None or not run.config.is_file():
        return saved
    from keras_attention.runs.train_config import TrainConfig

    return TrainConfig.load(run.path)


def completed_with(run: RunDirectory, config, saved=None) -> bool:
    """Whether `run` already completed its training with `config` (any `out` spelling).

    `False` for a run that has not completed (or a directory with no run).
    `saved`: the run's saved `TrainConfig` when the caller has read it (else
    config.json is read).

    Raises:
        ValueError: `run` completed with other options; the message lists
            just the fields that differ, `batch_size: 64 -> 32`.
    """
    if not is_completed(run):
        return False
    where = str(run.path)
    done = epochs_done(run)
    saved = _saved_config(run, saved)
    if saved is None:
        raise ValueError(
            f"{where!r} already holds a completed training run ({done} epochs) without its "
            f"{run.CONFIG}; train into another --out directory"
        )
    differences = saved.differences(config)
    if differences:
        raise ValueError(
            f"{where!r} already holds a completed training run ({done} "
            f"epoch{'s' if done != 1 else ''}) trained with other options: "
            f"{'; '.join(differences)} (saved -> given). Evaluate it as it is, or train into "
            "another --out directory."
        )
    return True


def claim_run_directory(run: RunDirectory, config, saved=None) -> int:
    """Checks that `config` may train into `run`; returns the epochs done before.

    `saved`: the run's saved `TrainConfig` when the caller has read it (else
    config.json is read).

    - A directory another live process is training into is refused.
    - A completed run is refused (`completed_with` tells a caller first
      whether it completed with the same options, i.e. there is nothing to do).
    - A run with completed epochs resumes only with the same config (any
      `out` spelling); otherwise the error lists just the fields that differ,
      `batch_size: 64 -> 32`.
    - A run with no completed epoch (it failed or was stopped early) never
      blocks a retry: with other options its leftovers are removed and
      training starts afresh.

    Raises:
        ValueError: the run cannot be trained with `config`.
    """
    import shutil

    where = str(run.path)
    pid = other_live_trainer(run)
    if pid is not None:
        raise ValueError(f"{where!r} is being trained by another process (pid {pid})")
    saved = _saved_config(run, saved)
    if completed_with(run, config, saved):
        raise ValueError(
            f"{where!r} already holds a completed training run with these options; "
            "evaluate it or train into another --out directory"
        )
    if saved is None:
        return epochs_done(run)
    differences = saved.differences(config)
    done = epochs_done(run)
    if not differences:
        return done
    if done == 0 and not run.model.is_file():
        for path in run.restart_leftovers():
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
        return 0
    raise ValueError(
        f"{where!r} holds a run ({done} epoch{'s' if done != 1 else ''} done) trained with "
        f"other options: {'; '.join(differences)} (saved -> given). Re-run with the saved "
        "options to resume, or use another --out directory."
    )


def directory_size(path: str | os.PathLike) -> int:
    """Bytes of all files under `path`."""
    total = 0
    for directory, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except OSError:
                pass
    return total


def planned_epochs(run: RunDirectory, config) -> int:
    """The epochs a run trains: its budget plan's (plan.json), else the `TrainConfig`'s most."""
    if run.plan.is_file():
        plan = read_json(run.plan)
        return math.ceil(plan["planned_steps"] / plan["steps_per_epoch"])
    return config.maximum_epochs


def run_status(run_dir: str | os.PathLike) -> dict[str, Any]:
    """What `keras-attention status` shows, as a dict.

    Keys: `path`, `state` (one of `STATES`, or `"new"` for a directory with
    no training yet), `epochs_done`, `epochs_planned`, `best_val_loss`,
    `error` (for `failed`), `evaluation` (`None`, or `bleu` per decoding,
    `sentences`, `epochs`, `current`), `disk_bytes`.

    Raises:
        FileNotFoundError: `run_dir` does not exist or holds no run.
    """
    from keras_attention.runs.train_config import TrainConfig

    run = RunDirectory(run_dir)
    if not run.path.is_dir():
        raise FileNotFoundError(f"Run directory {str(run.path)!r} does not exist")
    if not run.config.is_file():
        raise FileNotFoundError(f"{str(run.path)!r} is not a run directory: no {run.CONFIG}")
    config = TrainConfig.load(run.path)
    state = read_state(run)
    metrics = run.read_metrics()
    training = metrics.get("training", {})
    name = recorded_state(run)
    if name is None:  # a run from before state.json, or one with no training yet
        name = INTERRUPTED if epochs_done(run) else "new"
    status: dict[str, Any] = {
        "path": str(run.path),
        "state": name,
        "epochs_done": epochs_done(run),
        "epochs_planned": planned_epochs(run, config),
        "best_val_loss": best_validation_loss(run),
        "stopped_by": training.get("stopped_by") if name == COMPLETED else None,
        "error": state.get("error") if name == FAILED else None,
        "process_gone": bool(state.get("process_gone")),
        "pid": state.get("pid") if name == TRAINING else None,
        "evaluation": None,
        "disk_bytes": directory_size(run.path),
    }
    evaluation = metrics.get("evaluation")
    if evaluation:
        status["evaluation"] = {
            "sentences": evaluation.get("sentences"),
            "bleu": {k: evaluation[k]["bleu"] for k in ("greedy", "beam") if k in evaluation},
            "epochs": evaluation.get("epochs"),
            "training_state": evaluation.get("training_state"),
            "current": evaluation_is_current(run, evaluation),
        }
    return status


def best_validation_loss(run: RunDirectory) -> float | None:
    """The lowest val_loss in history.csv (from before a resume), if any."""
    rows = csv.DictReader(complete_lines(run.history))  # CSVLogger may be writing a row
    losses = [float(row["val_loss"]) for row in rows if row.get("val_loss")]
    return min(losses) if losses else None


def _size(num_bytes: int) -> str:
    value = float(num_bytes)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_status(status: dict[str, Any]) -> str:
    """`run_status`'s dict as the lines `keras-attention status` prints."""
    state = status["state"]
    detail = ""
    if state == TRAINING:
        detail = f" (process {status['pid']})"
    elif state == INTERRUPTED:
        detail = " (the training process is gone)" if status["process_gone"] else ""
        detail += "; run the same train command to resume"
    elif state == FAILED:
        detail = f": {status['error']}" if status["error"] else ""
    elif state == COMPLETED and status["stopped_by"]:
        detail = f" (stopped by {status['stopped_by']})"
    best = status["best_val_loss"]
    lines = [
        f"run:        {status['path']}",
        f"state:      {state}{detail}",
        f"epochs:     {status['epochs_done']} of {status['epochs_planned']}",
        f"best val_loss: {'n/a' if best is None else f'{best:.4f}'}",
    ]
    evaluation = status["evaluation"]
    if evaluation is None:
        lines.append("evaluation: none (keras-attention evaluate RUN_DIR)")
    else:
        scores = ", ".join(f"{k} BLEU {v:.2f}" for k, v in evaluation["bleu"].items())
        made = f" of epoch {evaluation['epochs']}" if evaluation.get("epochs") is not None else ""
        if evaluation.get("training_state") not in (None, COMPLETED):
            made += f" ({evaluation['training_state']} run: partial model)"
        if evaluation["current"] is None:
            current = (
                "of an unrecorded model (older evaluation); run keras-attention evaluate again"
            )
        elif evaluation["current"]:
            current = "current"
        else:
            current = "STALE: the model changed since; run keras-attention evaluate again"
        lines.append(
            f"evaluation: {scores} on {evaluation['sentences']} sentences{made}; {current}"
        )
    lines.append(f"disk:       {_size(status['disk_bytes'])}")
    return "\n".join(lines)
