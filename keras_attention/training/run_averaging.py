"""`average_run`: a run whose model is the mean of another run's last epoch weights."""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
from pathlib import Path

import numpy as np

from keras_attention.inference.trained_run import load_run_model
from keras_attention.runs import run_state
from keras_attention.runs.run_directory import RunDirectory
from keras_attention.runs.train_config import TrainConfig
from keras_attention.training.keep_epoch_weights import read_epoch_weights

logger = logging.getLogger(__name__)


def default_average_directory(run_dir: str | os.PathLike, last: int) -> Path:
    """Where `average_run` writes without `out`: `RUN_DIR-lastN` beside the run."""
    path = Path(run_dir).resolve()  # `.` has no name to add to
    return path.with_name(f"{path.name}-last{last}")


def mean_weights(files: list[Path]) -> list[np.ndarray]:
    """The mean of the epoch weights in `files`, weight by weight (in float64, then in each
    weight's own dtype).

    Raises:
        ValueError: the files hold different numbers or shapes of weights.
    """
    sets = [read_epoch_weights(path) for path in files]
    first = sets[0]
    for path, weights in zip(files[1:], sets[1:], strict=True):
        if [w.shape for w in weights] != [w.shape for w in first]:
            raise ValueError(
                f"{str(path)!r} holds other weights than {str(files[0])!r}: "
                "epoch weights of different models cannot be averaged"
            )
    return [
        np.mean(np.stack([weights[index] for weights in sets]).astype(np.float64), axis=0).astype(
            first[index].dtype
        )
        for index in range(len(first))
    ]


def average_run(
    run_dir: str | os.PathLike, last: int, out: str | os.PathLike | None = None
) -> RunDirectory:
    """Writes a run whose model is the mean of `run_dir`'s last `last` kept epoch weights.

    The run must have kept them (`TrainConfig.keep_epoch_weights` >= `last`,
    `--keep-epoch-weights N`; with `--ema`, they are the moving averages).
    The new run directory holds the run's config (its `out` the new
    directory), data record, held-out splits, vocabularies, history and plan,
    and a model.keras whose weights are the element-wise mean of the chosen
    epochs' weights; it is `completed`, and evaluates, translates, plots and
    exports as any run. Its metrics.json records the training's summary and,
    under `averaged`, the run and the epochs averaged.

    Args:
        run_dir: a trained run directory.
        last: int >= 1, how many of the last kept epochs to average.
        out: the new run directory (default: `RUN_DIR-lastN` beside it); must
            not exist, or be empty.

    Returns:
        The new run's `RunDirectory`.

    Raises:
        ValueError: `last` < 1, fewer than `last` epochs kept, or `out` not new.
        FileNotFoundError: `run_dir` is not a trained run directory.
    """
    if isinstance(last, bool) or not isinstance(last, int) or last < 1:
        raise ValueError(f"`last` must be an int >= 1. Received: last={last!r}")
    run = RunDirectory(run_dir)
    run.require_trained()
    kept = run.kept_epoch_weights()
    if len(kept) < last:
        epochs = ", ".join(str(epoch) for epoch, _ in kept) or "none"
        raise ValueError(
            f"{str(run.path)!r} keeps the weights of {len(kept)} epoch"
            f"{'s' if len(kept) != 1 else ''} (epochs: {epochs}), fewer than the {last} to "
            f"average: train it with --keep-epoch-weights {last} or more"
        )
    target = RunDirectory(default_average_directory(run.path, last) if out is None else out)
    if target.path.resolve() == run.path.resolve():
        raise ValueError(f"The averaged run needs its own directory, not {str(run.path)!r}")
    if target.path.exists() and (not target.path.is_dir() or any(target.path.iterdir())):
        raise ValueError(f"{str(target.path)!r} already exists: give a new --out directory")
    chosen = kept[-last:]
    averaged = mean_weights([path for _, path in chosen])
    model = load_run_model(run)
    if [tuple(w.shape) for w in model.weights] != [w.shape for w in averaged]:
        raise ValueError(
            f"The epoch weights of {str(run.path)!r} do not fit its model.keras "
            f"({len(averaged)} weights kept, {len(model.weights)} in the model)"
        )
    for weight, value in zip(model.weights, averaged, strict=True):
        weight.assign(value)
    target.path.mkdir(parents=True, exist_ok=True)
    _copy_run_files(run, target)
    model.save(target.model)
    epochs = [epoch for epoch, _ in chosen]
    run_state.write_state(target, run_state.COMPLETED, averaged_from=str(run.path))
    target.update_metrics(
        training=run.read_metrics().get("training", {}),
        averaged={"run": str(run.path), "epochs": epochs},
    )
    logger.info("averaged epochs %s of %s into %s", epochs, run.path, target.path)
    return target


def _copy_run_files(run: RunDirectory, target: RunDirectory) -> None:
    """The run's files that are not its model or its training's leftovers (backup, kept
    epoch weights, logs, evaluation), with config.json's `out` set to `target`."""
    config = TrainConfig.load(run.path)
    dataclasses.replace(config, out=str(target.path)).save(target.path)
    files = (
        run.data_summary,
        *run.tokenizer_files(config.tokenizer),
        run.target_spacing,
        run.history,
        run.plan,
    )
    for path in files:
        if path.is_file():
            shutil.copy2(path, target.path / path.name)
    splits = run.validation_split.parent
    if splits.is_dir():
        shutil.copytree(splits, target.path / splits.name)
