"""Files that one process writes while another reads them: atomic writes, tolerant reads.

Plain Python (no TensorFlow), so `keras-attention status` reads a run in a
running training instantly. Three kinds of files:

- our own JSON state (`state.json`, `metrics.json`, `config.json`, the
  backup's `training_metadata.json`): written whole into a temporary file in
  the same directory, then renamed over the old one (`os.replace`, atomic on
  POSIX and Windows), so a reader sees the old or the new file, never half;
- files written in place by others (Keras' `CSVLogger` appends rows to
  history.csv, and backups made before the backups were written atomically):
  readers retry a file that does not parse, and use only complete lines;
- the resume backup (`backup/`): its metadata names the weights file it
  belongs to, and is written last (see `read_backup`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

METADATA = "training_metadata.json"
PREVIOUS_METADATA = "training_metadata.json.bkp"
# The weights file of a backup whose metadata names none (Keras' own layout).
KERAS_WEIGHTS = {METADATA: "latest.weights.h5", PREVIOUS_METADATA: "latest.weights.h5.bkp"}

READ_ATTEMPTS = 5
READ_RETRY_SECONDS = 0.05


def temporary_path(path: str | os.PathLike) -> Path:
    """A file name beside `path` for writing it before the rename (unique to this process)."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def write_bytes_atomically(path: str | os.PathLike, data: bytes) -> Path:
    """Writes `data` to `path` so that readers see the old or the new file, never half."""
    path = Path(path)
    tmp = temporary_path(path)
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_text_atomically(path: str | os.PathLike, text: str) -> Path:
    """`text` in UTF-8, written with `write_bytes_atomically`."""
    return write_bytes_atomically(path, text.encode("utf-8"))


def write_json_atomically(path: str | os.PathLike, value: Any) -> Path:
    """`value` as indented JSON (sorted keys), written with `write_text_atomically`."""
    return write_text_atomically(path, json.dumps(value, indent=2, sort_keys=True) + "\n")


def read_json(
    path: str | os.PathLike,
    attempts: int = READ_ATTEMPTS,
    retry_seconds: float = READ_RETRY_SECONDS,
) -> Any:
    """The JSON value in `path`; `None` when there is no such file.

    A file that does not parse (another process is writing it in place) is
    read again, `attempts` times in all, `retry_seconds` apart.

    Raises:
        ValueError: the file still does not parse after the last attempt; the
            message names the file.
    """
    path = Path(path)
    for attempt in range(attempts):
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            if attempt == attempts - 1:
                raise ValueError(
                    f"{str(path)!r} is not complete JSON after {attempts} reads "
                    f"({type(error).__name__}: {error})"
                ) from None
            time.sleep(retry_seconds)
    raise AssertionError("unreachable")


def complete_lines(path: str | os.PathLike) -> list[str]:
    """The lines of a text file another process appends to, without a half-written last one.

    A last line with no newline yet is still being written (Keras' `CSVLogger`
    writes each row, then its newline); it is left out. `[]` when there is
    no file.
    """
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    return text[: text.rfind("\n") + 1].splitlines()


@dataclasses.dataclass(frozen=True)
class BackupRecord:
    """One complete resume backup: its metadata and the weights file it belongs to.

    Attributes:
        epoch: the epochs completed when it was written (the epoch to resume at).
        weights: the path of its weights file (`model.save_weights`: the model's
            and the optimizer's variables).
        metadata: the whole metadata dict (`seed_generators`, `iterations`, ...).
        metadata_path: the file it was read from (the latest or the previous one).
    """

    epoch: int
    weights: Path
    metadata: dict
    metadata_path: Path

    @property
    def batch(self) -> int:
        """Training steps done in epoch `epoch` (0 for a backup written at an epoch's end)."""
        return int(self.metadata.get("batch") or 0)


def backup_records(backup_dir: str | os.PathLike) -> list[BackupRecord]:
    """The complete backups in `backup_dir`, latest first (at most two).

    A metadata file counts when it parses (retried while it is being
    written) and holds an int `epoch`; one that names its weights file (the
    backups written by `SharedBackupAndRestore`) counts only when that file
    is there with the size it records. Metadata in Keras' own layout (no
    `weights` key) pairs with `latest.weights.h5` (or its `.bkp`), as Keras
    pairs them.
    """
    backup_dir = Path(backup_dir)
    records = []
    for name in (METADATA, PREVIOUS_METADATA):
        path = backup_dir / name
        try:
            metadata = read_json(path)
        except ValueError:
            continue  # half-written by an older, in-place writer: try the previous one
        if not isinstance(metadata, dict):
            continue
        epoch = metadata.get("epoch")
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            continue
        weights = backup_dir / metadata.get("weights", KERAS_WEIGHTS[name])
        if "weights" in metadata:
            try:
                size = weights.stat().st_size
            except FileNotFoundError:
                continue
            if metadata.get("weights_bytes", size) != size:
                continue
        records.append(BackupRecord(epoch, weights, metadata, path))
    return records


def read_backup(backup_dir: str | os.PathLike) -> BackupRecord | None:
    """The latest complete backup in `backup_dir` (`None` when there is none)."""
    records = backup_records(backup_dir)
    return records[0] if records else None


def backed_up_epoch(backup_dir) -> int:
    """The epoch a `SharedBackupAndRestore` in `backup_dir` resumes at (0 when there is none).

    The epoch of the latest complete backup (`read_backup`): a
    metadata file being written is read again, and one whose weights file is
    missing or short is passed over for the previous backup.
    """
    return backed_up_position(backup_dir)[0]


def backed_up_position(backup_dir) -> tuple[int, int]:
    """`(epoch, steps done in it)` where a `SharedBackupAndRestore` in `backup_dir` resumes.

    `(0, 0)` when there is no backup; the steps are 0 for a backup written at
    an epoch's end, more for one written when a signal stopped the run
    mid-epoch (`SharedBackupAndRestore.save_position`).
    """
    record = read_backup(backup_dir)
    return (0, 0) if record is None else (record.epoch, record.batch)
