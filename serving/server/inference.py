"""Predict and GetModelMetadata on a loaded version, with TF Serving's status codes and messages.

TF Serving's request handling for what our exports use (tensorflow_serving/
servables/tensorflow/predict_util.cc, get_model_metadata_impl.cc, util.cc)
on top of `ServingSession.run` (or the batcher, with `--enable_batching`).
Our exports have Predict signatures only: Classify, Regress and
MultiInference get the answer TF Serving gives for such signatures.

Every function raises `ServingError` with the code TF Serving would answer;
TensorFlow runtime errors keep their own code (`tf.errors.OpError.error_code`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import get_model_metadata_pb2, model_pb2, predict_pb2

from keras_attention.serving.server.serving_session import ServingSession
from keras_attention_client.wire.contract import SIGNATURE_DEF_FIELD
from keras_attention_client.wire.errors import ServingError, code_name
from keras_attention_client.wire.tensors import (
    TensorParseError,
    dtype_string,
    ndarray_to_tensor_proto,
    tensor_proto_to_ndarray,
)

DEFAULT_SIGNATURE = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
CLASSIFY, REGRESS = "Classify", "Regress"

# Runs a signature, as `ServingSession.run` (or `Batcher.run`, with `--enable_batching`):
# (session, signature_name, inputs by alias, output aliases, timeout_in_ms) -> outputs by alias.
Runner = Callable[[ServingSession, str, dict, Sequence[str], "int | None"], dict]


def run_predict(
    session: ServingSession,
    request: predict_pb2.PredictRequest,
    *,
    timeout_in_ms: int | None = None,
    runner: Runner | None = None,
) -> predict_pb2.PredictResponse:
    """TF Serving's `RunPredict`: validate the request against the signature, run, answer.

    Inputs missing from the request are taken from the SignatureDef's
    `defaults` map, as TF Serving's `GetInputValues` does.

    Raises:
        ServingError: `FAILED_PRECONDITION` for an unknown signature,
            `INVALID_ARGUMENT` for missing/extra inputs, unparsable tensors,
            wrong dtypes or shapes and unknown/duplicate `output_filter`
            aliases; TensorFlow's own code for runtime errors
            (`DEADLINE_EXCEEDED` past `timeout_in_ms`).
    """
    signature_name = request.model_spec.signature_name or DEFAULT_SIGNATURE
    signature = session.signature_defs.get(signature_name)
    if signature is None:
        raise ServingError(
            "FAILED_PRECONDITION", f'Serving signature key "{signature_name}" not found.'
        )
    inputs = _predict_inputs(signature, request)
    aliases = _output_aliases(signature, request.output_filter)
    if timeout_in_ms is not None and timeout_in_ms <= 0:
        raise ServingError("DEADLINE_EXCEEDED", "Deadline Exceeded")
    try:
        outputs = (runner or _run)(session, signature_name, inputs, aliases, timeout_in_ms)
    except tf.errors.OpError as error:
        raise ServingError(code_name(error.error_code), error.message) from None
    response = predict_pb2.PredictResponse()
    make_model_spec(request.model_spec.name, signature_name, session.version, response.model_spec)
    for alias in aliases:
        ndarray_to_tensor_proto(np.asarray(outputs[alias]), out=response.outputs[alias])
    return response


def _run(session, signature_name, inputs, output_keys, timeout_in_ms) -> dict:
    return session.run(signature_name, inputs, output_keys, timeout_in_ms=timeout_in_ms)


def _predict_inputs(signature: Any, request: predict_pb2.PredictRequest) -> dict[str, np.ndarray]:
    sent, expected, defaults = set(request.inputs), set(signature.inputs), signature.defaults
    if len(sent) > len(expected) or (len(sent) < len(expected) and not defaults):
        raise ServingError(
            "INVALID_ARGUMENT",
            f"input size does not match signature: {len(sent)}!={len(expected)}"
            f" len({{{_join(sent)}}}) != len({{{_join(expected)}}})."
            f" Sent extra: {{{_join(sent - expected)}}}."
            f" Missing but required: {{{_join(expected - sent)}}}.",
        )
    inputs: dict[str, np.ndarray] = {}
    for index, alias in enumerate(sorted(expected)):
        info = signature.inputs[alias]
        proto = request.inputs[alias] if alias in sent else defaults.get(alias)
        if proto is None:
            raise ServingError(
                "INVALID_ARGUMENT",
                f"Signature input alias: {alias}(feed name: {info.name}) not found in request "
                f"and no default value provided. Inputs expected to be in the request "
                f"{{{_join(sent)}}}, or default input alias set: {_join(defaults)}",
            )
        inputs[alias] = _parse_input(alias, index, proto, info)
    if sent - expected:
        raise ServingError(
            "INVALID_ARGUMENT",
            f"Inputs contains invalid name. Used request inputs: {_join(sent & expected)}, "
            f"request input: {_join(sent)}",
        )
    return inputs


def _parse_input(alias: str, index: int, proto: Any, info: Any) -> np.ndarray:
    try:
        value = tensor_proto_to_ndarray(proto)
    except TensorParseError as error:
        raise ServingError("INVALID_ARGUMENT", f"tensor parsing error: {alias}") from error
    if proto.dtype != info.dtype:  # the C++ Session's feed check (FunctionCallFrame::SetArgs)
        raise ServingError(
            "INVALID_ARGUMENT",
            f"Expects arg[{index}] to be {dtype_string(info.dtype)} but "
            f"{dtype_string(proto.dtype)} is provided",
        )
    if not info.tensor_shape.unknown_rank:
        dims = [d.size for d in info.tensor_shape.dim]
        if len(dims) != value.ndim or any(
            d >= 0 and d != s for d, s in zip(dims, value.shape, strict=True)
        ):
            raise ServingError(
                "INVALID_ARGUMENT",
                f"input tensor alias {alias} has shape {_shape(value.shape)}, "
                f"incompatible with the signature's shape {_shape(dims)}",
            )
    return value


def _output_aliases(signature: Any, output_filter: Sequence[str]) -> list[str]:
    for index, alias in enumerate(output_filter):
        if alias not in signature.outputs:
            raise ServingError(
                "INVALID_ARGUMENT",
                f"output tensor alias not found in signature: {alias} Outputs expected to be "
                f"in the set {{{_join(signature.outputs)}}}.",
            )
        if alias in output_filter[:index]:
            raise ServingError("INVALID_ARGUMENT", f"duplicate output tensor alias: {alias}")
    return list(output_filter) or sorted(signature.outputs)


def reject_classify_regress(session: ServingSession, api: str, signature_name: str) -> NoReturn:
    """Answers Classify / Regress (`api`) as TF Serving does for a Predict-only signature.

    TF Serving's checks (`classifier.cc`, `regressor.cc`), in order: the
    signature exists; it has one input; one or two outputs (Classify) or one
    (Regress). Our signatures fail one of them; one that passed would need
    tf.Example parsing, which this server does not implement (`UNIMPLEMENTED`).
    """
    name = signature_name or DEFAULT_SIGNATURE
    signature = session.meta_graph_def.signature_def.get(name)
    if signature is None:
        raise ServingError("INVALID_ARGUMENT", f"No signature was found with the name: {name}")
    if len(signature.inputs) != 1:
        raise ServingError("INVALID_ARGUMENT", "Expected one input Tensor.")
    if api == CLASSIFY and len(signature.outputs) not in (1, 2):
        found = len(signature.outputs)
        raise ServingError("INVALID_ARGUMENT", f"Expected one or two output Tensors, found {found}")
    if api == REGRESS and len(signature.outputs) != 1:
        raise ServingError("INVALID_ARGUMENT", "Expected one output Tensor.")
    raise ServingError("UNIMPLEMENTED", f"{api} is not implemented by this server; use Predict.")


def reject_multi_inference(session: ServingSession, tasks: Sequence[Any]) -> NoReturn:
    """Answers MultiInference: each task is a Classify or Regress (TF Serving's first failure)."""
    methods = {
        tf.saved_model.CLASSIFY_METHOD_NAME: CLASSIFY,
        tf.saved_model.REGRESS_METHOD_NAME: REGRESS,
    }
    for task in tasks:
        if task.method_name not in methods:
            raise ServingError(
                "UNIMPLEMENTED", f"Unsupported signature method_name: {task.method_name}"
            )
        reject_classify_regress(session, methods[task.method_name], task.model_spec.signature_name)
    raise ServingError("INVALID_ARGUMENT", "MultiInferenceRequest has no tasks.")


def validate_metadata_request(request: get_model_metadata_pb2.GetModelMetadataRequest) -> None:
    """TF Serving's `ValidateGetModelMetadataRequest`."""
    if not request.metadata_field:
        raise ServingError(
            "INVALID_ARGUMENT", "GetModelMetadataRequest must specify at least one metadata_field"
        )
    for field in request.metadata_field:
        if field != SIGNATURE_DEF_FIELD:
            raise ServingError("INVALID_ARGUMENT", f"Metadata field {field} is not supported")


def get_model_metadata(session: ServingSession) -> get_model_metadata_pb2.GetModelMetadataResponse:
    """The `signature_def` metadata of a loaded version (every SignatureDef, as TF Serving)."""
    signature_def_map = get_model_metadata_pb2.SignatureDefMap()
    for name, signature in session.meta_graph_def.signature_def.items():
        signature_def_map.signature_def[name].CopyFrom(signature)
    response = get_model_metadata_pb2.GetModelMetadataResponse()
    make_model_spec(session.name, None, session.version, response.model_spec)
    response.metadata[SIGNATURE_DEF_FIELD].Pack(signature_def_map)
    return response


def make_model_spec(
    name: str, signature_name: str | None, version: int | None, spec: model_pb2.ModelSpec
) -> None:
    """TF Serving's `MakeModelSpec` (empty signature name becomes `serving_default`)."""
    spec.Clear()
    spec.name = name
    if signature_name is not None:
        spec.signature_name = signature_name or DEFAULT_SIGNATURE
    if version is not None:
        spec.version.value = version


def _join(keys) -> str:
    return ",".join(sorted(keys))


def _shape(shape) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"
