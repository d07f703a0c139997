"""The learning rate of a training run: constant, or a cosine decay over the planned steps."""

from __future__ import annotations

import keras

from keras_attention.runs.train_config import TrainConfig

COSINE_FLOOR = 0.02
"""The cosine schedule's last rate, as a share of the peak."""


def learning_rate(config: TrainConfig, total_steps: int | None = None):
    """The learning rate, or schedule, of `config`.

    `"constant"`: `config.learning_rate`. `"cosine"`:
    `keras.optimizers.schedules.CosineDecay` from `config.learning_rate` down
    to `COSINE_FLOOR` times it over `total_steps` (default: the planned steps,
    `epochs * steps_per_epoch`). It follows the optimizer's step count, which
    the run's backup keeps, so a resumed run continues the same curve. A time
    budget that ends training early stops it at whatever rate the curve has
    reached by then.

    Raises:
        ValueError: a cosine schedule with neither `total_steps` nor
            `config.steps_per_epoch`.
    """
    if config.learning_rate_schedule == "constant":
        return config.learning_rate
    if total_steps is None:
        if config.steps_per_epoch is None:
            raise ValueError("`total_steps` is needed when `steps_per_epoch` is None")
        total_steps = config.epochs * config.steps_per_epoch
    return keras.optimizers.schedules.CosineDecay(
        config.learning_rate, decay_steps=total_steps, alpha=COSINE_FLOOR
    )
