"""Loading a SavedModel version the way `tensorflow_model_server` does, and its warmup file.

The one loader and the one warmup reader of the project: the local server's
`SavedModelBundle` and `export`'s `ServingSession` / `check-export` both use
them, so what the checker proves is what the server runs.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

logger = logging.getLogger(__name__)

SERVE_TAG = tf.saved_model.SERVING
"""The MetaGraph tag TF Serving loads: `"serve"`."""

DEFAULT_SIGNATURE = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
"""The signature of a request without `signature_name`: `"serving_default"`."""

PREDICT_METHOD = tf.saved_model.PREDICT_METHOD_NAME
"""`"tensorflow/serving/predict"`."""

WARMUP_FILE = Path(tf.saved_model.ASSETS_DIRECTORY + ".extra") / "tf_serving_warmup_requests"
"""Where TF Serving looks for warmup requests, relative to the version directory."""

MAX_WARMUP_RECORDS = 1000
"""TF Serving refuses to load a version whose warmup file holds more records."""

_op_libraries_lock = threading.Lock()
_op_libraries_loaded = False


def load_op_libraries() -> None:
    """Registers tf-text's ops before a graph that uses them is loaded.

    `tensorflow_text` registers its ops (`WhitespaceTokenizeWithOffsetsV2`,
    `NormalizeUTF8`, ...) on import; the real model server links the same op
    library. Without it, loading fails with "Op type not registered".
    """
    global _op_libraries_loaded
    with _op_libraries_lock:
        if _op_libraries_loaded:
            return
        try:
            import tensorflow_text  # noqa: F401
        except ImportError:
            logger.info("tensorflow_text is not installed; graphs using its ops will not load")
        _op_libraries_loaded = True


def load_session(
    path: str | os.PathLike, session_config: Any | None = None
) -> tuple[Any, Any, Any]:
    """Loads a version into a fresh Graph and TF1 Session, as TF Serving's `LoadSavedModel`.

    1. tf-text's op library is registered (`load_op_libraries`).
    2. A new `tf.Graph` and `tf.compat.v1.Session(config=session_config)`.
    3. `tf.compat.v1.saved_model.loader.load(session, ["serve"], path)`
       imports the MetaGraph, restores the variables and runs the init op
       (lookup tables); the graph is then finalized.

    Args:
        path: the version directory (`BASE/<version>`).
        session_config: optional `tf.compat.v1.ConfigProto`.

    Returns:
        `(graph, session, meta_graph_def)`.

    Raises:
        TensorFlow's error (e.g. `NotFoundError`, `InvalidArgumentError`) if
        the version does not load; the Session is closed then.
    """
    load_op_libraries()
    graph = tf.Graph()
    session = tf.compat.v1.Session(graph=graph, config=session_config)
    # The TF1 loader logs a deprecation warning on first use; it is the point
    # here (the model server's path), so keep it quiet.
    tf_logger = logging.getLogger("tensorflow")
    level = tf_logger.level
    tf_logger.setLevel(logging.ERROR)
    try:
        with graph.as_default():
            meta_graph_def = tf.compat.v1.saved_model.loader.load(session, [SERVE_TAG], str(path))
        graph.finalize()
    except BaseException:
        session.close()
        raise
    finally:
        tf_logger.setLevel(level)
    return graph, session, meta_graph_def


def read_warmup_requests(version_dir: str | os.PathLike) -> list[prediction_log_pb2.PredictionLog]:
    """The `PredictionLog` records of a version's warmup file (`[]` if there is none).

    Raises:
        ValueError: more than `MAX_WARMUP_RECORDS` records (TF Serving refuses
            such a version), or a non-empty file without a record.
        tf.errors.DataLossError: a corrupt record.
        google.protobuf.message.DecodeError: a record is not a `PredictionLog`.
    """
    path = Path(version_dir) / WARMUP_FILE
    if not tf.io.gfile.exists(str(path)):
        return []
    logs = []
    for record in tf.data.TFRecordDataset(str(path)).as_numpy_iterator():
        if len(logs) == MAX_WARMUP_RECORDS:
            raise ValueError(
                f"{str(path)!r} holds more than {MAX_WARMUP_RECORDS} warmup records, "
                "which TF Serving refuses"
            )
        logs.append(prediction_log_pb2.PredictionLog.FromString(record))
    if not logs and tf.io.gfile.stat(str(path)).length:
        raise ValueError(f"{str(path)!r} is not a TFRecord file of PredictionLogs")
    return logs
