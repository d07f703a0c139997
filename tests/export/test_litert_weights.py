"""`int8_weight_only` on a small converted function, against NumPy: the int8 values and
scales of the SavedModel's scheme (a scale per output row, `max|w| / 127`, rounded half to
even), computed in float32."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from keras_attention.export.litert.ops import model_ops
from keras_attention.export.litert.weights import int8_weight_only


def numpy_int8(weights: np.ndarray) -> np.ndarray:
    """The values int8 storage stands for, per row: `round(w / s) * s`, `s = max|w| / 127`."""
    scale = np.abs(weights).max(axis=1, keepdims=True) / np.float32(127)
    return (np.round(weights / scale) * scale).astype(np.float32)


@pytest.fixture(scope="module")
def weights():
    rng = np.random.default_rng(0)
    table = rng.normal(size=(64, 32)).astype(np.float32)  # a lookup table and a tied output
    kernel = rng.normal(size=(32, 48)).astype(np.float32)  # a Keras kernel (inputs, outputs)
    small = rng.normal(size=(4, 8)).astype(np.float32)  # small: int8 too, as in a SavedModel
    return table, kernel, small


def model(weights) -> bytes:
    table, kernel, small = weights

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.int32)])
    def step(ids):
        rows = tf.gather(tf.constant(table), ids)  # (batch, 3, 32)
        hidden = tf.reduce_sum(rows, axis=1)
        logits = tf.matmul(hidden, tf.constant(table), transpose_b=True)  # tied
        out = tf.matmul(hidden, tf.constant(kernel))
        extra = tf.matmul(tf.reshape(out[:, :4], [-1, 4]), tf.constant(small))
        return {"logits": logits, "out": out, "extra": extra}

    module = tf.Module()
    module.step = step
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [step.get_concrete_function()], module
    )
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    return converter.convert()


def run(data: bytes, ids: np.ndarray) -> dict:
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(model_content=data).get_signature_runner()
    return runner(ids=ids)


def test_weights_are_stored_in_int8_and_give_the_int8_values(weights):
    table, kernel, small = weights
    float_model = model(weights)
    data = int8_weight_only(float_model)
    # The table once (its lookup and the tied projection share it) and the kernel in int8
    # (plus a scale and a zero point per row).
    assert len(data) < len(float_model) - 0.5 * (table.nbytes + kernel.nbytes)
    assert "DEQUANTIZE" in model_ops(data)["builtin"]

    ids = np.array([[1, 5, 63], [0, 0, 7]], np.int32)
    got = run(data, ids)
    table_q, kernel_q = numpy_int8(table), numpy_int8(kernel.T).T
    hidden = table_q[ids].sum(axis=1)
    np.testing.assert_allclose(got["logits"], hidden @ table_q.T, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got["out"], hidden @ kernel_q, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(
        got["extra"], (hidden @ kernel_q)[:, :4] @ numpy_int8(small.T).T, rtol=1e-5, atol=1e-4
    )
    # Not the float32 weights' values: the int8 rounding is there.
    assert np.abs(got["logits"] - hidden @ table.T).max() > 1e-3
