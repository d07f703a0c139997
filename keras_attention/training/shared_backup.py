"""`BackupAndRestore` for several workers: the chief writes, every worker restores."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import keras


def backed_up_epoch(backup_dir) -> int:
    """The epoch a `BackupAndRestore` in `backup_dir` resumes at (0 when there is none)."""
    for name in ("training_metadata.json", "training_metadata.json.bkp"):
        path = Path(backup_dir) / name
        if path.is_file():
            return int(json.loads(path.read_text(encoding="utf-8"))["epoch"])
    return 0


class SharedBackupAndRestore(keras.callbacks.BackupAndRestore):
    """Resume state in one shared directory, written by the chief only.

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
        **kwargs: passed to `keras.callbacks.BackupAndRestore`.
    """

    def __init__(self, backup_dir, is_chief=True, **kwargs):
        super().__init__(str(backup_dir), **kwargs)
        self.is_chief = is_chief
        self._shared_paths = self._paths()
        if is_chief:
            self._write_paths = self._shared_paths
            self._private_dir = None
        else:
            self._private_dir = tempfile.mkdtemp(prefix="keras_attention_backup_")
            shared = str(backup_dir)
            self._write_paths = tuple(
                p.replace(shared, self._private_dir, 1) for p in self._paths()
            )

    def _paths(self):
        return (
            self.backup_dir,
            self._weights_path,
            self._training_metadata_path,
            self._prev_weights_path,
            self._prev_training_metadata_path,
        )

    def _use(self, paths):
        (
            self.backup_dir,
            self._weights_path,
            self._training_metadata_path,
            self._prev_weights_path,
            self._prev_training_metadata_path,
        ) = paths

    def _save_model(self):
        self._use(self._write_paths)
        try:
            super()._save_model()
        finally:
            self._use(self._shared_paths)

    def on_train_end(self, logs=None):
        self._use(self._write_paths)
        try:
            super().on_train_end(logs)
        finally:
            self._use(self._shared_paths)
            if self._private_dir is not None:
                shutil.rmtree(self._private_dir, ignore_errors=True)
