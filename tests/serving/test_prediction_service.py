"""PredictionService over real gRPC: TF Serving's status codes and messages, and results."""

import threading

import grpc
import numpy as np
import pytest
from tensorflow.core.framework import types_pb2
from tensorflow_serving.apis import (
    classification_pb2,
    get_model_metadata_pb2,
    inference_pb2,
    model_pb2,
    predict_pb2,
    prediction_service_pb2_grpc,
    regression_pb2,
)

from keras_attention_client.wire.tensors import (
    ndarray_to_tensor_proto,
    shape_from_proto,
    tensor_proto_to_ndarray,
)

OUTPUT_SET = "{attention,length,score,source_tokens,tokens,translation}"


@pytest.fixture(scope="module")
def stub(server):
    channel = grpc.insecure_channel(server.address)
    yield prediction_service_pb2_grpc.PredictionServiceStub(channel)
    channel.close()


def _request(name="translator", signature="serving_default", texts=("a b",), **inputs):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = name
    request.model_spec.signature_name = signature
    if texts is not None:
        ndarray_to_tensor_proto(list(texts), out=request.inputs["text"])
    for alias, proto in inputs.items():
        request.inputs[alias].ParseFromString(proto.SerializeToString())
    return request


def _unparsable():
    proto = ndarray_to_tensor_proto(np.zeros(3, np.float32), use_tensor_content=True)
    proto.dtype = types_pb2.DT_STRING
    return proto


def _versioned(version):
    request = _request()
    request.model_spec.version.value = version
    return request


def _labelled(label):
    request = _request()
    request.model_spec.version_label = label
    return request


def _no_spec():
    request = _request()
    request.ClearField("model_spec")
    return request


def _filtered(*aliases):
    request = _request()
    request.output_filter.extend(aliases)
    return request


def _wrong_alias():
    request = _request(texts=None)
    ndarray_to_tensor_proto(["a"], out=request.inputs["txt"])
    return request


def _bad_shape():
    request = _request(texts=None)
    ndarray_to_tensor_proto([["a", "b"], ["c", "d"]], out=request.inputs["text"])
    return request


# One row per line of TF Serving's status table (predict_util.cc, server_core.cc, ...).
STATUS_TABLE = [
    ("no model_spec", _no_spec, "INVALID_ARGUMENT", "Missing ModelSpec"),
    (
        "empty name",
        lambda: _request(name=""),
        "INVALID_ARGUMENT",
        "ModelSpec has no name specified.",
    ),
    (
        "unknown model",
        lambda: _request(name="nope"),
        "NOT_FOUND",
        "Servable not found for request: Latest(nope)",
    ),
    (
        "unknown version",
        lambda: _versioned(3),
        "NOT_FOUND",
        "Servable not found for request: Specific(translator, 3)",
    ),
    (
        "unknown label",
        lambda: _labelled("canary"),
        "INVALID_ARGUMENT",
        "Unrecognized servable version label: canary",
    ),
    (
        "unknown signature",
        lambda: _request(signature="greedy"),
        "FAILED_PRECONDITION",
        'Serving signature key "greedy" not found.',
    ),
    (
        "missing input",
        lambda: _request(texts=None),
        "INVALID_ARGUMENT",
        "input size does not match signature: 0!=1 len({}) != len({text}). Sent extra: {}. "
        "Missing but required: {text}.",
    ),
    (
        "extra input",
        lambda: _request(extra=ndarray_to_tensor_proto([1])),
        "INVALID_ARGUMENT",
        "input size does not match signature: 2!=1 len({extra,text}) != len({text}). "
        "Sent extra: {extra}. Missing but required: {}.",
    ),
    (
        "wrong alias",
        _wrong_alias,
        "INVALID_ARGUMENT",
        "Signature input alias: text(feed name: serving_default_text:0) not found in request and "
        "no default value provided. Inputs expected to be in the request {txt}, or default input "
        "alias set: ",
    ),
    (
        "wrong dtype",
        lambda: _request(texts=None, text=ndarray_to_tensor_proto(np.float32([1.5]))),
        "INVALID_ARGUMENT",
        "Expects arg[0] to be string but float is provided",
    ),
    (
        "unparsable tensor",
        lambda: _request(texts=None, text=_unparsable()),
        "INVALID_ARGUMENT",
        "tensor parsing error: text",
    ),
    (
        "wrong rank",
        _bad_shape,
        "INVALID_ARGUMENT",
        "input tensor alias text has shape [2,2], incompatible with the signature's shape [-1]",
    ),
    (
        "bad output_filter",
        lambda: _filtered("nope"),
        "INVALID_ARGUMENT",
        f"output tensor alias not found in signature: nope Outputs expected to be in the set "
        f"{OUTPUT_SET}.",
    ),
    (
        "duplicate output_filter",
        lambda: _filtered("score", "score"),
        "INVALID_ARGUMENT",
        "duplicate output tensor alias: score",
    ),
]


@pytest.mark.parametrize(
    "make_request, code, message",
    [row[1:] for row in STATUS_TABLE],
    ids=[row[0] for row in STATUS_TABLE],
)
def test_predict_status_table(stub, make_request, code, message):
    with pytest.raises(grpc.RpcError) as caught:
        stub.Predict(make_request(), timeout=30)
    assert caught.value.code() == grpc.StatusCode[code]
    assert caught.value.details() == message


def test_deadline_exceeded_on_a_slow_request(stub):
    request = _request(name="slow", texts=None)
    ndarray_to_tensor_proto(np.array([10**8], np.int64), out=request.inputs["iterations"])
    with pytest.raises(grpc.RpcError) as caught:
        stub.Predict(request, timeout=0.2)
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    # The server cancelled the Session run too: the next request is answered at once.
    quick = _request(name="slow", texts=None)
    ndarray_to_tensor_proto(np.array([3], np.int64), out=quick.inputs["iterations"])
    response = stub.Predict(quick, timeout=10)
    assert tensor_proto_to_ndarray(response.outputs["count"]).tolist() == [3]


def test_predict_answers_typed_fields_and_model_spec(stub):
    response = stub.Predict(_filtered("translation", "length"), timeout=30)
    assert set(response.outputs) == {"translation", "length"}
    assert list(response.outputs["translation"].string_val) == [b"B A"]
    assert list(response.outputs["length"].int_val) == [2]
    assert shape_from_proto(response.outputs["translation"].tensor_shape) == (1,)
    assert response.model_spec.name == "translator"
    assert response.model_spec.signature_name == "serving_default"
    assert response.model_spec.version.value == 1
    # An empty signature name means serving_default, and the answer says so.
    default = stub.Predict(_request(signature=""), timeout=30)
    assert default.model_spec.signature_name == "serving_default"


def test_bad_requests_do_not_affect_concurrent_good_ones(stub):
    errors, answers = [], []

    def good():
        for _ in range(20):
            response = stub.Predict(_request(texts=["the cat"]), timeout=30)
            answers.append(list(response.outputs["translation"].string_val))

    def bad():
        for _, make, _, _ in STATUS_TABLE:
            try:
                stub.Predict(make(), timeout=30)
            except grpc.RpcError as error:
                errors.append(error.code())

    threads = [threading.Thread(target=good) for _ in range(3)]
    threads += [threading.Thread(target=bad) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [[b"CAT THE"]] * 60
    assert len(errors) == 2 * len(STATUS_TABLE)


def _metadata_request(name="translator", fields=("signature_def",)):
    request = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=list(fields))
    request.model_spec.name = name
    return request


def test_get_model_metadata(stub):
    response = stub.GetModelMetadata(_metadata_request(), timeout=30)
    assert response.model_spec.name == "translator"
    assert response.model_spec.version.value == 1
    signature_defs = get_model_metadata_pb2.SignatureDefMap()
    response.metadata["signature_def"].Unpack(signature_defs)
    assert {"serving_default", "beam_search"} <= set(signature_defs.signature_def)
    outputs = signature_defs.signature_def["beam_search"].outputs
    assert outputs["attention"].dtype == types_pb2.DT_FLOAT
    assert [d.size for d in outputs["tokens"].tensor_shape.dim] == [-1, -1]


@pytest.mark.parametrize(
    "request_, code, message",
    [
        (
            get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"]),
            "INVALID_ARGUMENT",
            "Missing ModelSpec",
        ),
        (
            _metadata_request(fields=()),
            "INVALID_ARGUMENT",
            "GetModelMetadataRequest must specify at least one metadata_field",
        ),
        (
            _metadata_request(fields=("graph",)),
            "INVALID_ARGUMENT",
            "Metadata field graph is not supported",
        ),
        (
            _metadata_request(name="nope"),
            "NOT_FOUND",
            "Servable not found for request: Latest(nope)",
        ),
    ],
    ids=["no spec", "no field", "bad field", "unknown model"],
)
def test_get_model_metadata_errors(stub, request_, code, message):
    with pytest.raises(grpc.RpcError) as caught:
        stub.GetModelMetadata(request_, timeout=30)
    assert (caught.value.code(), caught.value.details()) == (grpc.StatusCode[code], message)


def _examples(*values):
    request_input = classification_pb2.ClassificationRequest().input
    for value in values:
        example = request_input.example_list.examples.add()
        example.features.feature["x"].float_list.value.append(value)
    return request_input


def _classify(name="translator", signature="", examples=(1.0,)):
    request = classification_pb2.ClassificationRequest(input=_examples(*examples))
    request.model_spec.name = name
    request.model_spec.signature_name = signature
    return request


def _regress(name="translator", signature=""):
    request = regression_pb2.RegressionRequest(input=_examples(1.0))
    request.model_spec.name = name
    request.model_spec.signature_name = signature
    return request


def _multi(method="tensorflow/serving/classify", name="translator", tasks=1, signature=""):
    request = inference_pb2.MultiInferenceRequest(input=_examples(1.0))
    for _ in range(tasks):
        task = request.tasks.add(method_name=method)
        task.model_spec.name = name
        task.model_spec.signature_name = signature
    return request


@pytest.mark.parametrize(
    "rpc, make, code, message",
    [
        ("Classify", _classify, "INVALID_ARGUMENT", "Expected one or two output Tensors, found 6"),
        (
            "Classify",
            lambda: _classify(signature="x"),
            "INVALID_ARGUMENT",
            "No signature was found with the name: x",
        ),
        (
            "Classify",
            lambda: classification_pb2.ClassificationRequest(),
            "INVALID_ARGUMENT",
            "Missing ModelSpec",
        ),
        ("Regress", _regress, "INVALID_ARGUMENT", "Expected one output Tensor."),
        (
            "Regress",
            lambda: _regress(name="nope"),
            "NOT_FOUND",
            "Servable not found for request: Latest(nope)",
        ),
        (
            "MultiInference",
            _multi,
            "INVALID_ARGUMENT",
            "Expected one or two output Tensors, found 6",
        ),
        (
            "MultiInference",
            lambda: _multi(method="tensorflow/serving/predict"),
            "UNIMPLEMENTED",
            "Unsupported signature method_name: tensorflow/serving/predict",
        ),
        (
            "MultiInference",
            lambda: _multi(tasks=0),
            "INVALID_ARGUMENT",
            "ModelSpec has no name specified.",
        ),
    ],
    ids=[
        "classify-outputs",
        "classify-signature",
        "classify-no-spec",
        "regress-outputs",
        "regress-model",
        "multi-outputs",
        "multi-method",
        "multi-no-task",
    ],
)
def test_classify_regress_multi_inference_errors(stub, rpc, make, code, message):
    with pytest.raises(grpc.RpcError) as caught:
        getattr(stub, rpc)(make(), timeout=30)
    assert (caught.value.code(), caught.value.details()) == (grpc.StatusCode[code], message)


def test_model_spec_without_version_serves_the_latest(stub):
    spec = model_pb2.ModelSpec(name="translator")
    request = predict_pb2.PredictRequest(model_spec=spec)
    ndarray_to_tensor_proto(["x"], out=request.inputs["text"])
    assert stub.Predict(request, timeout=30).model_spec.version.value == 1
