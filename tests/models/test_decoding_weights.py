"""Decoding weights: cast once before the loop, the same results to the bit, no cast in the loop."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.decoding import BeamSearch, GreedySearch
from keras_attention.models.decoding_weights import DecodingWeights
from tests.models.test_seq2seq import VARIANTS, batch, make_model, variant_id


@pytest.fixture
def bfloat16_policy():
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    yield
    keras.config.set_dtype_policy(previous)


def per_step_logits(model, token_ids, state):
    """One step that reads (and casts) every weight itself: the decoder's plain path."""
    decoder = model.decoder
    output, state, attention = decoder.step(decoder.embed(token_ids), state)
    return decoder.logits(output), state, attention


@pytest.mark.parametrize("variant", VARIANTS, ids=variant_id)
def test_step_function_equals_the_per_step_reads_to_the_bit(variant, bfloat16_policy):
    model = make_model(**variant)
    source, target_in = batch()
    model((source, target_in))
    state = model.initial_decode_state(source)
    reference_state = state
    next_fn = model.step_function(state)
    for t in range(target_in.shape[1]):
        logits, state, attention = next_fn(t, target_in[:, t], state)
        expected, reference_state, expected_attention = per_step_logits(
            model, target_in[:, t], reference_state
        )
        np.testing.assert_array_equal(logits.numpy(), expected.numpy())
        np.testing.assert_array_equal(attention.numpy(), expected_attention.numpy())
        for leaf, expected_leaf in zip(
            tf.nest.flatten(state), tf.nest.flatten(reference_state), strict=True
        ):
            np.testing.assert_array_equal(
                tf.cast(leaf, tf.float32).numpy(), tf.cast(expected_leaf, tf.float32).numpy()
            )


def test_the_innermost_scope_is_what_the_decoder_reads():
    model = make_model(attention="bahdanau", conditional=True)
    source, target_in = batch()
    model((source, target_in))
    state = model.initial_decode_state(source)
    weights = model.decoder.decoding_weights(state)
    matrix, bias = weights.output
    # Weights no variable holds: zero embeddings, a zero projection with a bias of ones.
    other = weights._replace(
        embedding_rows=lambda ids: tf.zeros([tf.size(ids), model.decoder.embedding_dim]),
        output=(tf.zeros_like(matrix), tf.ones_like(bias)),
    )
    assert DecodingWeights.current() is None
    with weights:
        assert DecodingWeights.current() is weights
        with other:
            assert DecodingWeights.current() is other
            embedded = model.decoder.embed(target_in[:, 0])
            logits, _, _ = per_step_logits(model, target_in[:, 0], state)
        assert DecodingWeights.current() is weights
    assert DecodingWeights.current() is None
    np.testing.assert_array_equal(embedded.numpy(), np.zeros(embedded.shape))
    np.testing.assert_array_equal(logits.numpy(), np.ones(logits.shape))


def test_a_shortlist_projection_is_cast_once_too(bfloat16_policy):
    model = make_model(attention="luong", tie_embeddings=True)
    source, target_in = batch()
    model((source, target_in))
    ids = tf.constant([0, 1, 2, 3, 7, 11, 39], tf.int32)
    state = model.initial_decode_state(source)
    columns, _, _ = model.step_function(state, model.output_projection(ids))(
        0, target_in[:, 0], state
    )
    whole, _, _ = per_step_logits(model, target_in[:, 0], state)
    np.testing.assert_allclose(columns.numpy(), tf.gather(whole, ids, axis=1).numpy(), atol=0.05)
    assert columns.shape == (3, 7)


def _loop_bodies(graph):
    """The body graphs of every `While` op in `graph` (and in their bodies)."""
    bodies = []
    for op in graph.get_operations():
        if op.type in ("While", "StatelessWhile"):
            body = graph._get_function(op.get_attr("body").name).graph
            bodies.append(body)
            bodies.extend(_loop_bodies(body))
    return bodies


def _large_casts(graph, size):
    """The Cast ops of `graph` whose input has at least `size` elements (known statically)."""
    return [
        op
        for op in graph.get_operations()
        if op.type == "Cast"
        and op.inputs[0].shape.num_elements() is not None
        and op.inputs[0].shape.num_elements() >= size
    ]


@pytest.mark.parametrize(
    "variant",
    [
        dict(attention="luong", tie_embeddings=True),
        dict(attention="bahdanau", conditional=True),
        dict(attention="bahdanau", cell="lstm", tie_embeddings=True),
    ],
    ids=variant_id,
)
@pytest.mark.parametrize("strategy", [GreedySearch(max_steps=6), BeamSearch(3, max_steps=6)])
def test_the_decoding_loop_casts_no_weight_matrix(variant, strategy, bfloat16_policy):
    """Under mixed_bfloat16 the decoder's weight matrices (embeddings, cells, Dense
    layers, output) are cast before the loop, none inside it. (An attention layer
    reads its own query weights in its call.)"""
    model = make_model(**variant)
    source, target_in = batch()
    model((source, target_in))
    # The encoder runs before the loop (its own loops are Keras' RNN layers).
    state = model.initial_decode_state(source)
    weights = model.decoder.decoding_weights(state)
    matrices = [
        w
        for w in tf.nest.flatten([weights.cells, weights.dense, weights.output])
        if isinstance(w, tf.Tensor) and w.shape.rank == 2
    ]
    smallest_matrix = min(w.shape.num_elements() for w in matrices)
    # The attention layer's casts of its own weights, in its call, stay below that size.
    assert all(np.prod(v.shape) < smallest_matrix for v in model.decoder.attention_layer.weights)

    start = tf.fill([source.shape[0]], 2)
    decode = tf.function(lambda: strategy(model.step_function(state), state, start).tokens)
    graph = decode.get_concrete_function().graph
    bodies = _loop_bodies(graph)
    assert bodies, "no decoding loop found"
    assert all(not _large_casts(body, smallest_matrix) for body in bodies)
    # The cast weights are there, outside the loop.
    assert len(_large_casts(graph, smallest_matrix)) >= 3

    # Reading the weights in the step (`next_logits`) casts them inside the loop.
    decode_per_step = tf.function(lambda: strategy(model.next_logits, state, start).tokens)
    graph = decode_per_step.get_concrete_function().graph
    assert any(_large_casts(body, smallest_matrix) for body in _loop_bodies(graph))
    np.testing.assert_array_equal(decode().numpy(), decode_per_step().numpy())
