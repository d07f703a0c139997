"""`EmaWeights`: the optimizer's moving average of the weights, in the model where it counts."""

from __future__ import annotations

import keras


class EmaWeights:
    """Puts an optimizer's exponential moving average (EMA) of the weights into the model
    for validation and the epoch-end saves, and the training weights back for the backup.

    A Keras 3 optimizer built with `use_ema=True` updates, after each step,
    `average = m * average + (1 - m) * weights` (`m = ema_momentum`; the first
    step copies the weights) in optimizer variables, which `model.save_weights`
    saves with the optimizer's other variables: a run's backup holds both the
    training weights and their average, and a resumed run continues both
    exactly. The model trains on its own weights; the average is what the run
    gives:

    1. `fit`'s validation runs with the average (`put_in`'s `on_test_begin`),
       so `val_loss`, early stopping and the best checkpoint judge it;
    2. at the epoch end the average stays in the model for the callbacks
       between `put_in` and `take_out` in `fit`'s list (the checkpoint's
       model.keras, early stopping's best weights, the kept epoch weights);
    3. `take_out` swaps the training weights back, so the callbacks after it
       (the backup) see the model as it trains.

    A swap copies values (no arithmetic, unlike `keras.callbacks.SwapEMAWeights`,
    which swaps by adding and subtracting), so no weight is rounded. At the end
    of `fit`, Keras' `finalize_variable_values` copies the average into the
    model's weights.

    Args:
        optimizer: a Keras optimizer built with `use_ema=True`, or a
            `LossScaleOptimizer` around one.

    Raises:
        ValueError: the optimizer keeps no average.
    """

    def __init__(self, optimizer):
        optimizer = getattr(optimizer, "inner_optimizer", optimizer)  # a LossScaleOptimizer's
        if not getattr(optimizer, "use_ema", False):
            raise ValueError(
                "EmaWeights needs an optimizer built with use_ema=True. Received: "
                f"{type(optimizer).__name__} with use_ema={getattr(optimizer, 'use_ema', None)}"
            )
        self.optimizer = optimizer
        self.average_in_model = False
        self.put_in = keras.callbacks.LambdaCallback(
            on_epoch_end=lambda epoch, logs=None: self.use_average(),
            on_test_begin=lambda logs=None: self.use_average(),
        )
        self.take_out = keras.callbacks.LambdaCallback(
            on_epoch_end=lambda epoch, logs=None: self.use_training_weights()
        )

    def use_average(self) -> None:
        """Puts the average into the model (nothing to do when it is there)."""
        if not self.average_in_model:
            self._swap()

    def use_training_weights(self) -> None:
        """Puts the training weights back into the model (nothing to do when they are there)."""
        if self.average_in_model:
            self._swap()

    def _swap(self) -> None:
        if not self.optimizer.built:  # no step yet: no average
            return
        pairs = zip(
            self.optimizer._trainable_variables,
            self.optimizer._model_variables_moving_average,
            strict=True,
        )
        for weight, average in pairs:
            if average is None:
                continue
            training = keras.ops.convert_to_numpy(weight)
            weight.assign(keras.ops.convert_to_numpy(average))
            average.assign(training)
        self.average_in_model = not self.average_in_model
