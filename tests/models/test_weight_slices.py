"""Embedding rows read through `gather`: the layer's own values, and every lookup routed."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.models.weight_slices import WeightSlices, embedding_lookup, gather_slices
from tests.models.test_seq2seq import batch, make_model


@pytest.fixture(params=["float32", "mixed_bfloat16"])
def policy(request):
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(request.param)
    yield request.param
    keras.config.set_dtype_policy(previous)


@pytest.mark.parametrize("ids_dtype", ["int32", "int64", "float32"])
def test_embedding_lookup_equals_the_layers_call(policy, ids_dtype):
    embedding = keras.layers.Embedding(11, 5)
    ids = np.array([[3, 0, 10], [1, 1, 7]]).astype(ids_dtype)
    expected = embedding(ids)
    for gather in (None, gather_slices):
        with WeightSlices(gather):
            actual = embedding_lookup(embedding, ids)
        assert actual.dtype == expected.dtype == embedding.compute_dtype
        np.testing.assert_array_equal(actual.numpy(), expected.numpy())


class RecordingGather:
    """`gather_slices`, recording which variable each call read and how many slices."""

    def __init__(self):
        self.calls = []

    def __call__(self, variable, ids, axis):
        self.calls.append((variable.path, axis, int(tf.size(ids))))
        return gather_slices(variable, ids, axis)


@pytest.mark.parametrize("tie_embeddings", [False, True])
def test_decoding_reads_every_embedding_row_through_gather(policy, tie_embeddings):
    """The encoder's lookup and each decoding step's read the rows they use through
    `gather`, and the decoding is the same to the bit as without it."""
    model = make_model(attention="luong", tie_embeddings=tie_embeddings)
    source, target_in = batch()
    model((source, target_in))
    gather = RecordingGather()

    with WeightSlices(gather):
        state = model.initial_decode_state(source)
    expected_state = model.initial_decode_state(source)
    assert gather.calls == [(model.encoder.embedding.embeddings.path, 0, source.size)]
    tf.nest.map_structure(
        lambda a, b: np.testing.assert_array_equal(a.numpy(), b.numpy()), state, expected_state
    )

    gather.calls.clear()
    with WeightSlices(gather):
        next_fn = model.step_function(state)
    expected_fn = model.step_function(state)
    for t in range(target_in.shape[1]):
        logits, state, _ = next_fn(t, target_in[:, t], state)
        expected, expected_state, _ = expected_fn(t, target_in[:, t], expected_state)
        np.testing.assert_array_equal(logits.numpy(), expected.numpy())
    target_path = model.decoder.embedding.embeddings.path
    assert gather.calls == [(target_path, 0, len(target_in))] * target_in.shape[1]


def test_scopes_nest_and_restore_the_default():
    """The innermost scope applies; `WeightSlices(None)` is the default inside another."""
    gather = RecordingGather()
    assert WeightSlices.current() is None
    with WeightSlices(gather):
        assert WeightSlices.current() is gather
        with WeightSlices(None):
            assert WeightSlices.current() is None
        assert WeightSlices.current() is gather
    assert WeightSlices.current() is None
    with pytest.raises(TypeError, match="Received: 3"):
        WeightSlices(3)
