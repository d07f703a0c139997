"""Budgeted training: the plan's arithmetic by hand, and a planned run that ends its schedule
at the plan and resumes with the same plan."""

import math
import os
import signal
import types

import keras
import pytest

from keras_attention.runs import run_state
from keras_attention.runs.run_directory import RunDirectory
from keras_attention.runs.train_config import AUTO_EPOCHS, TrainConfig
from keras_attention.training import budget_plan, time_budget
from keras_attention.training.budget_plan import BudgetPlan, plan_steps
from keras_attention.training.interrupt_on_signal import TrainingInterrupted
from keras_attention.training.learning_rate import (
    COSINE_FLOOR,
    PlannedCosineDecay,
    learning_rate,
)
from keras_attention.training.trainer import train


def test_plan_fills_the_budget_share_with_steps_and_epoch_ends():
    # By hand: 0.5 s/step; each epoch end 4 validation batches at half a step (1 s) + 3 s
    # = 4 s; 97 % of 100 s = 97 s. From step 50 (epochs of 40): n steps in all cost
    # (n - 50) * 0.5 + (ceil(n / 40) - 1) * 4. n = 204: 77 + 20 = 97 fits; 205: 97.5 does not.
    assert plan_steps(100, 0.5, 50, 1000, 40, 4) == 204
    assert plan_steps(100, 0.5, 50, 150, 40, 4) == 150, "never past the maximum"
    assert plan_steps(1, 0.5, 50, 1000, 40, 4) == 51, "at least one more step"
    # Before the first epoch end, the first validation's tracing (15 s) is set aside too:
    # (n - 10) * 0.5 + ceil(n / 40) * 4 <= 97 - 15 = 82: n = 130 costs 60 + 16 = 76;
    # n = 141 costs 65.5 + 16 = 81.5; n = 142: 66 + 16 = 82 fits; n = 143: 82.5 does not.
    assert plan_steps(100, 0.5, 10, 1000, 40, 4) == 142


def test_the_planned_schedule_ends_where_the_plan_says():
    schedule = PlannedCosineDecay(2e-3, decay_steps=100, alpha=COSINE_FLOOR)
    assert float(schedule(50)) == pytest.approx(2e-3 * (COSINE_FLOOR + (1 - COSINE_FLOOR) / 2))
    schedule.planned_steps.assign(50)
    assert float(schedule(50)) == pytest.approx(2e-3 * COSINE_FLOOR)
    assert float(schedule(25)) == pytest.approx(2e-3 * (COSINE_FLOOR + (1 - COSINE_FLOOR) / 2))
    config = schedule.get_config()
    assert config["decay_steps"] == 50
    restored = keras.optimizers.schedules.deserialize(
        keras.optimizers.schedules.serialize(schedule)
    )
    assert float(restored(25)) == pytest.approx(float(schedule(25)))


def test_auto_epochs_plan_only_with_a_budget():
    assert TrainConfig().plans_to_budget and TrainConfig().maximum_epochs == 16
    assert not TrainConfig(epochs=8).plans_to_budget, "an explicit epoch count is kept"
    assert not TrainConfig(time_budget_minutes=None).plans_to_budget
    schedule = learning_rate(TrainConfig(steps_per_epoch=500))
    assert int(schedule.planned_steps.numpy()) == 8000
    with pytest.raises(ValueError, match="epochs"):
        TrainConfig(epochs=0)


def run_planner_epochs(monkeypatch, maximum_steps, epochs, seconds_per_step=0.5):
    """Feeds a planner, planned at 1 s/step for 60 steps of a 100-s budget, `epochs` epochs of
    10 steps at `seconds_per_step` (or the list of each epoch's) on a fake clock; returns its
    plans."""
    paces = seconds_per_step if isinstance(seconds_per_step, list) else [seconds_per_step] * epochs
    now = [0.0]
    monkeypatch.setattr(budget_plan, "clock", lambda: now[0])
    plans = []
    planner = budget_plan.BudgetPlanner(
        budget_seconds=100,
        maximum_steps=maximum_steps,
        steps_per_epoch=10,
        validation_batches=0,
        plan=BudgetPlan(100, 1.0, 60, maximum_steps, 10, planned_at_step=5),
        on_plan=plans.append,
    )
    planner.set_model(types.SimpleNamespace(stop_training=False))
    planner.on_train_begin()
    for epoch, pace in enumerate(paces):
        for batch in range(10):
            now[0] += pace
            planner.on_train_batch_end(batch)
        planner.on_epoch_end(epoch)
    return plans


def test_epochs_faster_than_planned_lengthen_the_plan(monkeypatch):
    # By hand: the second epoch (the first timed) ends at step 20 after 10 s: one epoch
    # alone does not lengthen the plan. The third ends at step 30 after 15 s; 97 % of the
    # 85 s left hold int(82.45 / 0.5) = 164 more steps: 194 in all, more than 5 % over the
    # 60 planned. The fourth (step 40, 20 s) fits int(77.6 / 0.5) = 155 more: 195, kept.
    plans = run_planner_epochs(monkeypatch, maximum_steps=1000, epochs=4)
    assert [plan.history for plan in plans] == [((5, 60), (30, 194))]
    assert "(revised after step 30: the epochs ran faster than planned; first 60)" in (
        plans[0].describe()
    )
    capped = run_planner_epochs(monkeypatch, maximum_steps=100, epochs=4)
    assert [plan.history for plan in capped] == [((5, 60), (30, 100))], "never past the maximum"


def test_a_plan_is_lengthened_at_the_slower_of_the_last_and_the_mean_pace(monkeypatch):
    # Epochs at 1, 1 and 0.5 s/step: the third ends at step 30 after 25 s. At its own pace
    # the 97 % of 75 s left would hold int(72.75 / 0.5) = 145 more steps; at the mean of
    # the timed epochs (10 s and 5 s: 0.75 s/step), int(72.75 / 0.75) = 97: 127 in all.
    plans = run_planner_epochs(monkeypatch, 1000, epochs=3, seconds_per_step=[1.0, 1.0, 0.5])
    assert [plan.history for plan in plans] == [((5, 60), (30, 127))]


def test_a_pace_a_little_faster_keeps_the_plan_and_a_slower_one_shortens_it(monkeypatch):
    # 1.6 s/step: step 30 at 48 s; 97 % of the 52 s left hold int(50.44 / 1.6) = 31 more
    # steps: 61 in all, within 5 % of the 60 planned: kept.
    assert run_planner_epochs(monkeypatch, 1000, epochs=3, seconds_per_step=1.6) == []
    # 2 s/step: step 20 at 40 s; int(58.2 / 2) = 29 more: 49 < 60 shortens.
    slower = run_planner_epochs(monkeypatch, 1000, epochs=2, seconds_per_step=2.0)
    assert [plan.history for plan in slower] == [((5, 60), (20, 49))]
    assert "the epochs ran slower than planned" in slower[0].describe()


STEPS = 5  # per epoch
SECONDS_PER_STEP = 1.0  # on the fake clock, for the first 10 steps
SLOWER = 4.0  # after them: the plan made at step 5 no longer fits


class FakeSteps(keras.callbacks.Callback):
    """Advances the planner's fake clock by each step's time, records the step count and
    learning rate, and sends SIGINT after `stop_at` steps."""

    def __init__(self, clock, stop_at=None):
        super().__init__()
        self.clock, self.stop_at, self.steps = clock, stop_at, []

    def on_train_batch_end(self, batch, logs=None):
        optimizer = self.model.optimizer
        step = int(optimizer.iterations.numpy())
        self.clock[0] += SECONDS_PER_STEP if step <= 10 else SLOWER
        self.steps.append((int(optimizer.iterations.numpy()), float(optimizer.learning_rate)))
        if self.stop_at == self.steps[-1][0]:
            os.kill(os.getpid(), signal.SIGINT)


@pytest.fixture
def fake_clock(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(budget_plan, "clock", lambda: now[0])
    # The time budget's own stop reads the same clock (not the test machine's speed).
    monkeypatch.setattr(time_budget, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    monkeypatch.setattr(budget_plan, "WARMUP_STEPS", 2)
    monkeypatch.setattr(budget_plan, "MEASURED_STEPS", 3)
    return now


def planned_config(make_train_config, corpus, out):
    # AUTO_EPOCHS epochs of 5 steps at most; a minute at 1 s/step holds fewer.
    return make_train_config(
        corpus, out, epochs="auto", steps_per_epoch=STEPS, time_budget_minutes=1
    )


@pytest.mark.slow
def test_a_planned_run_ends_its_schedule_at_the_plan_and_resumes_with_it(
    digits_corpus, make_train_config, tmp_path, fake_clock
):
    config = planned_config(make_train_config, digits_corpus, tmp_path / "whole")
    plans = []
    probe = FakeSteps(fake_clock)
    summary = train(config, verbose=0, callbacks=[probe], on_choice=lambda *c: plans.append(c))
    run = RunDirectory(config.out)
    plan = BudgetPlan.load(run.plan)
    assert [name for name, _ in plans] == ["precision", "tokenizer", "plan", "plan"]
    assert plans[-1][1] == plan
    # Measured over steps 3-5 of the fake clock; planned at step 5, below the maximum.
    assert (plan.seconds_per_step, plan.planned_at_step) == (SECONDS_PER_STEP, 5)
    assert plan.maximum_steps == AUTO_EPOCHS * STEPS
    validation_pairs = len(run.validation_split.read_text(encoding="utf-8").splitlines())
    # Length buckets: at least the batches of one bucket.
    assert plan.validation_batches >= math.ceil(validation_pairs / config.batch_size)
    # 60 s of budget, 4 s gone when the measurement ends (the clock moves after each step).
    first = plan_steps(
        60 - 4, SECONDS_PER_STEP, 5, plan.maximum_steps, STEPS, plan.validation_batches
    )
    assert plan.history[0] == (5, first) and first < plan.maximum_steps
    # Steps 11-15 took 4 s each: at epoch 3's end (step 15, 30 s gone), 97 % of the 30 s
    # left hold 7 more steps at 4 s, fewer than the first plan's.
    assert plan.history[1:] == ((15, 22),) and first > 22 and plan.planned_steps == 22
    # Training stops after the planned step, where the cosine schedule reaches its floor.
    assert probe.steps[-1] == (
        plan.planned_steps,
        pytest.approx(config.learning_rate * COSINE_FLOOR),
    )
    assert summary["epochs_run"] == math.ceil(plan.planned_steps / STEPS)
    assert summary["stopped_by"] is None and summary["plan"] == plan.describe()
    status = run_state.run_status(run.path)
    assert status["epochs_planned"] == status["epochs_done"] == plan.planned_epochs

    # Stopped after the plan, mid-epoch; resumed: the same plan, the same steps and rates.
    fake_clock[0] = 0.0
    resumed = RunDirectory(tmp_path / "resumed")
    config = planned_config(make_train_config, digits_corpus, resumed.path)
    stop_at = plan.planned_steps - 2
    first = FakeSteps(fake_clock, stop_at=stop_at)
    with pytest.raises(TrainingInterrupted):
        train(config, verbose=0, callbacks=[first])
    assert BudgetPlan.load(resumed.plan) == plan
    second = FakeSteps(fake_clock)
    train(config, verbose=0, callbacks=[second])
    assert first.steps + second.steps == probe.steps
    assert resumed.history.read_text() == run.history.read_text()
