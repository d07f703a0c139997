"""The synthetic alignment task and its accuracy, against hand-worked examples."""

import numpy as np
import pytest

from keras_attention.data import alignment_accuracy, alignment_offsets, make_alignment_task
from keras_attention.data.alignment_task import END, FIRST_DIGIT, START


def one_hot_attention(task, positions, source_length=None):
    """Attention of weight 1 at `positions[i][t]` for sentence i, target step t."""
    count, length = task.alignment.shape
    attention = np.zeros((count, length + 1, source_length or length), "float32")
    for i, row in enumerate(positions):
        for t, position in enumerate(row):
            attention[i, t, position] = 1.0
    return attention


def test_reversed_task_by_hand():
    task = make_alignment_task(50, seed=3, min_length=3, max_length=5)
    for i, n in enumerate(task.lengths):
        digits = task.source_ids[i, :n]
        np.testing.assert_array_equal(task.target_out[i, :n], digits[::-1])
        assert task.target_out[i, n] == END
        assert task.target_in[i, 0] == START
        np.testing.assert_array_equal(task.target_in[i, 1 : n + 1], digits[::-1])
        np.testing.assert_array_equal(task.alignment[i, :n], np.arange(n)[::-1])
        assert (task.alignment[i, n:] == -1).all() and (task.source_ids[i, n:] == 0).all()
    source, target = task.texts()[0]
    n = task.lengths[0]
    assert len(source.split()) == len(target.split()) == n
    assert int(source.split()[-1]) + FIRST_DIGIT == task.target_out[0, 0]


def test_accuracy_exact_and_within_one_position():
    task = make_alignment_task(2, seed=0, min_length=4, max_length=4)
    # Sentence 0 exactly aligned (3 2 1 0); sentence 1 one to the right where it can be
    # (4 is past the sentence: still one off) and once two off.
    attention = one_hot_attention(task, [[3, 2, 1, 0], [4, 3, 2, 2]], source_length=5)
    # 4 + 0 exact of 8; within one: 4 + 3 (the last word is 2 off).
    assert alignment_accuracy(attention, task) == pytest.approx(4 / 8)
    assert alignment_accuracy(attention, task, tolerance=1) == pytest.approx(7 / 8)
    assert alignment_accuracy(attention, task, tolerance=2) == 1.0
    assert alignment_offsets(attention, task) == {0: 0.5, 1: 0.375, 2: 0.125}


def test_padding_steps_do_not_count():
    task = make_alignment_task(1, seed=0, min_length=2, max_length=4)
    n = task.lengths[0]
    positions = list(np.arange(n)[::-1]) + [0] * (4 - n)  # padded steps attend anywhere
    attention = one_hot_attention(task, [positions])
    assert alignment_accuracy(attention, task) == 1.0
    assert alignment_offsets(attention, task) == {0: 1.0}


def test_accuracy_refuses_bad_arguments():
    task = make_alignment_task(3, seed=0, max_length=5)
    attention = np.zeros((3, 6, 5), "float32")
    with pytest.raises(ValueError, match="tolerance"):
        alignment_accuracy(attention, task, tolerance=-1)
    with pytest.raises(ValueError, match=r"shape \(count=3"):
        alignment_accuracy(attention[:2], task)
    with pytest.raises(ValueError, match=r"shape \(count=3"):
        alignment_accuracy(attention[:, :3], task)
    with pytest.raises(ValueError, match=r"shape \(count=3"):
        alignment_offsets(attention[:2], task)


@pytest.mark.parametrize(
    "kwargs, message",
    [({"order": "random"}, "order"), ({"count": 0}, "count"), ({"min_length": 0}, "min_length")],
)
def test_task_refuses_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_alignment_task(**{"count": 4, **kwargs})
