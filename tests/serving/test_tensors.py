"""NumPy <-> TensorProto without TensorFlow ops, checked against tf.make_tensor_proto / make_ndarray.

The dtypes are the translation contract's (string, float32, int32) and int64;
the others are refused with an error naming them.
"""

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.framework import tensor_pb2 as tf_tensor_pb2

from keras_attention_client.wire.protos import tensor_pb2, types_pb2
from keras_attention_client.wire.tensors import (
    TensorParseError,
    dtype_string,
    ndarray_to_tensor_proto,
    shape_from_proto,
    shape_proto,
    tensor_proto_to_ndarray,
)

ARRAYS = [
    np.array([[1.5, -2.0], [3.25, np.inf]], np.float32),
    np.array([[1, -2, 3]], np.int32),
    np.array([2**40, -(2**40)], np.int64),
    np.float32(3.5),
]
REFUSED = [
    np.array([1e300, -0.5], np.float64),
    np.array([255, 0, 7], np.uint8),
    np.array([[True, False]], np.bool_),
    np.array([0.5, -1.0], np.float16),
    np.array([1 + 2j], np.complex64),
]


def _as_tensorflow(proto):
    """TensorFlow's own TensorProto, parsed from the client message's bytes."""
    return tf_tensor_pb2.TensorProto.FromString(proto.SerializeToString())


@pytest.mark.parametrize("array", ARRAYS, ids=lambda a: str(np.asarray(a).dtype))
@pytest.mark.parametrize("use_tensor_content", [False, True])
def test_numeric_proto_reads_back_with_tensorflow(array, use_tensor_content):
    proto = ndarray_to_tensor_proto(array, use_tensor_content=use_tensor_content)
    expected = np.asarray(array)
    np.testing.assert_array_equal(tf.make_ndarray(_as_tensorflow(proto)), expected)
    assert tf.make_ndarray(_as_tensorflow(proto)).dtype == expected.dtype


@pytest.mark.parametrize("array", ARRAYS, ids=lambda a: str(np.asarray(a).dtype))
def test_tensorflow_protos_parse(array):
    proto = tf.make_tensor_proto(array)
    result = tensor_proto_to_ndarray(proto)
    np.testing.assert_array_equal(result, np.asarray(array))
    assert result.dtype == np.asarray(array).dtype
    assert result.shape == np.shape(array)


def test_strings_are_utf8_bytes_and_round_trip():
    texts = [["héllo", "wörld"], ["", "x"]]
    proto = ndarray_to_tensor_proto(texts)
    assert proto.dtype == types_pb2.DT_STRING
    assert list(proto.string_val) == ["héllo".encode(), "wörld".encode(), b"", b"x"]
    encoded = [[text.encode("utf-8") for text in row] for row in texts]
    assert tf.make_ndarray(_as_tensorflow(proto)).tolist() == encoded
    back = tensor_proto_to_ndarray(
        tf.make_tensor_proto(np.array([b"\xff\x00", b"a"], dtype=object))
    )
    assert back.tolist() == [b"\xff\x00", b"a"]


def test_typed_fields_fewer_values_repeat_the_last_like_tf_from_proto():
    # Hand-worked: shape [2, 3] with values [1, 2] -> [[1, 2, 2], [2, 2, 2]].
    proto = tensor_pb2.TensorProto(dtype=types_pb2.DT_INT32, int_val=[1, 2])
    proto.tensor_shape.CopyFrom(shape_proto([2, 3]))
    np.testing.assert_array_equal(tensor_proto_to_ndarray(proto), [[1, 2, 2], [2, 2, 2]])
    strings = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING, string_val=[b"a"])
    strings.tensor_shape.CopyFrom(shape_proto([3]))
    assert tensor_proto_to_ndarray(strings).tolist() == [b"a", b"a", b"a"]


def test_typed_fields_without_values_are_zeros_and_extra_values_are_ignored():
    empty = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT)
    empty.tensor_shape.CopyFrom(shape_proto([2]))
    np.testing.assert_array_equal(tensor_proto_to_ndarray(empty), [0.0, 0.0])
    extra = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, float_val=[1, 2, 3])
    extra.tensor_shape.CopyFrom(shape_proto([2]))
    np.testing.assert_array_equal(tensor_proto_to_ndarray(extra), [1.0, 2.0])


@pytest.mark.parametrize("array", REFUSED, ids=lambda a: str(a.dtype))
def test_other_dtypes_are_refused_naming_them(array):
    with pytest.raises(ValueError, match=f"Received: dtype={array.dtype}"):
        ndarray_to_tensor_proto(array)
    with pytest.raises(TensorParseError, match="unsupported or invalid dtype DT_"):
        tensor_proto_to_ndarray(tf.make_tensor_proto(array))


@pytest.mark.parametrize(
    "proto",
    [
        tensor_pb2.TensorProto(dtype=types_pb2.DT_INVALID),
        tensor_pb2.TensorProto(dtype=types_pb2.DT_RESOURCE),
        tensor_pb2.TensorProto(
            dtype=types_pb2.DT_FLOAT, tensor_shape=shape_proto([-1]), float_val=[1.0]
        ),
        tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, tensor_shape=shape_proto(None)),
        tensor_pb2.TensorProto(
            dtype=types_pb2.DT_FLOAT, tensor_shape=shape_proto([3]), tensor_content=b"\x00" * 8
        ),
    ],
    ids=["invalid-dtype", "resource", "negative-dim", "unknown-rank", "short-content"],
)
def test_unparsable_tensors_raise(proto):
    with pytest.raises(TensorParseError):
        tensor_proto_to_ndarray(proto)


def test_empty_and_scalar_shapes():
    empty = ndarray_to_tensor_proto(np.zeros((0, 3), np.float32))
    assert tensor_proto_to_ndarray(empty).shape == (0, 3)
    scalar = ndarray_to_tensor_proto(np.int64(7))
    assert tensor_proto_to_ndarray(scalar).shape == ()
    assert int(tensor_proto_to_ndarray(scalar)) == 7


def test_shapes_and_dtype_strings():
    assert shape_from_proto(shape_proto([None, 3])) == (None, 3)
    assert shape_from_proto(shape_proto(None)) is None
    assert dtype_string(types_pb2.DT_STRING) == "string"
    assert dtype_string(types_pb2.DT_FLOAT) == "float"
    assert dtype_string(types_pb2.DT_INT32) == "int32"


def test_bad_values_raise_value_errors_naming_them():
    with pytest.raises(ValueError, match="Received"):
        ndarray_to_tensor_proto(np.array([object()], dtype=object))
    with pytest.raises(ValueError, match="Received"):
        ndarray_to_tensor_proto(np.array(["2020-01-01"], dtype="datetime64[D]"))


def test_dtype_mismatch_is_tf_servings_refusal():
    from keras_attention_client.wire.tensors import dtype_mismatch

    string, floats = types_pb2.DT_STRING, types_pb2.DT_FLOAT
    assert dtype_mismatch(0, string, string) is None
    assert dtype_mismatch(2, string, floats) == "Expects arg[2] to be string but float is provided"
