"""Atomic writes and tolerant reads of files another process may be writing, on hand-made files."""

import json
import os
import threading
import time

import pytest

from keras_attention.runs import backup_files, run_state
from keras_attention.runs.backup_files import (
    backed_up_epoch,
    backup_records,
    complete_lines,
    read_backup,
    read_json,
    write_json_atomically,
    write_text_atomically,
)
from keras_attention.runs.run_directory import RunDirectory


def test_an_atomic_write_replaces_the_file_whole_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "state.json"
    path.write_text('{"old": true}')
    write_json_atomically(path, {"new": [1, 2]})
    assert json.loads(path.read_text()) == {"new": [1, 2]}
    assert os.listdir(tmp_path) == ["state.json"]


def test_a_failed_atomic_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "config.json"
    path.write_text("old\n")

    def broken_replace(source, destination):
        raise OSError("disk full")

    monkeypatch.setattr(backup_files.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        write_text_atomically(path, "new\n")
    assert path.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["config.json"], "the temporary file is removed"


def test_read_json_waits_out_a_write_in_progress(tmp_path):
    path = tmp_path / "training_metadata.json"
    path.write_text('{"epoch": 3, "ba')  # the first bytes of an in-place write

    def finish_the_write():
        time.sleep(0.08)
        path.write_text('{"epoch": 3, "batch": 0}')

    writer = threading.Thread(target=finish_the_write)
    writer.start()
    try:
        assert read_json(path, attempts=50, retry_seconds=0.01) == {"epoch": 3, "batch": 0}
    finally:
        writer.join()


def test_read_json_names_a_file_that_stays_broken_and_returns_none_without_one(tmp_path):
    path = tmp_path / "metrics.json"
    assert read_json(path) is None
    path.write_text('{"training": ')
    with pytest.raises(ValueError, match=r"metrics\.json' is not complete JSON after 3 reads"):
        read_json(path, attempts=3, retry_seconds=0)


def test_complete_lines_leave_out_a_row_being_written(tmp_path):
    path = tmp_path / "history.csv"
    assert complete_lines(path) == []
    path.write_bytes(b"epoch,loss,val_loss\r\n0,2.5,2.4\r\n1,2.1,2.")
    assert complete_lines(path) == ["epoch,loss,val_loss", "0,2.5,2.4"]


def write_backup(directory, name, metadata, weights=None, weights_bytes=b"h5"):
    directory.mkdir(exist_ok=True)
    (directory / name).write_text(json.dumps(metadata) if isinstance(metadata, dict) else metadata)
    if weights:
        (directory / weights).write_bytes(weights_bytes)


def test_the_latest_complete_backup_is_read(tmp_path):
    backup = tmp_path / "backup"
    assert read_backup(backup) is None and backed_up_epoch(backup) == 0
    write_backup(backup, "training_metadata.json.bkp",
                 {"epoch": 1, "weights": "epoch-1.weights.h5", "weights_bytes": 2},
                 "epoch-1.weights.h5")  # fmt: skip
    write_backup(backup, "training_metadata.json",
                 {"epoch": 2, "weights": "epoch-2.weights.h5", "weights_bytes": 2},
                 "epoch-2.weights.h5")  # fmt: skip
    record = read_backup(backup)
    assert (record.epoch, record.weights.name) == (2, "epoch-2.weights.h5")
    assert [r.epoch for r in backup_records(backup)] == [2, 1]
    assert backed_up_epoch(backup) == 2


@pytest.mark.parametrize(
    "latest",
    [
        pytest.param('{"epoch": 2, "weights": "epoch-2.wei', id="half-written metadata"),
        pytest.param({"epoch": 2, "weights": "epoch-2.weights.h5"}, id="weights not written"),
        pytest.param(
            {"epoch": 2, "weights": "epoch-1.weights.h5", "weights_bytes": 99}, id="short weights"
        ),
        pytest.param({"epoch": "2"}, id="no int epoch"),
        pytest.param("[2]", id="not an object"),
    ],
)
def test_an_incomplete_latest_backup_falls_back_to_the_previous_one(tmp_path, latest):
    backup = tmp_path / "backup"
    write_backup(backup, "training_metadata.json.bkp",
                 {"epoch": 1, "weights": "epoch-1.weights.h5", "weights_bytes": 2},
                 "epoch-1.weights.h5")  # fmt: skip
    write_backup(backup, "training_metadata.json", latest)
    record = read_backup(backup)
    assert (record.epoch, record.weights.name) == (1, "epoch-1.weights.h5")
    assert backed_up_epoch(backup) == 1


def test_keras_own_backup_layout_pairs_metadata_with_latest_weights(tmp_path):
    """Backups written by Keras' BackupAndRestore (runs from before) still resume."""
    backup = tmp_path / "backup"
    write_backup(backup, "training_metadata.json", {"epoch": 4, "batch": 0}, "latest.weights.h5")
    write_backup(backup, "training_metadata.json.bkp", {"epoch": 3, "batch": 0},
                 "latest.weights.h5.bkp")  # fmt: skip
    assert [(r.epoch, r.weights.name) for r in backup_records(backup)] == [
        (4, "latest.weights.h5"),
        (3, "latest.weights.h5.bkp"),
    ]


def test_epochs_done_counts_the_complete_backup_then_complete_history_rows(tmp_path):
    run = RunDirectory(tmp_path / "run")
    run.path.mkdir()
    run.history.write_text("epoch,loss,val_loss\n0,2,2\n1,1.5,1.6\n2,1.2,1.")  # row 3 half
    assert run_state.epochs_done(run) == 2
    write_backup(run.backup, "training_metadata.json", '{"epoch": 3, "bat')  # half-written
    assert run_state.epochs_done(run) == 2, "a half-written backup falls back to history.csv"
    write_backup(run.backup, "training_metadata.json.bkp", {"epoch": 1, "batch": 0})
    assert run_state.epochs_done(run) == 1, "then the previous backup"
