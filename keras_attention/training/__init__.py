"""Training a run: `train`, its masked loss and accuracy, fused Adam, signal handling,
the moving average of the weights and the averaging of a run's last epochs.

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
        "ema_weights": ["EmaWeights"],
        "keep_epoch_weights": ["KeepEpochWeights"],
        "run_averaging": ["average_run"],
    },
)
