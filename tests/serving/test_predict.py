"""keras_attention.serving.server.predict: runtime errors keep their code; model specs; outputs."""

import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import model_pb2, predict_pb2

from keras_attention.serving.server import predict
from keras_attention_client.wire.errors import ServingError
from keras_attention_client.wire.tensors import ndarray_to_tensor_proto


def _predict(server, runner, timeout_in_ms=None):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "translator"
    ndarray_to_tensor_proto(np.array(["a b"], dtype=object), out=request.inputs["text"])
    with server.manager.servable(request.model_spec) as session:
        return predict.run_predict(session, request, timeout_in_ms=timeout_in_ms, runner=runner)


def _failing(error):
    def run(session, signature_name, inputs, output_keys, timeout_in_ms):
        raise error

    return run


@pytest.mark.parametrize(
    "error, code",
    [
        (tf.errors.InvalidArgumentError(None, None, "bad value"), "INVALID_ARGUMENT"),
        (tf.errors.ResourceExhaustedError(None, None, "OOM"), "RESOURCE_EXHAUSTED"),
        (tf.errors.DeadlineExceededError(None, None, "Timed out"), "DEADLINE_EXCEEDED"),
        (tf.errors.FailedPreconditionError(None, None, "uninitialized"), "FAILED_PRECONDITION"),
        (tf.errors.InternalError(None, None, "boom"), "INTERNAL"),
    ],
)
def test_runtime_errors_keep_their_code_and_message(server, error, code):
    with pytest.raises(ServingError) as caught:
        _predict(server, _failing(error))
    assert (caught.value.code, caught.value.message) == (code, error.message)


def test_an_expired_deadline_fails_before_running(server):
    with pytest.raises(ServingError) as caught:
        _predict(server, _failing(AssertionError("must not run")), timeout_in_ms=0)
    assert caught.value.code == "DEADLINE_EXCEEDED"


def test_make_model_spec_names_the_default_signature():
    spec = model_pb2.ModelSpec(name="old", version_label="x")
    predict.make_model_spec("m", "", 3, spec)
    assert (spec.name, spec.signature_name, spec.version.value) == ("m", "serving_default", 3)
    assert spec.WhichOneof("version_choice") == "version"
    predict.make_model_spec("m", None, None, spec)
    assert spec.signature_name == "" and not spec.HasField("version")


def test_outputs_are_typed_fields_like_tf_serving(server):
    response = _predict(server, None)
    attention = response.outputs["attention"]
    assert not attention.tensor_content and len(attention.float_val) == 4
    assert list(response.outputs["tokens"].string_val) == [b"B", b"A"]
