"""`TrainingRun.open`: the saved config read once, `auto` resolved into a new, frozen config."""

import dataclasses
import pathlib

import pytest

from keras_attention.runs import run_state, training_run
from keras_attention.runs.run_directory import RunDirectory
from keras_attention.runs.train_config import TrainConfig
from keras_attention.runs.training_run import TrainingRun

SAVED = {"tokenizer": "words", "source_vocabulary_size": 20, "target_vocabulary_size": 30}


@pytest.fixture
def saved_run(tmp_path, monkeypatch):
    """A run directory whose config.json holds float32, words 20/30; reading data fails."""
    TrainConfig(out=str(tmp_path), precision="float32", **SAVED).save(tmp_path)

    def no_reading(config):
        raise AssertionError("the corpus was read")

    monkeypatch.setattr(training_run, "sample_splits", no_reading)
    return tmp_path


def test_open_resolves_auto_from_the_saved_config_read_once(saved_run, monkeypatch):
    reads = []
    read_text = pathlib.Path.read_text

    def counted(path, *args, **kwargs):
        reads.append(path.name)
        return read_text(path, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "read_text", counted)
    asked = TrainConfig(out=str(saved_run))
    choices = []
    run = TrainingRun.open(asked, on_choice=lambda name, choice: choices.append(name))
    assert reads.count("config.json") == 1
    assert choices == ["precision", "tokenizer"]
    assert (run.config.precision, run.config.tokenizer) == ("float32", "words")
    assert (run.config.source_vocabulary_size, run.config.target_vocabulary_size) == (20, 30)
    assert "saved precision" in run.precision.describe()
    assert "saved choice" in run.tokenizer.describe()
    # The config asked for is unchanged: the run's is a new one, and neither can change.
    assert (asked.precision, asked.tokenizer, asked.source_vocabulary_size) == ("auto",) * 3
    assert run.config == dataclasses.replace(asked, precision="float32", **SAVED)
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.config.batch_size = 8  # type: ignore[misc]
    assert not run.completed and not run.claimed


def test_a_completed_run_is_recognised_and_reports_no_choice(saved_run):
    directory = RunDirectory(saved_run)
    run_state.write_state(directory, run_state.COMPLETED, epochs_done=2)
    directory.update_metrics(training={"completed": True, "epochs_run": 2})
    choices = []
    run = TrainingRun.open(TrainConfig(out=str(saved_run)), on_choice=lambda *c: choices.append(c))
    assert run.completed and choices == []
    assert run.recorded_summary() == {
        "completed": True,
        "epochs_run": 2,
        "epochs_this_session": 0,
        "already_completed": True,
    }
    with pytest.raises(ValueError, match="batch_size: 64 -> 8"):
        TrainingRun.open(TrainConfig(out=str(saved_run), batch_size=8))


def test_the_run_directory_names_the_files_a_restart_removes(tmp_path):
    directory = RunDirectory(tmp_path)
    leftovers = directory.restart_leftovers()
    assert all(path.parent == tmp_path for path in leftovers)
    assert {path.name for path in leftovers} == {
        "config.json",
        "source_vocabulary.txt",
        "target_vocabulary.txt",
        "target_spacing.json",
        "source_subwords.model",
        "target_subwords.model",
        "splits",
        "backup",
        "logs",
        "epochs",
        "history.csv",
        "metrics.json",
        "state.json",
    }
    assert directory.model not in leftovers  # a trained model is never removed
    assert directory.data_summary == tmp_path / "data.json"
