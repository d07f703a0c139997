"""`KeepEpochWeights`: the model's weights after each of the last epochs, kept in the run."""

from __future__ import annotations

import io
import os

import keras
import numpy as np

from keras_attention.runs.backup_files import write_bytes_atomically
from keras_attention.runs.run_directory import RunDirectory


def write_epoch_weights(path: str | os.PathLike, weights: list[np.ndarray]) -> None:
    """Writes `weights` (`model.weights` in order) as one `.npz` file, atomically:
    arrays `arr_0`, `arr_1`, ... (`numpy.savez`), no pickled objects."""
    archive = io.BytesIO()
    np.savez(archive, *weights)
    write_bytes_atomically(path, archive.getvalue())


def read_epoch_weights(path: str | os.PathLike) -> list[np.ndarray]:
    """The arrays `write_epoch_weights` wrote to `path`, in order."""
    with np.load(path, allow_pickle=False) as archive:
        return [archive[f"arr_{index}"] for index in range(len(archive.files))]


class KeepEpochWeights(keras.callbacks.Callback):
    """Writes the model's weights at each epoch end, keeping the files of the last `keep`.

    Epoch `e` (counted from 1) goes to `run.epoch_weights_file(e)`
    (`RUN_DIR/epochs/epoch-e.npz`, `write_epoch_weights`); the files of epochs
    `e - keep` and before are removed. `keras-attention average` averages them
    (`keras_attention.training.run_averaging.average_run`). Each file holds the
    weights the model has when this callback runs: with `EmaWeights`, put it
    between `put_in` and `take_out` so that it keeps the moving averages.

    A resumed run writes its epochs again from the backed-up one on, with the
    same weights (the resume is exact).

    Args:
        run: the `RunDirectory` to write into.
        keep: int >= 1, how many epochs' files to keep.
    """

    def __init__(self, run: RunDirectory, keep: int):
        super().__init__()
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ValueError(f"`keep` must be an int >= 1. Received: keep={keep!r}")
        self.run = run
        self.keep = keep

    def on_epoch_end(self, epoch, logs=None):
        done = epoch + 1
        self.run.epoch_weights.mkdir(parents=True, exist_ok=True)
        weights = [keras.ops.convert_to_numpy(weight) for weight in self.model.weights]
        write_epoch_weights(self.run.epoch_weights_file(done), weights)
        for kept, path in self.run.kept_epoch_weights():
            if kept <= done - self.keep:
                path.unlink(missing_ok=True)
