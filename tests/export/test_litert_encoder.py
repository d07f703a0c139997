"""`encode_with_buffers`: the encoder without TensorArrays gives `Encoder.call`'s outputs."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from keras_attention.export.litert.encoder import encode_with_buffers
from keras_attention.models.encoder import Encoder


@pytest.mark.parametrize(
    "cell, bidirectional, layers",
    [("gru", True, 1), ("gru", False, 2), ("lstm", True, 2), ("lstm", False, 1)],
)
def test_matches_the_keras_layers(cell, bidirectional, layers):
    encoder = Encoder(
        50, embedding_dim=6, units=5, num_layers=layers, cell=cell, bidirectional=bidirectional
    )
    # Padding at the end, in the middle of a batch of lengths, and a row of padding only.
    source = tf.constant(
        [[3, 4, 5, 6, 7, 8], [9, 10, 0, 0, 0, 0], [11, 12, 13, 14, 0, 0], [0, 0, 0, 0, 0, 0]],
        tf.int32,
    )
    annotations, summary = encoder(source)
    function = tf.function(lambda ids: encode_with_buffers(encoder, ids), autograph=False)
    got_annotations, got_summary = function(source)
    np.testing.assert_allclose(got_annotations, annotations, atol=1e-6)
    np.testing.assert_allclose(got_summary, summary, atol=1e-6)
    graph = function.get_concrete_function(source).graph
    ops = {op.type for op in graph.get_operations()}
    for function_def in graph.as_graph_def().library.function:
        ops |= {node.op for node in function_def.node_def}
    assert "While" in ops or "StatelessWhile" in ops
    assert not {op for op in ops if op.startswith("TensorList")}
