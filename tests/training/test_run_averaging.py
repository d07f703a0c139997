"""Kept epoch weights (`--keep-epoch-weights`) and `keras-attention average`: the averaged
model is the NumPy mean of the kept epochs' weights, and an ordinary run."""

import keras
import numpy as np
import pytest

from keras_attention.cli import main
from keras_attention.inference.trained_run import load_translator
from keras_attention.runs import run_state
from keras_attention.runs.run_directory import RunDirectory
from keras_attention.runs.train_config import TrainConfig
from keras_attention.training.keep_epoch_weights import read_epoch_weights
from keras_attention.training.run_averaging import average_run
from keras_attention.training.trainer import train

EPOCHS = 4
KEEP = 3


class EpochEndWeights(keras.callbacks.Callback):
    """Records the model's weights at each epoch's end."""

    def __init__(self):
        super().__init__()
        self.weights = {}

    def on_epoch_end(self, epoch, logs=None):
        self.weights[epoch + 1] = [np.array(w.numpy()) for w in self.model.weights]


@pytest.fixture(scope="module")
def kept_run(digits_corpus, make_train_config, tmp_path_factory):
    """A tiny run of 4 epochs that keeps the weights of its last 3, and its epoch ends."""
    out = tmp_path_factory.mktemp("kept") / "run"
    config = make_train_config(
        digits_corpus,
        out,
        embedding_dim=8,
        encoder_units=8,
        decoder_units=16,
        source_vocabulary_size=30,
        target_vocabulary_size=30,
        batch_size=16,
        epochs=EPOCHS,
        steps_per_epoch=5,
        max_pairs=600,
        validation_fraction=0.1,
        patience=10,
        keep_epoch_weights=KEEP,
    )
    recorder = EpochEndWeights()
    train(config, verbose=0, callbacks=[recorder])
    return RunDirectory(out), recorder.weights


def test_the_last_epochs_weights_are_kept_as_the_model_had_them(kept_run):
    run, at_epoch_end = kept_run
    kept = run.kept_epoch_weights()
    assert [epoch for epoch, _ in kept] == [2, 3, 4], "the oldest beyond --keep-epoch-weights go"
    for epoch, path in kept:
        saved = read_epoch_weights(path)
        assert len(saved) == len(at_epoch_end[epoch])
        for mine, expected in zip(saved, at_epoch_end[epoch], strict=True):
            np.testing.assert_array_equal(mine, expected)


def test_the_averaged_model_is_the_numpy_mean_of_the_last_epochs(kept_run, tmp_path):
    run, at_epoch_end = kept_run
    averaged = average_run(run.path, 2, out=tmp_path / "averaged")
    model = keras.saving.load_model(averaged.model, compile=False)
    for index, weight in enumerate(model.weights):
        expected = np.mean([at_epoch_end[3][index], at_epoch_end[4][index]], axis=0)
        np.testing.assert_allclose(weight.numpy(), expected, rtol=1e-6, atol=1e-7)
    differs = [np.abs(w.numpy() - at_epoch_end[4][i]).max() for i, w in enumerate(model.weights)]
    assert max(differs) > 1e-5, "the average is not the last epoch's weights"
    # An ordinary, completed run: its config points at it, it translates.
    assert run_state.run_status(averaged.path)["state"] == "completed"
    assert TrainConfig.load(averaged.path).out == str(averaged.path)
    assert averaged.read_metrics()["averaged"]["epochs"] == [3, 4]
    assert averaged.test_split.is_file() and not averaged.epoch_weights.exists()
    (result,) = load_translator(averaged.path).translate_all(["1 2 3"])
    assert isinstance(result.text, str)


@pytest.mark.parametrize(
    "last, message",
    [
        (0, r"`last` must be an int >= 1"),
        (KEEP + 1, r"keeps the weights of 3 epochs \(epochs: 2, 3, 4\), fewer than the 4"),
    ],
)
def test_average_refuses_too_few_epochs(kept_run, tmp_path, last, message):
    run, _ = kept_run
    with pytest.raises(ValueError, match=message):
        average_run(run.path, last, out=tmp_path / "averaged")
    assert not (tmp_path / "averaged").exists()


def test_average_refuses_an_existing_directory(kept_run, tmp_path):
    run, _ = kept_run
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("x")
    with pytest.raises(ValueError, match="already exists"):
        average_run(run.path, 2, out=tmp_path / "taken")


def test_the_average_command(kept_run, tmp_path, capsys):
    run, _ = kept_run
    out = tmp_path / "cli"
    assert main(["average", str(run.path), "--last", "3", "--out", str(out)]) == 0
    assert f"Averaged the weights of epochs 2, 3, 4 of {run.path}" in capsys.readouterr().out
    assert RunDirectory(out).model.is_file()
    assert main(["average", str(run.path), "--last", "5", "--out", str(tmp_path / "x")]) == 2
    assert "keeps the weights of 3 epochs" in capsys.readouterr().err
