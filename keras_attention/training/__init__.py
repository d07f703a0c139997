"""Training a run: `train`, its masked loss and accuracy, fused Adam, signal handling.

Names are imported lazily (through `lazy_loader`), so importing the package
does not load TensorFlow.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "masked_loss": ["MaskedSparseCategoricalCrossentropy"],
        "fused_adam": ["FusedAdam"],
        "masked_accuracy": ["MaskedAccuracy"],
        "trainer": ["train"],
        "distribution": ["Distribution", "DistributedTrainingError", "make_distribution"],
        "interrupt_on_signal": ["InterruptOnSignal", "TrainingInterrupted"],
    },
)
