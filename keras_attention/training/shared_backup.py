"""`BackupAndRestore` that resumes exactly: every state a step reads, for one or several workers."""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path

import keras
import numpy as np

from keras_attention.runs.backup_files import (
    METADATA,
    PREVIOUS_METADATA,
    backup_records,
    read_backup,
    temporary_path,
    write_json_atomically,
)

logger = logging.getLogger(__name__)


# The attributes of Keras callbacks that carry their decisions from one epoch to the next.
CALLBACK_STATE = {
    keras.callbacks.EarlyStopping: ("wait", "best", "best_epoch"),
    keras.callbacks.ModelCheckpoint: ("best",),
}


def callback_state(callback) -> dict:
    """The epoch-to-epoch state of a Keras `EarlyStopping` or `ModelCheckpoint`, JSON-able."""
    for kind, names in CALLBACK_STATE.items():
        if isinstance(callback, kind):
            return {name: _plain(getattr(callback, name, None)) for name in names}
    raise TypeError(
        f"Only the state of {[k.__name__ for k in CALLBACK_STATE]} is backed up. "
        f"Received: {type(callback).__name__}"
    )


def _plain(value):
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return float(value)  # numpy and Python floats, including inf


def seed_generator_states(model) -> list:
    """The state variables of `model`'s `keras.random.SeedGenerator`s (dropout), in model order.

    Keras lists them in `model.variables` ("all layer state, including random
    seeds") but not in `model.weights`, so `model.save_weights` leaves them out.
    """
    weights = {id(v) for v in model.weights}
    return [v for v in model.variables if id(v) not in weights]


def metric_states(model) -> list:
    """The state variables of `model`'s metrics (the loss tracker's and the compiled ones').

    Keras resets them at each epoch's start; they hold the epoch's running
    means that `fit` logs.
    """
    return [variable for metric in model.metrics for variable in metric.variables]


def build_metrics(model) -> None:
    """Builds `model`'s compiled metrics now (Keras builds them at the first step).

    So that `metric_states` lists the same variables before `fit` (when a
    resumed epoch's states are restored) as after a step (when they were
    saved). Call within the distribution strategy's scope.
    """
    compiled = getattr(model, "_compile_metrics", None)
    if compiled is not None and not compiled.built:
        compiled.build(keras.ops.zeros((1, 1), "int32"), keras.ops.zeros((1, 1, 2)))


class FinishResumedEpoch(keras.callbacks.Callback):
    """Ends the first epoch of a run resumed mid-epoch after its remaining steps.

    `fit` runs every epoch for `steps_per_epoch` steps; an epoch resumed after
    `done` of its steps has `steps_per_epoch - done` left. After them this
    callback stops the epoch (Keras then validates and runs every epoch-end
    callback as usual) and, first in the list at the epoch's end, lets `fit`
    go on to the next epoch, from the same data iterator, unless `keep_stopped()`
    says another callback stopped training at the same step (the time budget).

    Put it first in `fit`'s callback list.
    """

    def __init__(self, remaining_steps: int, keep_stopped=lambda: False):
        super().__init__()
        self.remaining_steps = remaining_steps
        self.keep_stopped = keep_stopped
        self._steps = 0
        self._cut = False
        self._done = False

    def on_train_batch_end(self, batch, logs=None):
        if self._done:
            return
        self._steps += 1
        if self._steps >= self.remaining_steps and not self.model.stop_training:
            self.model.stop_training = True
            self._cut = True

    def on_epoch_end(self, epoch, logs=None):
        if self._cut and not self.keep_stopped():
            self.model.stop_training = False
        self._cut = False
        self._done = True


class SharedBackupAndRestore(keras.callbacks.BackupAndRestore):
    """Resume state that brings a run back exactly as it was at its last epoch end.

    Keras 3's `BackupAndRestore` saves `model.save_weights` (the model's and
    the optimizer's variables: Adam's moments and its iteration count, which
    the learning-rate schedule follows) and the epoch. It leaves out the
    state of the model's random seed generators, so a resumed run drew the
    dropout masks of the first epoch again and trained to other weights. Here
    a backup (written at each epoch end) holds:

    1. `epoch-N.weights.h5`: `model.save_weights`, written to a temporary
       file and renamed;
    2. `training_metadata.json`: the epoch `N`, the name and size of that
       weights file, the optimizer's iteration count, every `SeedGenerator`
       state (`seed_generator_states`) and the state of the given
       `callbacks` (early stopping's patience count and best value, the
       checkpoint's best value: `callback_state`). Written after the
       weights, atomically (temporary file and `os.replace`): it is the
       commit point. The previous metadata is kept as
       `training_metadata.json.bkp` with its weights file, so a kill at any
       moment leaves at least one complete backup (`backup_files.read_backup`).

    A backup is also written mid-epoch by `save_position` (when a signal
    stops the run: `InterruptOnSignal`'s `on_interrupt`): then `batch` in
    the metadata counts the epoch's steps done, and the metadata holds the
    state of the model's metrics (the epoch's running loss and accuracy),
    restored when the resumed epoch begins, so that epoch logs the figures an
    uninterrupted one does. The caller finishes that epoch after its
    remaining steps (`FinishResumedEpoch`).

    The data stream is the caller's: it positions it at the restored position
    (a deterministic stream, `skip(epoch * steps_per_epoch + batch)`) and
    passes that position as `expected_position`; restoring any other raises.

    Keras 3's `BackupAndRestore` has no multi-worker logic: every worker
    would write the same files (and race), or each its own (and the workers
    may restore different epochs, which breaks the collectives). Here every
    worker restores from `backup_dir` (shared storage, the run directory)
    and only the chief writes it; the other workers write the same files
    into a private temporary directory (so all workers run the same code
    and the same collectives), removed when training ends.

    Args:
        backup_dir: the shared backup directory.
        is_chief: bool, whether this process writes `backup_dir`.
        expected_position: `(epoch, batch)` or `None`, where the caller
            positioned the data (`backed_up_position(backup_dir)`); `None`
            checks nothing.
        callbacks: dict, name -> `EarlyStopping` or `ModelCheckpoint`
            whose state is backed up and restored. Put this callback after
            them in `fit`'s list, so that it records their state after the
            epoch.
        delete_checkpoint: bool, remove the backup when training ends.
    """

    def __init__(
        self,
        backup_dir,
        is_chief=True,
        expected_position=None,
        callbacks=None,
        delete_checkpoint=True,
    ):
        super().__init__(
            str(backup_dir),
            save_freq="epoch",
            double_checkpoint=True,
            delete_checkpoint=delete_checkpoint,
        )
        self.is_chief = is_chief
        self.expected_position = None if expected_position is None else tuple(expected_position)
        self._epoch = 0
        self._steps_done = 0  # training steps done in epoch `_epoch`
        self._restored_steps = 0  # steps of the first epoch done before the resume
        self._metric_states = None  # restored when the resumed epoch begins
        self.callbacks = dict(callbacks or {})
        for callback in self.callbacks.values():
            callback_state(callback)  # raises for a callback it cannot restore
        self.restored_epoch = None
        self._shared_dir = Path(backup_dir)
        if is_chief:
            self._write_dir = self._shared_dir
            self._private_dir = None
        else:
            self._private_dir = tempfile.mkdtemp(prefix="keras_attention_backup_")
            self._write_dir = Path(self._private_dir)

    def on_train_begin(self, logs=None):
        record = read_backup(self._shared_dir)
        position = (0, 0) if record is None else (record.epoch, record.batch)
        if self.expected_position is not None and position != self.expected_position:
            raise ValueError(
                f"The backup in {str(self._shared_dir)!r} resumes at (epoch, step) {position}, "
                f"but the training data was positioned at {self.expected_position}; the "
                "backup changed while training started (is another process writing it?)"
            )
        epoch = position[0]
        self.restored_epoch = epoch
        self._epoch, self._restored_steps = position
        if record is None:
            return
        if not self.model.built:
            raise ValueError(
                "To use the BackupAndRestore callback, your model must be built before you "
                f"call `fit()`. Model {self.model} is unbuilt."
            )
        if record.weights.is_file():
            if self.model.optimizer is not None and not self.model.optimizer.built:
                self.model.optimizer.build(self.model.trainable_variables)
            self.model.load_weights(record.weights)
        self._restore_seed_generators(record)
        saved = record.metadata.get("callbacks", {})
        for name, callback in self.callbacks.items():
            for attribute, value in saved.get(name, {}).items():
                setattr(callback, attribute, value)
        iterations = record.metadata.get("iterations")
        optimizer = self.model.optimizer
        if iterations is not None and optimizer is not None:
            if int(optimizer.iterations.numpy()) != iterations:
                raise ValueError(
                    f"The backup {str(record.weights)!r} holds an optimizer at step "
                    f"{int(optimizer.iterations.numpy())}, but its metadata "
                    f"{str(record.metadata_path)!r} records step {iterations}"
                )
        self._metric_states = record.metadata.get("metrics")
        self.model._initial_epoch = epoch

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        self._steps_done = self._restored_steps
        self._restored_steps = 0
        if self._metric_states is not None:  # after Keras reset the metrics for the epoch
            variables = metric_states(self.model)
            if len(variables) != len(self._metric_states):
                raise ValueError(
                    f"The backup in {str(self._shared_dir)!r} holds {len(self._metric_states)} "
                    f"metric states, but the model has {len(variables)}"
                )
            for variable, state in zip(variables, self._metric_states, strict=True):
                variable.assign(np.asarray(state, dtype=variable.dtype))
            self._metric_states = None

    def on_train_batch_end(self, batch, logs=None):
        self._steps_done += 1

    def save_position(self) -> None:
        """Writes a backup of the run where it is now, mid-epoch (see the class docstring)."""
        self._current_epoch = self._epoch
        self._last_batch_seen = self._steps_done
        self._save_model(
            metrics=[np.asarray(v.numpy()).tolist() for v in metric_states(self.model)]
        )

    def _restore_seed_generators(self, record):
        states = record.metadata.get("seed_generators")
        variables = seed_generator_states(self.model)
        if states is None:
            if variables:
                logger.warning(
                    "The backup in %s has no random-generator states (written by an older "
                    "version): the resumed epochs draw other dropout masks than an "
                    "uninterrupted run would.",
                    self._shared_dir,
                )
            return
        if len(states) != len(variables):
            raise ValueError(
                f"The backup in {str(self._shared_dir)!r} holds {len(states)} random-generator "
                f"states, but the model has {len(variables)}: it was written by another model"
            )
        for variable, state in zip(variables, states, strict=True):
            variable.assign(np.asarray(state, dtype=variable.dtype))

    def _save_model(self, metrics=None):
        directory = self._write_dir
        directory.mkdir(parents=True, exist_ok=True)
        name = f"epoch-{self._current_epoch}.weights.h5"
        weights = directory / name
        tmp = temporary_path(weights).with_suffix(".weights.h5")  # Keras checks the suffix
        self.model.save_weights(str(tmp), overwrite=True)
        tmp.replace(weights)
        optimizer = self.model.optimizer
        metadata = {
            "epoch": self._current_epoch,
            "batch": self._last_batch_seen,
            "weights": name,
            "weights_bytes": weights.stat().st_size,
            "iterations": None if optimizer is None else int(optimizer.iterations.numpy()),
            "seed_generators": [
                np.asarray(v.numpy()).tolist() for v in seed_generator_states(self.model)
            ],
            "callbacks": {name: callback_state(c) for name, c in self.callbacks.items()},
        }
        if metrics is not None:
            metadata["metrics"] = metrics
        keep = {name}
        previous = backup_records(directory)
        if previous:
            # The latest backup becomes the previous one, its weights file named explicitly.
            write_json_atomically(
                directory / PREVIOUS_METADATA,
                {**previous[0].metadata, "weights": previous[0].weights.name},
            )
            keep.add(previous[0].weights.name)
        write_json_atomically(directory / METADATA, metadata)
        for path in directory.iterdir():
            if path.name.endswith((".weights.h5", ".weights.h5.bkp")) and path.name not in keep:
                path.unlink(missing_ok=True)

    def on_train_end(self, logs=None):
        if self.delete_checkpoint:
            shutil.rmtree(self._write_dir, ignore_errors=True)
        if self._private_dir is not None:
            shutil.rmtree(self._private_dir, ignore_errors=True)
