"""The strategy of a process: options that fit the mode, and which process is the chief."""

import pytest

from keras_attention.distribution.strategy import Distribution, make_distribution


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"mode": "horovod"}, "must be one of"),
        ({"mode": "none", "cpu_replicas": 2}, "needs --distribute mirrored"),
        ({"mode": "mirrored", "cpu_replicas": 0}, "positive int"),
        ({"mode": "mirrored", "worker_hosts": "a:1"}, "need --distribute multi-worker"),
        ({"worker_start_timeout": 0}, "positive number of seconds"),
        ({"worker_start_timeout": "60"}, "positive number of seconds"),
    ],
)
def test_options_that_do_not_fit_the_mode_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_distribution(**kwargs)


@pytest.mark.parametrize(
    "task_type, index, has_chief_task, chief",
    [
        (None, 0, False, True),
        ("worker", 0, False, True),
        ("worker", 1, False, False),
        ("worker", 0, True, False),
        ("chief", 0, True, True),
    ],
)
def test_the_chief_is_worker_zero_unless_there_is_a_chief_task(
    task_type, index, has_chief_task, chief
):
    distribution = Distribution(
        "multi-worker", None, task_type, index, num_workers=3, has_chief_task=has_chief_task
    )
    assert distribution.is_chief is chief
