"""Predict, Classify, Regress, MultiInference and GetModelMetadata on a loaded version.

A line-by-line port of TF Serving's request handling (tensorflow_serving/
servables/tensorflow/predict_util.cc, classifier.cc, regressor.cc,
multi_inference.cc, get_model_metadata_impl.cc, util.cc), with the same
status codes and messages, on top of `SavedModelBundle.run`.

Every function raises `ServingError` with the code TF Serving would answer;
TensorFlow runtime errors keep their own code (`tf.errors.OpError.error_code`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import (
    classification_pb2,
    get_model_metadata_pb2,
    inference_pb2,
    input_pb2,
    model_pb2,
    predict_pb2,
    regression_pb2,
)

from serving.saved_model_bundle import SavedModelBundle
from serving.serving_error import ServingError, code_name
from serving.tensor_util import (
    TensorParseError,
    dtype_string,
    ndarray_to_tensor_proto,
    tensor_proto_to_ndarray,
)

DEFAULT_SIGNATURE = "serving_default"
PREDICT_METHOD = "tensorflow/serving/predict"
CLASSIFY_METHOD = "tensorflow/serving/classify"
REGRESS_METHOD = "tensorflow/serving/regress"
CLASSIFY_INPUTS = "inputs"
CLASSIFY_OUTPUT_CLASSES = "classes"
CLASSIFY_OUTPUT_SCORES = "scores"
REGRESS_INPUTS = "inputs"
REGRESS_OUTPUTS = "outputs"
SIGNATURE_DEF_FIELD = "signature_def"

# Called with (api, runtime_microseconds) after each Session run, for metrics.
RuntimeObserver = Callable[[str, float], None]


def run_predict(
    bundle: SavedModelBundle,
    request: predict_pb2.PredictRequest,
    *,
    timeout_in_ms: int | None = None,
    observe_runtime: RuntimeObserver | None = None,
) -> predict_pb2.PredictResponse:
    """TF Serving's `RunPredict`: validate the request against the signature, run, answer.

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
    outputs = _run(bundle, feeds, output_names, timeout_in_ms, "Predict", observe_runtime)
    response = predict_pb2.PredictResponse()
    make_model_spec(request.model_spec.name, signature_name, bundle.version, response.model_spec)
    for alias, value in zip(output_aliases, outputs, strict=True):
        response.outputs[alias].CopyFrom(ndarray_to_tensor_proto(np.asarray(value)))
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


def run_classify(
    bundle: SavedModelBundle,
    request: classification_pb2.ClassificationRequest,
    *,
    timeout_in_ms: int | None = None,
    method_name_check: bool = False,
    observe_runtime: RuntimeObserver | None = None,
) -> classification_pb2.ClassificationResponse:
    """TF Serving's `RunClassify` (serialized `tf.Example`s in, classes/scores out)."""
    signature = _lookup_signature(bundle, request.model_spec.signature_name)
    input_name, output_names = _preprocess_classification(signature, method_name_check)
    examples = input_to_serialized_examples(request.input)
    outputs = _run(
        bundle, {input_name: examples}, output_names, timeout_in_ms, "Classify", observe_runtime
    )
    response = classification_pb2.ClassificationResponse()
    make_model_spec(
        request.model_spec.name,
        request.model_spec.signature_name,
        bundle.version,
        response.model_spec,
    )
    _postprocess_classification(signature, len(examples), output_names, outputs, response.result)
    return response


def run_regress(
    bundle: SavedModelBundle,
    request: regression_pb2.RegressionRequest,
    *,
    timeout_in_ms: int | None = None,
    method_name_check: bool = False,
    observe_runtime: RuntimeObserver | None = None,
) -> regression_pb2.RegressionResponse:
    """TF Serving's `RunRegress` (serialized `tf.Example`s in, one float per example out)."""
    signature = _lookup_signature(bundle, request.model_spec.signature_name)
    input_name, output_names = _preprocess_regression(signature, method_name_check)
    examples = input_to_serialized_examples(request.input)
    outputs = _run(
        bundle, {input_name: examples}, output_names, timeout_in_ms, "Regress", observe_runtime
    )
    response = regression_pb2.RegressionResponse()
    make_model_spec(
        request.model_spec.name,
        request.model_spec.signature_name,
        bundle.version,
        response.model_spec,
    )
    _postprocess_regression(signature, len(examples), output_names, outputs, response.result)
    return response


def run_multi_inference(
    bundle: SavedModelBundle,
    request: inference_pb2.MultiInferenceRequest,
    *,
    timeout_in_ms: int | None = None,
    method_name_check: bool = False,
    observe_runtime: RuntimeObserver | None = None,
) -> inference_pb2.MultiInferenceResponse:
    """TF Serving's `TensorFlowMultiInferenceRunner::Infer`."""
    signature_defs = bundle.meta_graph_def.signature_def
    model_name = ""
    input_name = ""
    signature_names: set[str] = set()
    output_name_set: set[str] = set()
    for task in request.tasks:
        if not task.model_spec.name:
            raise ServingError("INVALID_ARGUMENT", "Found ModelSpec with an empty model name.")
        if not model_name:
            model_name = task.model_spec.name
        elif model_name != task.model_spec.name:
            raise ServingError(
                "INVALID_ARGUMENT",
                "All ModelSpecs in a MultiInferenceRequest must access the same model name.",
            )
        signature_name = task.model_spec.signature_name or DEFAULT_SIGNATURE
        if signature_name in signature_names:
            raise ServingError(
                "INVALID_ARGUMENT", f"Duplicate evaluation of signature: {signature_name}"
            )
        signature_names.add(signature_name)
        if signature_name not in signature_defs:
            raise ServingError(
                "INVALID_ARGUMENT",
                f"Requested signature not found in model graph: {signature_name}",
            )
        signature = signature_defs[signature_name]
        if task.method_name == CLASSIFY_METHOD:
            name, outputs = _preprocess_classification(signature, method_name_check)
        elif task.method_name == REGRESS_METHOD:
            name, outputs = _preprocess_regression(signature, method_name_check)
        else:
            raise ServingError(
                "UNIMPLEMENTED", f"Unsupported signature method_name: {task.method_name}"
            )
        if not input_name:
            input_name = name
        elif input_name != name:
            raise ServingError(
                "INVALID_ARGUMENT", "Input tensor must be the same for all Signatures."
            )
        output_name_set.update(outputs)
    output_names = sorted(output_name_set)
    examples = input_to_serialized_examples(request.input)
    outputs = _run(
        bundle,
        {input_name: examples},
        output_names,
        timeout_in_ms,
        "MultiInference",
        observe_runtime,
    )
    response = inference_pb2.MultiInferenceResponse()
    for task in request.tasks:
        signature = signature_defs[task.model_spec.signature_name or DEFAULT_SIGNATURE]
        result = response.results.add()
        if task.method_name == CLASSIFY_METHOD:
            _postprocess_classification(
                signature, len(examples), output_names, outputs, result.classification_result
            )
        else:
            _postprocess_regression(
                signature, len(examples), output_names, outputs, result.regression_result
            )
        make_model_spec(
            task.model_spec.name,
            task.model_spec.signature_name,
            bundle.version,
            result.model_spec,
        )
    return response


def input_to_serialized_examples(request_input: input_pb2.Input) -> np.ndarray:
    """TF Serving's `InputToSerializedExampleTensor`: `Input` -> `DT_STRING [num_examples]`.

    With `example_list_with_context`, each example is the serialized context
    followed by the serialized example (protobuf merges them on parsing).
    """
    kind = request_input.WhichOneof("kind")
    if kind == "example_list":
        serialized = [e.SerializeToString() for e in request_input.example_list.examples]
    elif kind == "example_list_with_context":
        context = request_input.example_list_with_context.context.SerializeToString()
        serialized = [
            context + e.SerializeToString()
            for e in request_input.example_list_with_context.examples
        ]
    else:
        serialized = []
    if not serialized:
        raise ServingError("INVALID_ARGUMENT", "Input is empty.")
    return np.array(serialized, dtype=object)


def _lookup_signature(bundle: SavedModelBundle, signature_name: str) -> Any:
    name = signature_name or DEFAULT_SIGNATURE
    signature_defs = bundle.meta_graph_def.signature_def
    if name not in signature_defs:
        raise ServingError("INVALID_ARGUMENT", f"No signature was found with the name: {name}")
    return signature_defs[name]


def _preprocess_classification(signature: Any, method_name_check: bool) -> tuple[str, list[str]]:
    if method_name_check and signature.method_name != CLASSIFY_METHOD:
        raise ServingError(
            "INVALID_ARGUMENT",
            f"Expected classification signature method_name to be {CLASSIFY_METHOD}. "
            f"Was: {signature.method_name}",
        )
    if len(signature.inputs) != 1:
        raise ServingError("INVALID_ARGUMENT", "Expected one input Tensor.")
    if len(signature.outputs) not in (1, 2):
        raise ServingError(
            "INVALID_ARGUMENT",
            f"Expected one or two output Tensors, found {len(signature.outputs)}",
        )
    if CLASSIFY_INPUTS not in signature.inputs:
        raise ServingError(
            "INVALID_ARGUMENT", f"No classification inputs found in SignatureDef: {signature}"
        )
    names = [
        signature.outputs[key].name
        for key in (CLASSIFY_OUTPUT_CLASSES, CLASSIFY_OUTPUT_SCORES)
        if key in signature.outputs
    ]
    if not names:
        raise ServingError(
            "INVALID_ARGUMENT",
            "Expected classification signature outputs to contain at least one of "
            f'"{CLASSIFY_OUTPUT_CLASSES}" or "{CLASSIFY_OUTPUT_SCORES}". '
            f"Signature was: {signature}",
        )
    return signature.inputs[CLASSIFY_INPUTS].name, names


def _preprocess_regression(signature: Any, method_name_check: bool) -> tuple[str, list[str]]:
    if method_name_check and signature.method_name != REGRESS_METHOD:
        raise ServingError(
            "INVALID_ARGUMENT",
            f"Expected regression signature method_name to be {REGRESS_METHOD}. "
            f"Was: {signature.method_name}",
        )
    if len(signature.inputs) != 1:
        raise ServingError("INVALID_ARGUMENT", "Expected one input Tensor.")
    if len(signature.outputs) != 1:
        raise ServingError("INVALID_ARGUMENT", "Expected one output Tensor.")
    if REGRESS_INPUTS not in signature.inputs:
        raise ServingError(
            "FAILED_PRECONDITION", f"No regression inputs found in SignatureDef: {signature}"
        )
    if REGRESS_OUTPUTS not in signature.outputs:
        raise ServingError(
            "FAILED_PRECONDITION", f"No regression outputs found in SignatureDef: {signature}"
        )
    return signature.inputs[REGRESS_INPUTS].name, [signature.outputs[REGRESS_OUTPUTS].name]


def _postprocess_classification(
    signature: Any,
    num_examples: int,
    output_names: Sequence[str],
    outputs: Sequence[np.ndarray],
    result: Any,
) -> None:
    by_name = dict(zip(output_names, outputs, strict=True))
    classes = scores = None
    if CLASSIFY_OUTPUT_CLASSES in signature.outputs:
        classes = np.asarray(by_name[signature.outputs[CLASSIFY_OUTPUT_CLASSES].name])
        if classes.ndim != 2:
            raise ServingError(
                "INVALID_ARGUMENT",
                f"Expected Tensor shape: [batch_size num_classes] but got {list(classes.shape)}",
            )
        if classes.dtype != object:
            raise ServingError(
                "INVALID_ARGUMENT", f"Expected classes Tensor of DT_STRING. Got: {classes.dtype}"
            )
        if classes.shape[0] != num_examples:
            raise ServingError(
                "INVALID_ARGUMENT",
                f"Expected classes output batch size of {num_examples}. Got: {classes.shape[0]}",
            )
    if CLASSIFY_OUTPUT_SCORES in signature.outputs:
        scores = np.asarray(by_name[signature.outputs[CLASSIFY_OUTPUT_SCORES].name])
        if scores.ndim != 2:
            raise ServingError(
                "INVALID_ARGUMENT",
                f"Expected Tensor shape: [batch_size num_classes] but got {list(scores.shape)}",
            )
        if scores.dtype != np.float32:
            raise ServingError(
                "INVALID_ARGUMENT", f"Expected scores Tensor of DT_FLOAT. Got: {scores.dtype}"
            )
        if scores.shape[0] != num_examples:
            raise ServingError(
                "INVALID_ARGUMENT",
                f"Expected scores output batch size of {num_examples}. Got: {scores.shape[0]}",
            )
    if classes is not None and scores is not None and classes.shape[1] != scores.shape[1]:
        raise ServingError(
            "INVALID_ARGUMENT",
            "Tensors class and score should match in dim_size(1). "
            f"Got {classes.shape[1]} vs. {scores.shape[1]}",
        )
    num_classes = (classes if classes is not None else scores).shape[1]
    for i in range(num_examples):
        classifications = result.classifications.add()
        for c in range(num_classes):
            entry = classifications.classes.add()
            if classes is not None:
                entry.label = bytes(classes[i, c]).decode("utf-8", errors="replace")
            if scores is not None:
                entry.score = float(scores[i, c])


def _postprocess_regression(
    signature: Any,
    num_examples: int,
    output_names: Sequence[str],
    outputs: Sequence[np.ndarray],
    result: Any,
) -> None:
    by_name = dict(zip(output_names, outputs, strict=True))
    value = np.asarray(by_name[signature.outputs[REGRESS_OUTPUTS].name])
    if not (value.ndim == 1 or (value.ndim == 2 and value.shape[1] == 1)):
        raise ServingError(
            "INVALID_ARGUMENT",
            "Expected output Tensor shape to be either [batch_size] or [batch_size, 1] "
            f"but got {list(value.shape)}",
        )
    if value.shape[0] != num_examples:
        raise ServingError(
            "INVALID_ARGUMENT",
            f"Input batch size did not match output batch size: {num_examples} vs. "
            f"{value.shape[0]}",
        )
    if value.dtype != np.float32:
        raise ServingError(
            "INVALID_ARGUMENT", f"Expected output Tensor of DT_FLOAT.  Got: {value.dtype}"
        )
    for item in value.reshape(-1):
        result.regressions.add(value=float(item))


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
) -> list[np.ndarray]:
    if timeout_in_ms is not None and timeout_in_ms <= 0:
        raise ServingError("DEADLINE_EXCEEDED", "Deadline Exceeded")
    start = time.perf_counter()
    try:
        outputs = bundle.run(feeds, fetches, timeout_in_ms=timeout_in_ms)
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
