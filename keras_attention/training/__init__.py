"""Training runs: config, run directory and state, masked loss and accuracy, `train`.

Names are imported lazily, so reading a `TrainConfig` does not load TensorFlow.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "TrainConfig": "keras_attention.training.train_config",
    "RunDirectory": "keras_attention.training.run_directory",
    "MaskedSparseCategoricalCrossentropy": "keras_attention.training.masked_loss",
    "MaskedAccuracy": "keras_attention.training.masked_accuracy",
    "train": "keras_attention.training.trainer",
    "InterruptOnSignal": "keras_attention.training.interrupt_on_signal",
    "TrainingInterrupted": "keras_attention.training.interrupt_on_signal",
    "run_status": "keras_attention.training.run_state",
    "load_translator": "keras_attention.training.trainer",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'keras_attention.training' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
