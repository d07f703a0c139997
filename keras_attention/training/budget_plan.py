"""Budgeted training: the number of steps that fits a run's time budget.

A run with `epochs="auto"` and a time budget measures its own step time
after a warm-up and plans its steps so that the learning-rate schedule ends
when the budget does (Li, Yumer & Ramanan, "Budgeted Training", ICLR 2020:
a schedule that decays to the budget beats stopping a longer one early).
The plan never exceeds the run's maximum (`auto`'s epochs times the steps
per epoch, the default's measured best). It is saved in the run directory
(plan.json), so a resumed run keeps the same schedule.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable

import keras

from keras_attention.runs.backup_files import read_json, write_json_atomically

WARMUP_STEPS = 20
"""Steps left out of the measurement: the first traces the step, the next fill caches."""

MEASURED_STEPS = 30
"""Steps timed after the warm-up."""

BUDGET_SHARE = 0.97
"""The share of the remaining budget the plan fills (the rest absorbs noise)."""

VALIDATION_STEP_COST = 0.5
"""A validation batch's time as a share of a training step's (forward pass only)."""

EPOCH_END_SECONDS = 3.0
"""Seconds each epoch end takes beside validation (the checkpoint and the backup)."""

FIRST_VALIDATION_SECONDS = 15.0
"""Seconds the first validation takes to trace its step."""

LENGTHEN_SHARE = 0.05
"""An epoch end lengthens the plan only by at least this share of its steps (so that a
pace measured a little faster once does not move the schedule back and forth)."""

clock = time.monotonic
"""The planner's clock (a test may replace it)."""


@dataclasses.dataclass(frozen=True)
class BudgetPlan:
    """How many steps a run trains to fit its time budget.

    Attributes:
        budget_seconds: the time budget of the `train` call that made the plan.
        seconds_per_step: the measured training step time.
        planned_steps: the steps the run trains in all; the schedule ends there.
        maximum_steps: the most the run would train with time to spare.
        steps_per_epoch: steps between validations.
        planned_at_step: the step at which the plan was made.
        validation_batches: the batches of each validation pass it counted.
        history: `(step, planned_steps)` from that step on: the plan, then each
            revision (epochs that ran slower than planned shorten it, faster ones
            lengthen it), so that a resumed run replays the same schedule.
    """

    budget_seconds: float
    seconds_per_step: float
    planned_steps: int
    maximum_steps: int
    steps_per_epoch: int
    planned_at_step: int
    validation_batches: int = 0
    history: tuple[tuple[int, int], ...] = ()

    def __post_init__(self):
        history = tuple(tuple(entry) for entry in self.history)  # JSON gives lists
        object.__setattr__(
            self, "history", history or ((self.planned_at_step, self.planned_steps),)
        )

    @property
    def planned_epochs(self) -> int:
        """Epochs the plan trains, the last one possibly cut short."""
        return math.ceil(self.planned_steps / self.steps_per_epoch)

    def in_effect(self, step: int) -> int:
        """The schedule's length after `step` steps: `maximum_steps` before the plan."""
        planned = self.maximum_steps
        for since, steps in self.history:
            if since <= step:
                planned = steps
        return planned

    def revised(self, step: int, planned_steps: int) -> BudgetPlan:
        """This plan shortened to `planned_steps` from `step` on."""
        return dataclasses.replace(
            self, planned_steps=planned_steps, history=(*self.history, (step, planned_steps))
        )

    def describe(self) -> str:
        """E.g. `budget 20 min: 2,350 steps at 0.480 s/step`."""
        text = (
            f"budget {self.budget_seconds / 60:g} min: {self.planned_steps:,} steps at "
            f"{self.seconds_per_step:.3f} s/step"
        )
        if len(self.history) > 1:
            since, _ = self.history[-1]
            pace = "slower" if self.planned_steps < self.history[-2][1] else "faster"
            text += (
                f" (revised after step {since:,}: the epochs ran {pace} than planned; "
                f"first {self.history[0][1]:,})"
            )
        elif self.planned_steps >= self.maximum_steps:
            text += " (all the run trains; the budget has time to spare)"
        return text

    def save(self, path) -> None:
        write_json_atomically(path, dataclasses.asdict(self))

    @classmethod
    def load(cls, path) -> BudgetPlan | None:
        """The plan saved at `path`, or None where there is none."""
        values = read_json(path)
        return None if values is None else cls(**values)


def plan_steps(
    remaining_seconds: float,
    seconds_per_step: float,
    step: int,
    maximum_steps: int,
    steps_per_epoch: int,
    validation_batches: int,
) -> int:
    """The total steps that fit `remaining_seconds` from `step` on, at most `maximum_steps`.

    Each step costs `seconds_per_step`; each epoch end a validation pass of
    `validation_batches` (`VALIDATION_STEP_COST` of a step each) and
    `EPOCH_END_SECONDS`; the first validation `FIRST_VALIDATION_SECONDS` more.
    The plan fills `BUDGET_SHARE` of the time and trains at least one more step.
    """
    epoch_end = validation_batches * VALIDATION_STEP_COST * seconds_per_step + EPOCH_END_SECONDS
    available = remaining_seconds * BUDGET_SHARE
    if step < steps_per_epoch:
        available -= FIRST_VALIDATION_SECONDS
    best = step + 1
    low, high = step + 1, maximum_steps
    while low <= high:  # the most steps whose time fits
        middle = (low + high) // 2
        epoch_ends = math.ceil(middle / steps_per_epoch) - step // steps_per_epoch
        if (middle - step) * seconds_per_step + epoch_ends * epoch_end <= available:
            best, low = middle, middle + 1
        else:
            high = middle - 1
    return min(best, maximum_steps)


class BudgetPlanner(keras.callbacks.Callback):
    """Plans a run's steps from its measured step time, then stops training at the plan.

    After `WARMUP_STEPS` of this `train` call it times `MEASURED_STEPS` more
    (averaged over the workers by `agree`), plans with `plan_steps`, sets
    `schedule_steps` (the learning-rate schedule's length) and calls
    `on_plan(plan)` (the trainer saves and prints it). At each epoch end
    from the call's second on, it projects the rest of the plan at the
    last epoch's pace (validation included) and revises the plan to the
    steps that fit (`BudgetPlan.revised`): shorter where the rest would
    overrun the budget; longer, from the call's third epoch on, where the
    rest at the slower of the last epoch's pace and the mean pace of the
    epochs timed so far leaves time for at least `LENGTHEN_SHARE` more of the
    plan's steps (never past `maximum_steps`): one fast epoch alone does not
    lengthen it. Training stops after the planned step.

    A resumed run passes its saved `plan` and `start_step`: the schedule
    follows the plan's history exactly (a revision recorded after
    `start_step` is replayed at its step, not measured again); epoch ends
    after the last recorded revision may revise it further.

    Args:
        budget_seconds: the call's time budget.
        maximum_steps: the most the run trains.
        steps_per_epoch: steps between validations.
        validation_batches: batches of each validation pass.
        schedule_steps: the schedule's length (a `keras.Variable`), or None
            for a constant learning rate.
        plan: the saved plan of a resumed run, or None.
        start_step: the step the call starts from (a resumed run's).
        on_plan: called with each new or revised plan.
        agree: maps this worker's measured seconds to the ones all workers use
            (called by every worker at the same steps).
    """

    def __init__(
        self,
        budget_seconds: float,
        maximum_steps: int,
        steps_per_epoch: int,
        validation_batches: int,
        schedule_steps=None,
        plan: BudgetPlan | None = None,
        start_step: int = 0,
        on_plan: Callable[[BudgetPlan], None] = lambda plan: None,
        agree: Callable[[float], float] = lambda seconds: seconds,
    ):
        super().__init__()
        self.budget_seconds = budget_seconds
        self.maximum_steps = maximum_steps
        self.steps_per_epoch = steps_per_epoch
        self.validation_batches = validation_batches
        self.schedule_steps = schedule_steps
        self.plan = plan
        self.start_step = start_step
        self.on_plan = on_plan
        self.agree = agree
        self.reached = False
        self._started = self._timed_from = self._epoch_ended = None
        self._batches = 0
        self._epoch_seconds: list[float] = []  # the call's timed epochs (its second on)

    def on_train_begin(self, logs=None):
        self._started = clock()
        self._batches = 0
        self._epoch_ended = None
        self._epoch_seconds = []
        if self.plan is not None:
            self._set_schedule(self.plan.in_effect(self.start_step))

    def on_train_batch_end(self, batch, logs=None):
        self._batches += 1
        step = self.start_step + self._batches
        if self.plan is None:
            if self._batches == WARMUP_STEPS:
                self._timed_from = clock()
            elif self._batches == WARMUP_STEPS + MEASURED_STEPS:
                measured = (clock() - self._timed_from) / MEASURED_STEPS
                self._make_plan(step, self.agree(measured))
            return
        planned = self.plan.in_effect(step)
        if any(since == step for since, _ in self.plan.history):  # a recorded revision
            self._set_schedule(planned)
        if step >= planned:
            self.reached = True
            self.model.stop_training = True

    def on_epoch_end(self, epoch, logs=None):
        now = clock()
        last_epoch, self._epoch_ended = (
            None if self._epoch_ended is None else now - self._epoch_ended,
            now,
        )
        step = self.start_step + self._batches
        if (
            self.plan is None
            or self.reached
            or last_epoch is None  # the call's first epoch traces its steps
            or step < self.plan.history[-1][0]  # replaying recorded revisions
        ):
            return
        # Agreed, so that every worker takes the same decision.
        self._epoch_seconds.append(self.agree(last_epoch))
        remaining = self.agree(self.budget_seconds - (now - self._started)) * BUDGET_SHARE
        planned = self.plan.planned_steps

        def steps_that_fit(epoch_seconds: float) -> int:
            more = max(1, int(remaining * self.steps_per_epoch / epoch_seconds))
            return min(step + more, self.maximum_steps)

        fits = steps_that_fit(self._epoch_seconds[-1])
        if fits >= planned:  # lengthen only at a pace that held over the epochs timed
            mean = sum(self._epoch_seconds) / len(self._epoch_seconds)
            fits = steps_that_fit(max(self._epoch_seconds[-1], mean))
            if len(self._epoch_seconds) < 2 or fits < planned * (1 + LENGTHEN_SHARE):
                return
        if fits != planned:
            self.plan = self.plan.revised(step, fits)
            self._set_schedule(fits)
            self.on_plan(self.plan)

    def _make_plan(self, step: int, seconds_per_step: float) -> None:
        remaining = self.agree(self.budget_seconds - (clock() - self._started))
        planned = plan_steps(
            remaining,
            seconds_per_step,
            step,
            self.maximum_steps,
            self.steps_per_epoch,
            self.validation_batches,
        )
        self.plan = BudgetPlan(
            budget_seconds=self.budget_seconds,
            seconds_per_step=round(seconds_per_step, 4),
            planned_steps=planned,
            maximum_steps=self.maximum_steps,
            steps_per_epoch=self.steps_per_epoch,
            planned_at_step=step,
            validation_batches=self.validation_batches,
        )
        self._set_schedule(planned)
        self.on_plan(self.plan)

    def _set_schedule(self, steps: int) -> None:
        if self.schedule_steps is not None:
            self.schedule_steps.assign(steps)
