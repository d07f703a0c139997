"""TF Serving warmup requests: `assets.extra/tf_serving_warmup_requests`.

TensorFlow Serving replays the `PredictionLog` records of this TFRecord file
against a new version before it serves traffic, so the first real request
does not pay for graph optimization and table initialization. The export
writes them here; the one reader, which the local server and the export's
check share, is `keras_attention.saved_model_session.read_warmup_requests`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2, prediction_log_pb2

# Where the file lies and how many records TF Serving takes: the wire contract, which the
# reader uses too.
from keras_attention_client.wire.contract import MAX_WARMUP_RECORDS, WARMUP_FILE

__all__ = ["MAX_WARMUP_RECORDS", "WARMUP_FILE", "predict_log", "write_warmup_requests"]


def predict_log(
    signature_name: str, inputs: Mapping[str, np.ndarray], model_name: str = ""
) -> prediction_log_pb2.PredictionLog:
    """One warmup record: a `PredictRequest` for `signature_name`.

    Args:
        signature_name: the SignatureDef to call.
        inputs: input alias -> array (e.g. `{"text": np.array([b"Hi."], object)}`).
        model_name: `model_spec.name`; TF Serving does not check it at warmup.

    Returns:
        A `PredictionLog` whose `predict_log.request` holds the request.
    """
    request = predict_pb2.PredictRequest()
    request.model_spec.signature_name = signature_name
    if model_name:
        request.model_spec.name = model_name
    for key, value in inputs.items():
        request.inputs[key].CopyFrom(tf.make_tensor_proto(value))
    return prediction_log_pb2.PredictionLog(
        predict_log=prediction_log_pb2.PredictLog(request=request)
    )


def write_warmup_requests(
    version_dir: str | os.PathLike, logs: Iterable[prediction_log_pb2.PredictionLog]
) -> Path:
    """Writes `logs` to `version_dir/assets.extra/tf_serving_warmup_requests`.

    Returns:
        The path of the file.

    Raises:
        ValueError: more than `MAX_WARMUP_RECORDS` records.
    """
    logs = list(logs)
    if len(logs) > MAX_WARMUP_RECORDS:
        raise ValueError(
            f"TF Serving accepts at most {MAX_WARMUP_RECORDS} warmup records. "
            f"Received: {len(logs)} records"
        )
    path = Path(version_dir) / WARMUP_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for log in logs:
            writer.write(log.SerializeToString())
    return path
