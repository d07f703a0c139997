"""Predict and GetModelMetadata on a loaded version; Classify/Regress/MultiInference refused.

TF Serving's request handling for what our exports use (tensorflow_serving/
servables/tensorflow/predict_util.cc, get_model_metadata_impl.cc, util.cc),
with the same status codes and messages, on top of `SavedModelBundle.run`
(or the batcher, with `--enable_batching`). Classify, Regress and
MultiInference get the answer TF Serving gives for signatures that are not
classification/regression ones.

Every function raises `ServingError` with the code TF Serving would answer;
TensorFlow runtime errors keep their own code (`tf.errors.OpError.error_code`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import get_model_metadata_pb2, model_pb2, predict_pb2

from keras_attention.serving.server.saved_model import DEFAULT_SIGNATURE
from keras_attention.serving.server.saved_model_bundle import SavedModelBundle
from keras_attention_client.serving_error import ServingError, code_name
from keras_attention_client.tensor_util import (
    TensorParseError,
    dtype_string,
    ndarray_to_tensor_proto,
    tensor_proto_to_ndarray,
)

CLASSIFY_METHOD = tf.saved_model.CLASSIFY_METHOD_NAME
REGRESS_METHOD = tf.saved_model.REGRESS_METHOD_NAME
SIGNATURE_DEF_FIELD = "signature_def"

# Called with (api, runtime_microseconds) after each Session run, for metrics.
RuntimeObserver = Callable[[str, float], None]

# Runs feeds on a bundle, `Batcher.run`'s signature: (bundle, feeds, fetches, timeout_in_ms).
Runner = Callable[[SavedModelBundle, dict, Sequence[str], "int | None"], list]


def run_predict(
    bundle: SavedModelBundle,
    request: predict_pb2.PredictRequest,
    *,
    timeout_in_ms: int | None = None,
    observe_runtime: RuntimeObserver | None = None,
    runner: Runner | None = None,
) -> predict_pb2.PredictResponse:
    """TF Serving's `RunPredict`: validate the request against the signature, run, answer.

    `runner` runs the Session (default `bundle.run`); the server passes its
    `Batcher.run` with `--enable_batching`.

    Raises:
        ServingError: `FAILED_PRECONDITION` for an unknown signature,
            `INVALID_ARGUMENT` for missing/extra inputs, unparsable tensors,
            wrong dtypes or shapes and unknown/duplicate `output_filter`
            aliases; TensorFlow's own code for runtime errors
            (`DEADLINE_EXCEEDED` past `timeout_in_ms`).
    """
    signature_name = request.model_spec.signature_name or DEFAULT_SIGNATURE
    signature_defs = bundle.meta_graph_def.signature_def
    if signature_name not in signature_defs:
        raise ServingError(
            "FAILED_PRECONDITION", f'Serving signature key "{signature_name}" not found.'
        )
    signature = signature_defs[signature_name]
    feeds = _predict_feeds(signature, request)
    output_names, output_aliases = _predict_fetches(signature, request.output_filter)
    outputs = _run(bundle, feeds, output_names, timeout_in_ms, "Predict", observe_runtime, runner)
    response = predict_pb2.PredictResponse()
    make_model_spec(request.model_spec.name, signature_name, bundle.version, response.model_spec)
    for alias, value in zip(output_aliases, outputs, strict=True):
        ndarray_to_tensor_proto(np.asarray(value), out=response.outputs[alias])
    return response


def _predict_feeds(signature: Any, request: predict_pb2.PredictRequest) -> dict[str, np.ndarray]:
    request_keys = set(request.inputs)
    signature_keys = set(signature.inputs)
    has_defaults = len(getattr(signature, "defaults", {})) > 0
    if len(request_keys) > len(signature_keys) or (
        len(request_keys) < len(signature_keys) and not has_defaults
    ):
        raise ServingError(
            "INVALID_ARGUMENT",
            f"input size does not match signature: {len(request_keys)}!={len(signature_keys)}"
            f" len({{{_join(request_keys)}}}) != len({{{_join(signature_keys)}}})."
            f" Sent extra: {{{_join(request_keys - signature_keys)}}}."
            f" Missing but required: {{{_join(signature_keys - request_keys)}}}.",
        )
    feeds: dict[str, np.ndarray] = {}
    seen = set()
    for index, alias in enumerate(sorted(signature.inputs)):
        info = signature.inputs[alias]
        if alias in request.inputs:
            proto = request.inputs[alias]
            seen.add(alias)
        elif has_defaults and alias in signature.defaults:
            proto = signature.defaults[alias]
        else:
            raise ServingError(
                "INVALID_ARGUMENT",
                f"Signature input alias: {alias}(feed name: {info.name}) not found in request "
                f"and no default value provided. Inputs expected to be in the request "
                f"{{{_join(request_keys)}}}, or default input alias set: "
                f"{_join(getattr(signature, 'defaults', {}))}",
            )
        feeds[info.name] = _parse_input(alias, index, proto, info)
    if request_keys and len(seen) != len(request_keys):
        raise ServingError(
            "INVALID_ARGUMENT",
            f"Inputs contains invalid name. Used request inputs: {_join(seen)}, "
            f"request input: {_join(request_keys)}",
        )
    return feeds


def _parse_input(alias: str, index: int, proto: Any, info: Any) -> np.ndarray:
    try:
        value = tensor_proto_to_ndarray(proto)
    except TensorParseError as error:
        raise ServingError("INVALID_ARGUMENT", f"tensor parsing error: {alias}") from error
    if proto.dtype != info.dtype:
        # The C++ Session's feed check (FunctionCallFrame::SetArgs).
        raise ServingError(
            "INVALID_ARGUMENT",
            f"Expects arg[{index}] to be {dtype_string(info.dtype)} but "
            f"{dtype_string(proto.dtype)} is provided",
        )
    expected = info.tensor_shape
    if not expected.unknown_rank:
        dims = [d.size for d in expected.dim]
        if len(dims) != value.ndim or any(
            d >= 0 and d != s for d, s in zip(dims, value.shape, strict=True)
        ):
            raise ServingError(
                "INVALID_ARGUMENT",
                f"input tensor alias {alias} has shape {_shape_string(value.shape)}, "
                f"incompatible with the signature's shape {_shape_string(dims)}",
            )
    return value


def _predict_fetches(signature: Any, output_filter: Sequence[str]) -> tuple[list[str], list[str]]:
    names: list[str] = []
    aliases: list[str] = []
    seen: set[str] = set()
    for alias in output_filter:
        if alias not in signature.outputs:
            raise ServingError(
                "INVALID_ARGUMENT",
                f"output tensor alias not found in signature: {alias} Outputs expected to be "
                f"in the set {{{_join(signature.outputs)}}}.",
            )
        if alias in seen:
            raise ServingError("INVALID_ARGUMENT", f"duplicate output tensor alias: {alias}")
        seen.add(alias)
        names.append(signature.outputs[alias].name)
        aliases.append(alias)
    if not names:
        for alias in sorted(signature.outputs):
            names.append(signature.outputs[alias].name)
            aliases.append(alias)
    return names, aliases


# Classify / Regress / MultiInference ------------------------------------------------------

CLASSIFY, REGRESS = "Classify", "Regress"
_METHODS = {CLASSIFY: CLASSIFY_METHOD, REGRESS: REGRESS_METHOD}


def reject_classify_regress(
    bundle: SavedModelBundle, api: str, signature_name: str, *, method_name_check: bool = False
) -> NoReturn:
    """Answers a Classify or Regress request as TF Serving does for our exports.

    Our exports have Predict signatures only. TF Serving checks a Classify /
    Regress signature in this order (`classifier.cc`, `regressor.cc`), and
    every translator signature fails one of these checks with its message:

    1. the signature exists (`INVALID_ARGUMENT` "No signature was found with
       the name: NAME");
    2. with `--enable_signature_method_name_check`, its method name;
    3. one input; one or two outputs (Classify) or one output (Regress).

    A signature that passes them all would need TF Serving's tf.Example
    processing, which this server does not implement (`UNIMPLEMENTED`).

    Raises:
        ServingError: always.
    """
    name = signature_name or DEFAULT_SIGNATURE
    if name not in bundle.meta_graph_def.signature_def:
        raise ServingError("INVALID_ARGUMENT", f"No signature was found with the name: {name}")
    signature = bundle.meta_graph_def.signature_def[name]
    kind = "classification" if api == CLASSIFY else "regression"
    if method_name_check and signature.method_name != _METHODS[api]:
        raise ServingError(
            "INVALID_ARGUMENT",
            f"Expected {kind} signature method_name to be {_METHODS[api]}. "
            f"Was: {signature.method_name}",
        )
    if len(signature.inputs) != 1:
        raise ServingError("INVALID_ARGUMENT", "Expected one input Tensor.")
    if api == CLASSIFY and len(signature.outputs) not in (1, 2):
        raise ServingError(
            "INVALID_ARGUMENT",
            f"Expected one or two output Tensors, found {len(signature.outputs)}",
        )
    if api == REGRESS and len(signature.outputs) != 1:
        raise ServingError("INVALID_ARGUMENT", "Expected one output Tensor.")
    raise ServingError("UNIMPLEMENTED", f"{api} is not implemented by this server; use Predict.")


def reject_multi_inference(
    bundle: SavedModelBundle, tasks: Sequence[Any], *, method_name_check: bool = False
) -> NoReturn:
    """Answers a MultiInference request: each task is checked as a Classify/Regress.

    Raises:
        ServingError: always (TF Serving's message for the first failing task).
    """
    for task in tasks:
        name = task.model_spec.signature_name or DEFAULT_SIGNATURE
        if name not in bundle.meta_graph_def.signature_def:
            raise ServingError(
                "INVALID_ARGUMENT", f"Requested signature not found in model graph: {name}"
            )
        api = {CLASSIFY_METHOD: CLASSIFY, REGRESS_METHOD: REGRESS}.get(task.method_name)
        if api is None:
            raise ServingError(
                "UNIMPLEMENTED", f"Unsupported signature method_name: {task.method_name}"
            )
        reject_classify_regress(bundle, api, name, method_name_check=method_name_check)
    raise ServingError("INVALID_ARGUMENT", "MultiInferenceRequest has no tasks.")


# Metadata ---------------------------------------------------------------------------------


def validate_metadata_request(request: get_model_metadata_pb2.GetModelMetadataRequest) -> None:
    """TF Serving's `ValidateGetModelMetadataRequest`."""
    if not request.metadata_field:
        raise ServingError(
            "INVALID_ARGUMENT",
            "GetModelMetadataRequest must specify at least one metadata_field",
        )
    for field in request.metadata_field:
        if field != SIGNATURE_DEF_FIELD:
            raise ServingError("INVALID_ARGUMENT", f"Metadata field {field} is not supported")


def get_model_metadata(bundle: SavedModelBundle) -> get_model_metadata_pb2.GetModelMetadataResponse:
    """The `signature_def` metadata of a loaded version (every SignatureDef, as TF Serving)."""
    signature_def_map = get_model_metadata_pb2.SignatureDefMap()
    for name, signature in bundle.meta_graph_def.signature_def.items():
        signature_def_map.signature_def[name].CopyFrom(signature)
    response = get_model_metadata_pb2.GetModelMetadataResponse()
    response.model_spec.name = bundle.name
    response.model_spec.version.value = bundle.version
    response.metadata[SIGNATURE_DEF_FIELD].Pack(signature_def_map)
    return response


# Helpers ----------------------------------------------------------------------------------


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


def _run(
    bundle: SavedModelBundle,
    feeds: dict[str, np.ndarray],
    fetches: Sequence[str],
    timeout_in_ms: int | None,
    api: str,
    observe_runtime: RuntimeObserver | None,
    runner: Runner | None = None,
) -> list[np.ndarray]:
    if timeout_in_ms is not None and timeout_in_ms <= 0:
        raise ServingError("DEADLINE_EXCEEDED", "Deadline Exceeded")
    start = time.perf_counter()
    try:
        if runner is None:
            outputs = bundle.run(feeds, fetches, timeout_in_ms=timeout_in_ms)
        else:
            outputs = runner(bundle, feeds, fetches, timeout_in_ms)
    except tf.errors.OpError as error:
        raise ServingError(code_name(error.error_code), error.message) from None
    except (TypeError, ValueError) as error:
        raise ServingError("INVALID_ARGUMENT", str(error)) from None
    if observe_runtime is not None:
        observe_runtime(api, (time.perf_counter() - start) * 1e6)
    return outputs


def _join(keys) -> str:
    return ",".join(sorted(keys))


def _shape_string(shape) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"
