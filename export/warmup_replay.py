"""Steps 5 and 6 of `ExportChecker`: the warmup requests replayed on TF Serving's Session
path, and again on TensorFlow's C API."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import types_pb2

from keras_attention.export.check_report import GENERIC, CheckReport
from keras_attention.export.export_manifest import ExportManifest
from keras_attention.export.native_check import NativeCheckError, compare_outputs, run_native
from keras_attention.export.translation_signatures import INPUT_KEY, SERVING_DEFAULT
from keras_attention.saved_model_session import SavedModelSession, read_warmup_requests
from keras_attention_client.wire.tensors import dtype_mismatch

_NUMPY_DTYPES = {
    "DT_STRING": np.object_,
    "DT_FLOAT": np.float32,
    "DT_INT32": np.int32,
    "DT_INT64": np.int64,
    "DT_DOUBLE": np.float64,
    "DT_BOOL": np.bool_,
}


def replay_warmup(
    path: Path,
    session: SavedModelSession,
    report: CheckReport,
    manifest: ExportManifest | None,
) -> list[tuple[str, dict, dict]]:
    """Replays the warmup requests; returns `(signature, inputs, outputs)` of each that ran.

    A translator's outputs must have one row per input text; a `GENERIC` model's batch is
    the leading dimension its inputs share (none if they differ), and its outputs keep
    whatever rows they have.
    """
    replayed: list[tuple[str, dict, dict]] = []
    try:
        logs = read_warmup_requests(path)
    except Exception as error:  # noqa: BLE001 - a corrupt file is the finding
        report.errors.append(f"Unreadable warmup file: {type(error).__name__}: {error}")
        return replayed
    if not logs:
        message = "No assets.extra/tf_serving_warmup_requests: the first requests will be slow"
        if manifest is not None and manifest.warmup_records:
            report.errors.append(
                f"{message} (the manifest lists {manifest.warmup_records} records)"
            )
        else:
            report.warnings.append(message)
        return replayed
    covered = set()
    for index, log in enumerate(logs):
        if log.WhichOneof("log_type") != "predict_log":
            served = (
                "the server replays" if report.contract == GENERIC else "the translator exports"
            )
            report.errors.append(
                f"Warmup record {index} is a {log.WhichOneof('log_type')}; "
                f"{served} only serve Predict"
            )
            continue
        request = log.predict_log.request
        name = request.model_spec.signature_name or SERVING_DEFAULT
        covered.add(name)
        signature = report.signatures.get(name)
        if signature is None:
            report.errors.append(f"Warmup record {index} calls unknown signature {name!r}")
            continue
        try:
            _check_dtypes(session.signature_defs[name], request)
            inputs = {key: tf.make_ndarray(proto) for key, proto in request.inputs.items()}
            batch_size = _batch_size(inputs, report.contract)
            inputs = _repeatable(input_values(session.signature_defs[name], inputs))
            started = time.perf_counter()
            outputs = session.run(name, inputs)
            seconds = time.perf_counter() - started
        except Exception as error:  # noqa: BLE001 - a failing request is the finding
            report.errors.append(
                f"Warmup record {index} ({name}) failed: {type(error).__name__}: {error}"
            )
            continue
        report.warmup.append({"signature": name, "batch_size": batch_size, "seconds": seconds})
        replayed.append((name, inputs, outputs))
        for alias, value in outputs.items():
            rows = None if report.contract == GENERIC else batch_size
            problem = _output_problem(signature["outputs"][alias], value, rows)
            if problem:
                report.errors.append(f"Warmup record {index} ({name}): output {alias!r} {problem}")
    for name in sorted(set(report.signatures) - covered):
        report.warnings.append(f"No warmup request for signature {name!r}")
    return replayed


def check_native(
    path: Path,
    session: SavedModelSession,
    replayed: list[tuple[str, dict, dict]],
    report: CheckReport,
) -> None:
    """Runs the replayed requests (and one giving every input, per signature with defaults)
    through TensorFlow's C API; their outputs must equal the Session path's."""
    replayed = replayed + _every_input_requests(session, replayed, report)
    requests = []
    for name, inputs, outputs in replayed:
        signature = session.signature_defs[name]
        feeds = {signature.inputs[key].name: value for key, value in inputs.items()}
        requests.append((feeds, [signature.outputs[key].name for key in outputs]))
    started = time.perf_counter()
    try:
        answers = run_native(path, requests)
    except NativeCheckError as error:
        report.errors.append(f"TensorFlow's C API (TF_LoadSessionFromSavedModel): {error}")
        return
    largest = 0.0
    for index, ((name, _, outputs), answer) in enumerate(zip(replayed, answers, strict=True)):
        problems, difference = compare_outputs(outputs, dict(zip(outputs, answer, strict=True)))
        largest = max(largest, difference)
        for problem in problems:
            report.errors.append(f"Warmup request {index} ({name}) on the C API: {problem}")
    report.native = {
        "requests": len(requests),
        "seconds": time.perf_counter() - started,
        "max_float_difference": largest,
    }


def _every_input_requests(
    session: SavedModelSession,
    replayed: list[tuple[str, dict, dict]],
    report: CheckReport,
) -> list[tuple[str, dict, dict]]:
    """For each signature with defaults: a request giving every input, run on the Session.

    The values are the defaults (a `seed` of -1, a draw per request, is
    replaced by 1 so that both paths draw alike), fed explicitly; the
    requests replayed from the warmup file leave them out.
    """
    extra = []
    for name, signature in session.signature_defs.items():
        given = next(
            (
                {k: v for k, v in i.items() if k not in signature.defaults}
                for n, i, _ in replayed
                if n == name
            ),
            None,
        )
        if not signature.defaults or given is None:
            continue
        inputs = _repeatable(input_values(signature, given))
        try:
            outputs = session.run(name, inputs)
        except Exception as error:  # noqa: BLE001 - a failing request is the finding
            report.errors.append(
                f"{name} with every input given failed: {type(error).__name__}: {error}"
            )
            continue
        extra.append((name, inputs, outputs))
    return extra


def input_values(signature, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The arrays to feed for a request: `inputs`, plus the SignatureDef's `defaults` for the
    inputs it leaves out, as TF Serving's `GetInputValues` (tensorflow/cc/saved_model/util.cc).

    Raises:
        ValueError: an input the signature lacks, or a missing one without a default (TF
            Serving's message).
    """
    extra = sorted(set(inputs) - set(signature.inputs))
    if extra:
        raise ValueError(f"Input {extra[0]!r} is not an input of the signature")
    values = dict(inputs)
    for alias in sorted(signature.inputs):
        if alias in values:
            continue
        if alias not in signature.defaults:
            raise ValueError(
                f"Signature input alias: {alias}(feed name: {signature.inputs[alias].name}) not "
                "found in request and no default value provided"
            )
        values[alias] = tf.make_ndarray(signature.defaults[alias])
    return values


def _repeatable(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`inputs` with a negative `seed` (a new draw per request) replaced by 1, so that the
    Python Session path and the C API draw the same translations."""
    if "seed" in inputs and int(inputs["seed"]) < 0:
        inputs = {**inputs, "seed": np.int32(1)}
    return inputs


def _check_dtypes(signature, request) -> None:
    """TF Serving refuses an input of another dtype than the signature's (a Session feed
    would cast it).

    Raises:
        ValueError: TF Serving's message.
    """
    for index, alias in enumerate(sorted(signature.inputs)):
        if alias in request.inputs:
            mismatch = dtype_mismatch(
                index, signature.inputs[alias].dtype, request.inputs[alias].dtype
            )
            if mismatch:
                raise ValueError(f"{mismatch} (input {alias!r})")


def _batch_size(inputs: dict[str, np.ndarray], contract: str) -> int | None:
    """The rows of a request: a translator's texts; the leading dimension a `GENERIC`
    model's inputs share (None if one is a scalar or they differ)."""
    if contract != GENERIC:
        return len(inputs[INPUT_KEY])
    leading = {value.shape[0] if value.ndim else None for value in inputs.values()}
    return leading.pop() if len(leading) == 1 else None


def _output_problem(spec: dict, value: np.ndarray, batch_size: int | None) -> str | None:
    dtype = _NUMPY_DTYPES.get(spec["dtype"])
    if dtype is not None and value.dtype != dtype:
        return f"has dtype {value.dtype}, not {spec['dtype']}"
    if spec["shape"] is not None and value.ndim != len(spec["shape"]):
        return f"has shape {value.shape}, not rank {len(spec['shape'])}"
    if batch_size is not None and (value.ndim == 0 or value.shape[0] != batch_size):
        return f"has shape {value.shape}, not {batch_size} rows"
    if spec["dtype"] == types_pb2.DataType.Name(types_pb2.DT_FLOAT) and np.isnan(value).any():
        return "holds NaN"
    return None
