"""The learning-rate schedule against the cosine formula worked by hand."""

import pytest

from keras_attention.runs.train_config import TrainConfig
from keras_attention.training.learning_rate import COSINE_FLOOR, learning_rate


def test_cosine_schedule_decays_from_the_peak_to_the_floor_over_the_planned_steps():
    config = TrainConfig(learning_rate=2e-3, epochs=4, steps_per_epoch=25)
    schedule = learning_rate(config)
    # By hand: lr(t) = peak * (floor + (1 - floor) * (1 + cos(pi * t / 100)) / 2).
    for step, cosine in ((0, 1.0), (50, 0.0), (100, -1.0), (250, -1.0)):
        expected = 2e-3 * (COSINE_FLOOR + (1 - COSINE_FLOOR) * (1 + cosine) / 2)
        assert float(schedule(step)) == pytest.approx(expected, rel=1e-5), step
    assert float(learning_rate(config, total_steps=50)(50)) == pytest.approx(2e-3 * COSINE_FLOOR)
    assert learning_rate(TrainConfig(learning_rate_schedule="constant")) == 2e-3
    with pytest.raises(ValueError, match="learning_rate_schedule"):
        TrainConfig(learning_rate_schedule="linear")
