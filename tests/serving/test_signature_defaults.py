"""Signature inputs with SignatureDef `defaults`: gRPC Predict fills them, REST needs every input.

TF Serving's Predict fills an input missing from a `PredictRequest` from the
SignatureDef's `defaults` (tensorflow/cc/saved_model/util.cc, `GetInputValues`).
Its REST API builds that request from JSON first (tensorflow_serving/util/
json_tensor.cc, 2.20.0): the columnar format wants every signature input
("Missing named input: ... in 'inputs' object."), the row format wants every
input in every instance object, and a plain list of instances only fits a
signature with one input. So over REST a defaulted input is always sent; a
scalar one cannot be (a row adds a batch dimension), only the columnar format
can call such a signature.

The model: `echo` joins each text with itself `repeat` times (default 2), and
`repeat` is echoed per row, so the answer shows the value that was fed.
"""

import json
import urllib.error
import urllib.request

import grpc
import numpy as np
import pytest
from tensorflow_serving.apis import model_pb2, predict_pb2, prediction_service_pb2_grpc

from keras_attention_client.wire.tensors import ndarray_to_tensor_proto, tensor_proto_to_ndarray

DEFAULT_REPEAT = 2


def _build_export(path):
    import tensorflow as tf

    class Echo(tf.Module):
        @tf.function(
            input_signature=[
                tf.TensorSpec([None], tf.string, name="text"),
                tf.TensorSpec([], tf.int32, name="repeat"),
            ]
        )
        def echo(self, text, repeat=tf.constant(DEFAULT_REPEAT)):  # noqa: B008 - the default
            joined = tf.strings.reduce_join(tf.repeat(text[:, None], repeat, axis=1), axis=1)
            return {"echo": joined, "repeat": tf.fill(tf.shape(text), repeat)}

    module = Echo()
    tf.saved_model.save(module, str(path / "1"), signatures={"serving_default": module.echo})
    return path


@pytest.fixture(scope="module")
def echo_server(tmp_path_factory):
    from keras_attention.serving import ModelServer, ServerOptions
    from keras_attention.serving.server.model_server import free_port

    base = _build_export(tmp_path_factory.mktemp("echo"))
    options = ServerOptions(
        port=0,
        rest_api_port=free_port(),
        model_name="echo",
        model_base_path=str(base),
        file_system_poll_wait_seconds=0,
    )
    with ModelServer(options) as server:
        yield server


def _grpc(server, **inputs):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "echo"
    for alias, value in inputs.items():
        ndarray_to_tensor_proto(value, out=request.inputs[alias])
    with grpc.insecure_channel(server.address) as channel:
        response = prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(
            request, timeout=30
        )
    return {alias: tensor_proto_to_ndarray(t).tolist() for alias, t in response.outputs.items()}


def _rest(server, body):
    request = urllib.request.Request(
        server.rest_url + "/v1/models/echo:predict", json.dumps(body).encode(), method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_export_has_a_default(echo_server):
    with echo_server.manager.servable(model_pb2.ModelSpec(name="echo")) as session:
        signature = session.signature_defs["serving_default"]
    assert sorted(signature.inputs) == ["repeat", "text"]
    assert list(signature.defaults) == ["repeat"]


def test_grpc_fills_a_missing_input_from_the_default(echo_server):
    texts = np.array([b"ab", b"c"], dtype=object)
    assert _grpc(echo_server, text=texts) == {"echo": [b"abab", b"cc"], "repeat": [2, 2]}
    sent = _grpc(echo_server, text=texts, repeat=np.int32(3))
    assert sent == {"echo": [b"ababab", b"ccc"], "repeat": [3, 3]}


def test_rest_columnar_with_every_input(echo_server):
    status, body = _rest(echo_server, {"inputs": {"text": ["ab", "c"], "repeat": 3}})
    assert (status, body) == (200, {"outputs": {"echo": ["ababab", "ccc"], "repeat": [3, 3]}})


@pytest.mark.parametrize(
    "body, message",
    [
        ({"inputs": {"text": ["ab"]}}, "Missing named input: repeat in 'inputs' object."),
        (
            {"inputs": ["ab"]},
            "inputs is a plain value/list, but expecting an object as multiple input tensors "
            "required as per tensorinfo_map",
        ),
        (
            {"instances": ["ab"]},
            "instances is a plain list, but expecting list of objects as multiple input tensors "
            "required as per tensorinfo_map",
        ),
        (
            {"instances": [{"text": "ab"}]},
            'Failed to process element: 0 of \'instances\' list. JSON object: {"text":"ab"} '
            "keys must be equal to: repeat,text",
        ),
        (
            {"instances": [{"text": "ab", "repeat": 3}]},
            "input tensor alias repeat has shape [1], incompatible with the signature's shape []",
        ),
    ],
    ids=["columnar without it", "columnar plain", "row plain", "row without it", "row with it"],
)
def test_rest_needs_every_input_as_tf_serving(echo_server, body, message):
    assert _rest(echo_server, body) == (400, {"error": message})
