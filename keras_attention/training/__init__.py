"""Training runs: config, run directory and state, masked loss and accuracy, fused Adam, `train`.

Names are imported lazily (through `lazy_loader`), so reading a `TrainConfig`
does not load TensorFlow. `Distribution`, `DistributedTrainingError` and
`make_distribution` are those of `keras_attention.distribution`.
"""

import importlib

import lazy_loader

# Names of keras_attention.distribution that `train` takes or raises, importable from here too.
_FROM_DISTRIBUTION = ("DistributedTrainingError", "Distribution", "make_distribution")

_getattr, _, _names = lazy_loader.attach(
    __name__,
    submod_attrs={
        "train_config": ["TrainConfig"],
        "run_directory": ["RunDirectory"],
        "masked_loss": ["MaskedSparseCategoricalCrossentropy"],
        "fused_adam": ["FusedAdam"],
        "masked_accuracy": ["MaskedAccuracy"],
        "trainer": ["train", "load_translator"],
        "interrupt_on_signal": ["InterruptOnSignal", "TrainingInterrupted"],
        "run_state": ["run_status"],
    },
)

__all__ = sorted([*_names, *_FROM_DISTRIBUTION])


def __getattr__(name):
    if name in _FROM_DISTRIBUTION:
        return getattr(importlib.import_module("keras_attention.distribution"), name)
    return _getattr(name)


def __dir__():
    return __all__
