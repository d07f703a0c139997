"""The learning rate of a training run: constant, or a cosine decay over the planned steps."""

from __future__ import annotations

import keras

from keras_attention.runs.train_config import TrainConfig

COSINE_FLOOR = 0.02
"""The cosine schedule's last rate, as a share of the peak."""


@keras.saving.register_keras_serializable(package="keras_attention")
class PlannedCosineDecay(keras.optimizers.schedules.CosineDecay):
    """`CosineDecay` whose length is a variable: a budget plan sets it while training.

    `decay_steps` is a non-trainable int `keras.Variable` (`planned_steps`);
    `BudgetPlanner` assigns the planned steps once it has measured the step
    time, and the compiled training step reads the new length from then on.
    Saved with the length it has when saved.
    """

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="PlannedCosineDecay"):
        super().__init__(initial_learning_rate, decay_steps, alpha=alpha, name=name)
        self.planned_steps = keras.Variable(
            int(decay_steps), dtype="int64", trainable=False, name="planned_steps"
        )
        self.decay_steps = self.planned_steps

    def get_config(self):
        return {
            "initial_learning_rate": self.initial_learning_rate,
            "decay_steps": int(self.planned_steps.numpy()),
            "alpha": self.alpha,
            "name": self.name,
        }


def learning_rate(config: TrainConfig, total_steps: int | None = None):
    """The learning rate, or schedule, of `config`.

    `"constant"`: `config.learning_rate`. `"cosine"`: a cosine decay from
    `config.learning_rate` down to `COSINE_FLOOR` times it over `total_steps`
    (default: the most steps the run trains, `config.maximum_epochs *
    steps_per_epoch`); a `PlannedCosineDecay`, whose length a budget plan
    shortens (`keras_attention.training.budget_plan`) so that the curve ends
    when the budget does. It follows the optimizer's step count, which the
    run's backup keeps, so a resumed run continues the same curve.

    Raises:
        ValueError: a cosine schedule with neither `total_steps` nor
            `config.steps_per_epoch`.
    """
    if config.learning_rate_schedule == "constant":
        return config.learning_rate
    if total_steps is None:
        if config.steps_per_epoch is None:
            raise ValueError("`total_steps` is needed when `steps_per_epoch` is None")
        total_steps = config.maximum_epochs * config.steps_per_epoch
    return PlannedCosineDecay(config.learning_rate, decay_steps=total_steps, alpha=COSINE_FLOOR)
