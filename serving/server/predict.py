"""Predict and GetModelMetadata on a loaded version, with TF Serving's status codes and messages.

TF Serving's request handling (predict_util.cc, get_model_metadata_impl.cc,
saved_model/util.cc) for the gRPC services and the REST API. Errors are
`ServingError`s with TF Serving's code; TensorFlow runtime errors keep theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import get_model_metadata_pb2, model_pb2, predict_pb2

from keras_attention.saved_model_session import SavedModelSession
from keras_attention_client.wire.contract import SIGNATURE_DEF_FIELD
from keras_attention_client.wire.errors import ServingError, code_name
from keras_attention_client.wire.tensors import (
    TensorParseError,
    dtype_mismatch,
    ndarray_to_tensor_proto,
    tensor_proto_to_ndarray,
)

DEFAULT_SIGNATURE = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
CLASSIFY, REGRESS = tf.saved_model.CLASSIFY_METHOD_NAME, tf.saved_model.REGRESS_METHOD_NAME

# Runs a signature, as `SavedModelSession.run` (or `Batcher.run`, with `--enable_batching`):
# (session, signature_name, inputs by alias, output aliases, timeout_in_ms) -> outputs by alias.
Runner = Callable[[SavedModelSession, str, dict, Sequence[str], "int | None"], dict]


def predict(
    session: SavedModelSession,
    signature_name: str,
    inputs: Mapping[str, Any],
    output_filter: Sequence[str] = (),
    *,
    timeout_in_ms: int | None = None,
    runner: Runner | None = None,
) -> dict[str, np.ndarray]:
    """TF Serving's `RunPredict`: the outputs (alias -> array) of `output_filter` (default: all).

    `inputs` are `TensorProto`s (gRPC) or arrays of the signature's dtypes (REST);
    one left out is the SignatureDef's default (`GetInputValues`). An unknown
    signature is `FAILED_PRECONDITION`; bad inputs or outputs `INVALID_ARGUMENT`.
    """
    signature_name = signature_name or DEFAULT_SIGNATURE
    signature = session.signature_defs.get(signature_name)
    if signature is None:
        message = f'Serving signature key "{signature_name}" not found.'
        raise ServingError("FAILED_PRECONDITION", message)
    arrays = _input_arrays(signature, inputs)
    for index, alias in enumerate(output_filter):
        if alias not in signature.outputs:
            raise ServingError(
                "INVALID_ARGUMENT",
                f"output tensor alias not found in signature: {alias} Outputs expected to be "
                f"in the set {{{_join(signature.outputs)}}}.",
            )
        if alias in output_filter[:index]:
            raise ServingError("INVALID_ARGUMENT", f"duplicate output tensor alias: {alias}")
    aliases = list(output_filter) or sorted(signature.outputs)
    if timeout_in_ms is not None and timeout_in_ms <= 0:
        raise ServingError("DEADLINE_EXCEEDED", "Deadline Exceeded")
    try:
        if runner is None:
            outputs = session.run(signature_name, arrays, aliases, timeout_in_ms=timeout_in_ms)
        else:
            outputs = runner(session, signature_name, arrays, aliases, timeout_in_ms)
    except tf.errors.OpError as error:
        raise ServingError(code_name(error.error_code), error.message) from None
    return {alias: np.asarray(outputs[alias]) for alias in aliases}


def run_predict(
    session: SavedModelSession,
    request: predict_pb2.PredictRequest,
    *,
    timeout_in_ms: int | None = None,
    runner: Runner | None = None,
) -> predict_pb2.PredictResponse:
    """`predict` for a `PredictRequest`, answered as a `PredictResponse`."""
    spec, filter_ = request.model_spec, request.output_filter
    run = {"timeout_in_ms": timeout_in_ms, "runner": runner}
    outputs = predict(session, spec.signature_name, request.inputs, filter_, **run)
    response = predict_pb2.PredictResponse()
    make_model_spec(spec.name, spec.signature_name, session.version, response.model_spec)
    for alias, value in outputs.items():
        ndarray_to_tensor_proto(value, out=response.outputs[alias])
    return response


def _input_arrays(signature: Any, inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
    sent, expected, defaults = set(inputs), set(signature.inputs), signature.defaults
    if len(sent) > len(expected) or (len(sent) < len(expected) and not defaults):
        raise ServingError(
            "INVALID_ARGUMENT",
            f"input size does not match signature: {len(sent)}!={len(expected)}"
            f" len({{{_join(sent)}}}) != len({{{_join(expected)}}})."
            f" Sent extra: {{{_join(sent - expected)}}}."
            f" Missing but required: {{{_join(expected - sent)}}}.",
        )
    arrays = {}
    for index, alias in enumerate(sorted(expected)):
        info = signature.inputs[alias]
        proto = inputs[alias] if alias in sent else defaults.get(alias)
        if proto is None:
            raise ServingError(
                "INVALID_ARGUMENT",
                f"Signature input alias: {alias}(feed name: {info.name}) not found in request "
                f"and no default value provided. Inputs expected to be in the request "
                f"{{{_join(sent)}}}, or default input alias set: {_join(defaults)}",
            )
        if isinstance(proto, np.ndarray):  # from REST JSON, of the signature's dtype
            value = proto
        else:
            try:
                value = tensor_proto_to_ndarray(proto)
            except TensorParseError as error:
                raise ServingError("INVALID_ARGUMENT", f"tensor parsing error: {alias}") from error
        mismatch = None if value is proto else dtype_mismatch(index, info.dtype, proto.dtype)
        if mismatch:  # the Session's feed check
            raise ServingError("INVALID_ARGUMENT", mismatch)
        dims = [d.size for d in info.tensor_shape.dim]
        if not info.tensor_shape.unknown_rank and (
            len(dims) != value.ndim
            or any(d not in (-1, s) for d, s in zip(dims, value.shape, strict=True))
        ):
            raise ServingError(
                "INVALID_ARGUMENT",
                f"input tensor alias {alias} has shape {_shape(value.shape)}, "
                f"incompatible with the signature's shape {_shape(dims)}",
            )
        arrays[alias] = value
    if sent - expected:
        raise ServingError(
            "INVALID_ARGUMENT",
            f"Inputs contains invalid name. Used request inputs: {_join(sent & expected)}, "
            f"request input: {_join(sent)}",
        )
    return arrays


def refuse(session: SavedModelSession, method_name: str, signature_name: str) -> NoReturn:
    """Answers Classify, Regress or a MultiInference task as TF Serving does for our signatures.

    TF Serving's checks (`classifier.cc`, `regressor.cc`); one that passed would
    need tf.Example parsing, which this server lacks (`UNIMPLEMENTED`).
    """
    if method_name not in (CLASSIFY, REGRESS):
        raise ServingError("UNIMPLEMENTED", f"Unsupported signature method_name: {method_name}")
    name = signature_name or DEFAULT_SIGNATURE
    signature = session.meta_graph_def.signature_def.get(name)
    if signature is None:
        raise ServingError("INVALID_ARGUMENT", f"No signature was found with the name: {name}")
    outputs = len(signature.outputs)
    if len(signature.inputs) != 1:
        raise ServingError("INVALID_ARGUMENT", "Expected one input Tensor.")
    if method_name == CLASSIFY and outputs not in (1, 2):
        message = f"Expected one or two output Tensors, found {outputs}"
        raise ServingError("INVALID_ARGUMENT", message)
    if method_name == REGRESS and outputs != 1:
        raise ServingError("INVALID_ARGUMENT", "Expected one output Tensor.")
    raise ServingError("UNIMPLEMENTED", "Classify and Regress are not implemented; use Predict.")


def check_metadata_fields(metadata_field: Sequence[str]) -> None:
    """TF Serving's `ValidateGetModelMetadataRequest`: `signature_def` is the one field."""
    if not metadata_field:
        raise ServingError(
            "INVALID_ARGUMENT", "GetModelMetadataRequest must specify at least one metadata_field"
        )
    for field in metadata_field:
        if field != SIGNATURE_DEF_FIELD:
            raise ServingError("INVALID_ARGUMENT", f"Metadata field {field} is not supported")


def get_model_metadata(
    session: SavedModelSession,
) -> get_model_metadata_pb2.GetModelMetadataResponse:
    """Every SignatureDef of a loaded version (with `__saved_model_init_op`, as TF Serving)."""
    response = get_model_metadata_pb2.GetModelMetadataResponse()
    make_model_spec(session.name, None, session.version, response.model_spec)
    signature_defs = get_model_metadata_pb2.SignatureDefMap(
        signature_def=session.meta_graph_def.signature_def
    )
    response.metadata[SIGNATURE_DEF_FIELD].Pack(signature_defs)
    return response


def make_model_spec(
    name: str, signature_name: str | None, version: int | None, spec: model_pb2.ModelSpec
) -> None:
    """TF Serving's `MakeModelSpec` (an empty signature name becomes `serving_default`)."""
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
