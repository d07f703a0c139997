"""Training runs: config, run directory and state, masked loss and accuracy, fused Adam, `train`.

Names are imported lazily (through `lazy_loader`), so reading a `TrainConfig`
does not load TensorFlow.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "train_config": ["TrainConfig"],
        "run_directory": ["RunDirectory"],
        "masked_loss": ["MaskedSparseCategoricalCrossentropy"],
        "fused_adam": ["FusedAdam"],
        "masked_accuracy": ["MaskedAccuracy"],
        "trainer": ["train", "load_translator"],
        "distribution": ["Distribution", "DistributedTrainingError", "make_distribution"],
        "interrupt_on_signal": ["InterruptOnSignal", "TrainingInterrupted"],
        "run_state": ["run_status"],
    },
)
