"""`tile_batch`, `gather_tree` and `gather_tree_from_array`: TFA 0.23's test cases with
their stated values, and the golden outputs of TFA's own functions."""

import numpy as np
import pytest
import tensorflow as tf
from helpers.tfa_golden import load, max_difference

from keras_attention import seq2seq

pytestmark = pytest.mark.tensorflow_only


def time_major(batch_major):
    return np.transpose(np.array(batch_major), [1, 0, 2])


def test_gather_tree():
    step_ids = time_major([[[1, 2, 3], [4, 5, 6], [7, 8, 9]], [[2, 3, 4], [5, 6, 7], [8, 9, 10]]])
    parent_ids = time_major([[[0, 0, 0], [0, 1, 1], [2, 1, 2]], [[0, 0, 0], [1, 2, 0], [2, 1, 1]]])
    expected = time_major([[[2, 2, 2], [6, 5, 6], [7, 8, 9]], [[2, 4, 4], [7, 6, 6], [8, 9, 10]]])
    np.testing.assert_equal(expected, seq2seq.gather_tree(step_ids, parent_ids, [3, 3], 11))


def test_gather_tree_one():
    step_ids = time_major([[[1, 2, 3], [4, 5, 6], [7, 8, 9], [-1, -1, -1]]])
    parent_ids = time_major([[[0, 0, 0], [0, 1, 1], [2, 1, 2], [-1, -1, -1]]])
    expected = time_major([[[2, 2, 2], [6, 5, 6], [7, 8, 9], [10, 10, 10]]])
    np.testing.assert_equal(expected, seq2seq.gather_tree(step_ids, parent_ids, [3], 10))


def test_bad_parent_values():
    step_ids = time_major([[[1, 2, 3], [4, 5, 6], [7, 8, 9], [-1, -1, -1]]])
    parent_ids = time_major([[[0, 0, 0], [0, -1, 1], [2, 1, 2], [-1, -1, -1]]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="parent id"):
        seq2seq.gather_tree(step_ids, parent_ids, [3], 10)


def test_gather_tree_batch():
    rng = np.random.default_rng(6)
    batch, beam, time, end = 10, 15, 8, 5
    lengths = [0, 1, 2, 4, 7, 8, 9, 10, 11, 0]
    step_ids = rng.integers(0, end + 1, size=(time, batch, beam))
    parent_ids = rng.integers(0, beam - 1, size=(time, batch, beam))
    beams = seq2seq.gather_tree(step_ids, parent_ids, lengths, end).numpy()
    assert beams.shape == (time, batch, beam)
    for b in range(batch):
        np.testing.assert_equal(beams[lengths[b] :, b, :], end)
    for b in range(batch):
        for k in range(beam):
            v = beams[:, b, k]
            if end in v:
                assert not np.any(v == -1)
                found = np.where(v == end)[0][0]
                np.testing.assert_equal(v[found + 1 :], end)


ARRAY = [
    [[1, 2, 3], [4, 5, 6], [7, 8, 9], [0, 0, 0]],
    [[2, 3, 4], [5, 6, 7], [8, 9, 10], [11, 12, 0]],
]
PARENTS = [
    [[0, 0, 0], [0, 1, 1], [2, 1, 2], [-1, -1, -1]],
    [[0, 0, 0], [1, 1, 0], [2, 0, 1], [0, 1, 0]],
]
EXPECTED = [
    [[2, 2, 2], [6, 5, 6], [7, 8, 9], [0, 0, 0]],
    [[2, 3, 2], [7, 5, 7], [8, 9, 8], [11, 12, 0]],
]


@pytest.mark.parametrize(
    "depth_ndims, merged_batch_beam", [(0, False), (1, False), (1, True), (2, False)]
)
def test_gather_tree_from_array(depth_ndims, merged_batch_beam):
    array = tf.constant(time_major(ARRAY), tf.float32)
    expected = tf.constant(time_major(EXPECTED), tf.float32)
    if merged_batch_beam:
        array, expected = (tf.reshape(x, [4, 6]) for x in (array, expected))
    for _ in range(depth_ndims):
        array = tf.stack([array, array + 1], -1)
        expected = tf.stack([expected, expected + 1], -1)
    parent_ids = tf.constant(time_major(PARENTS), tf.int32)
    sorted_array = seq2seq.gather_tree_from_array(array, parent_ids, [[3, 3, 3], [4, 4, 3]])
    np.testing.assert_equal(expected.numpy(), sorted_array.numpy())


def test_gather_tree_from_array_complex_trajectory():
    array = [[25, 12, 114, 89, 97], [9, 91, 64, 11, 162], [34] * 5, [2, 4, 2, 2, 4]]
    array += [[2, 3, 6, 2, 2], [2, 2, 2, 3, 2], [2] * 5]
    parents = [[0] * 5, [0] * 5, [0, 1, 2, 3, 4], [0, 0, 1, 2, 1], [0, 1, 1, 2, 3]]
    parents += [[0, 1, 3, 1, 2], [0, 1, 2, 3, 4]]
    expected = [[25] * 5, [9, 9, 91, 9, 9], [34] * 5, [2, 4, 2, 4, 4], [2, 3, 6, 3, 6]]
    expected += [[2, 2, 2, 3, 2], [2] * 5]
    sorted_array = seq2seq.gather_tree_from_array(
        tf.constant(array, tf.float32)[:, None, :, None],
        tf.constant(parents, tf.int32)[:, None, :],
        [[4, 6, 4, 7, 6]],
    )
    np.testing.assert_equal(np.array(expected, np.float32)[:, None, :, None], sorted_array)


def test_against_tfa():
    arrays, _ = load("beam_functions")
    ours = {
        "gather_tree": seq2seq.gather_tree(
            arrays["in_step_ids"],
            arrays["in_parent_ids"],
            arrays["in_max_sequence_lengths"],
            arrays["in_end_token"],
        ),
        "gather_tree_from_array": seq2seq.gather_tree_from_array(
            arrays["in_array"], arrays["in_parent_ids"], arrays["in_sequence_length"]
        ),
        "tile_float": seq2seq.tile_batch(arrays["in_tile_float"], 3),
        "tile_int": seq2seq.tile_batch(arrays["in_tile_int"], 3),
    }
    for key, value in ours.items():
        assert max_difference(arrays[f"out_{key}"], value) == 0, key


def test_tile_batch_repeats_in_place_and_keeps_structure():
    nested = {"a": tf.constant([[1, 2], [3, 4]]), "b": [tf.constant([5, 6])]}
    tiled = seq2seq.tile_batch(nested, 2)
    np.testing.assert_equal(tiled["a"].numpy(), [[1, 2], [1, 2], [3, 4], [3, 4]])
    np.testing.assert_equal(tiled["b"][0].numpy(), [5, 5, 6, 6])


def test_gather_tree_runs_in_a_graph():
    decode = tf.function(seq2seq.gather_tree)
    step_ids = time_major([[[1, 2, 3], [4, 5, 6], [7, 8, 9], [-1, -1, -1]]])
    parent_ids = time_major([[[0, 0, 0], [0, 1, 1], [2, 1, 2], [-1, -1, -1]]])
    expected = time_major([[[2, 2, 2], [6, 5, 6], [7, 8, 9], [10, 10, 10]]])
    np.testing.assert_equal(expected, decode(step_ids, parent_ids, [3], 10))
    graph = decode.get_concrete_function(step_ids, parent_ids, [3], 10).graph
    assert not [op.type for op in graph.get_operations() if "Addons" in op.type]
