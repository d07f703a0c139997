"""Training a run: `train`, its masked loss and accuracy, fused Adam, signal handling.

Names are imported lazily (through `lazy_loader`), so importing the package
does not load TensorFlow. A run's config and directory are in
`keras_attention.runs`, the strategies in `keras_attention.distribution`.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "masked_loss": ["MaskedSparseCategoricalCrossentropy"],
        "fused_adam": ["FusedAdam"],
        "masked_accuracy": ["MaskedAccuracy"],
        "trainer": ["train"],
        "interrupt_on_signal": ["InterruptOnSignal", "TrainingInterrupted"],
    },
)
