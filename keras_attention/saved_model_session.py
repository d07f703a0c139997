"""`SavedModelSession`: a SavedModel version loaded and run as TF Serving does, and its warmup file.

The one Session-path runner and warmup reader of the project: the local server
(`keras_attention.serving`) serves each version through it, and the export
checks its versions with it (`ExportChecker`). TensorFlow only: it imports
nothing of ours but the wire contract (`keras_attention_client.wire`), so the
server, which loads no Keras and nothing else of `keras_attention`, may import it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

from keras_attention_client.wire.contract import MAX_WARMUP_RECORDS, WARMUP_FILE

logger = logging.getLogger(__name__)


class SavedModelSession:
    """A SavedModel version in its own Graph and TF1 Session, as `tensorflow_model_server` loads it.

    1. tf-text's ops are registered (`import tensorflow_text`; the model server
       links the same op library), else loading fails ("Op type not registered").
    2. `tf.compat.v1.saved_model.loader.load(session, ["serve"], path)` in a fresh
       Graph and Session restores the variables and runs the init op; no Python
       function of the exporting library is used.
    3. `run` feeds and fetches the SignatureDef's tensor names through a cached
       `make_callable`; concurrent runs proceed in parallel.

    The server reference-counts a session (`acquire`/`release` per request,
    `retire` on unload): the Session closes when the last request holding it
    ends, so a version switch never fails a running request. Elsewhere (the
    export's checks, the benchmarks) it is a context manager, or `close`d.

    Args:
        path: the version directory (`BASE/<version>`).
        session_config: optional `tf.compat.v1.ConfigProto`.
        name: the model name (for the server's logs and answers; "" elsewhere).
        version: the version number (likewise).

    Raises:
        tf.errors.OpError: the version does not load (e.g. `NotFoundError`).

    Example:

    ```python
    with SavedModelSession("/models/translator/1") as session:
        outputs = session.run("serving_default", {"text": np.array([b"Hello."], object)})
        outputs["translation"]  # array([b"Bonjour."], dtype=object)
    ```
    """

    def __init__(
        self,
        path: str | os.PathLike,
        session_config: Any | None = None,
        *,
        name: str = "",
        version: int = 0,
    ):
        self.path, self.name, self.version = str(path), name, int(version)
        with contextlib.suppress(ImportError):
            import tensorflow_text  # noqa: F401 - registers tf-text's ops
        graph = tf.Graph()
        self.session = tf.compat.v1.Session(graph=graph, config=session_config)
        # The TF1 loader warns that it is deprecated; it is the model server's path here.
        tf_logger, level = logging.getLogger("tensorflow"), logging.getLogger("tensorflow").level
        tf_logger.setLevel(logging.ERROR)
        try:
            with graph.as_default():
                self.meta_graph_def = tf.compat.v1.saved_model.loader.load(
                    self.session, [tf.saved_model.SERVING], self.path
                )
            graph.finalize()
        except BaseException:
            self.session.close()
            raise
        finally:
            tf_logger.setLevel(level)
        signature_defs = self.meta_graph_def.signature_def.items()
        self.signature_defs = {k: v for k, v in signature_defs if not k.startswith("__")}
        """The SignatureDefs by name, without `__saved_model_init_op`."""
        self._callables: dict[tuple, Any] = {}
        self._lock = threading.Lock()
        self._refs, self._retired, self._closed = 0, False, False

    def __repr__(self) -> str:
        if not self.name:
            return f"SavedModelSession({self.path!r})"
        return f"SavedModelSession({self.path!r}, name={self.name!r}, version={self.version})"

    def run(
        self,
        signature_name: str,
        inputs: Mapping[str, np.ndarray],
        output_keys: Sequence[str] | None = None,
        *,
        timeout_in_ms: int | None = None,
    ) -> dict[str, np.ndarray]:
        """Runs one signature on NumPy inputs; returns output alias -> array.

        Args:
            signature_name: e.g. `"serving_default"`.
            inputs: input alias -> array; one with a value in the SignatureDef's
                `defaults` may be left out (fed that value, as TF Serving's `GetInputValues`).
            output_keys: the outputs to fetch (default: all).
            timeout_in_ms: past it the run is cancelled (`DeadlineExceededError`).

        Raises:
            KeyError: unknown signature.
            ValueError: the input aliases differ from the signature's.
        """
        signature = self.signature_defs.get(signature_name)
        if signature is None:
            raise KeyError(
                f"No signature {signature_name!r} in {self.path!r}. "
                f"Available: {sorted(self.signature_defs)}"
            )
        missing = set(signature.inputs) - set(inputs)
        if set(inputs) - set(signature.inputs) or missing - set(signature.defaults):
            raise ValueError(
                f"Signature {signature_name!r} takes inputs {sorted(signature.inputs)}, "
                f"with defaults for {sorted(signature.defaults)}. Received: {sorted(inputs)}"
            )
        inputs = {**{k: tf.make_ndarray(signature.defaults[k]) for k in missing}, **inputs}
        keys = list(output_keys) if output_keys is not None else sorted(signature.outputs)
        feed_keys = sorted(signature.inputs)
        with self._lock:
            fn = self._callables.get((signature_name, *keys))
            if fn is None:
                fn = self._callables[(signature_name, *keys)] = self.session.make_callable(
                    [signature.outputs[key].name for key in keys],
                    feed_list=[signature.inputs[key].name for key in feed_keys],
                    accept_options=True,
                )
        timeout = 0 if timeout_in_ms is None else max(int(timeout_in_ms), 1)  # 0: none
        options = tf.compat.v1.RunOptions(timeout_in_ms=timeout)
        values = fn(*(np.asarray(inputs[key]) for key in feed_keys), options=options)
        return dict(zip(keys, values, strict=True))

    def acquire(self) -> bool:
        """Takes a reference for one request; False once the version is retired."""
        with self._lock:
            if self._retired:
                return False
            self._refs += 1
            return True

    def release(self) -> None:
        """Returns a reference; closes the Session if retired and this was the last one."""
        self._update(refs=-1)

    def retire(self) -> None:
        """No new requests; the Session closes when the last running one ends."""
        self._update(retire=True)

    def close(self) -> None:
        """Closes the Session now."""
        self._update(retire=True, force=True)

    def __enter__(self) -> SavedModelSession:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _update(self, refs: int = 0, retire: bool = False, force: bool = False) -> None:
        with self._lock:
            self._refs = 0 if force else self._refs + refs
            self._retired |= retire
            if self._closed or not self._retired or self._refs > 0:
                return
            self._closed = True
            self._callables.clear()
        self.session.close()
        if self.name:
            logger.info("Unloaded model %s version %d", self.name, self.version)


def read_warmup_requests(version_dir: str | os.PathLike) -> list[prediction_log_pb2.PredictionLog]:
    """The `PredictionLog` records of a version's warmup file (`[]` if there is none).

    The server replays them before it serves a version (`--enable_model_warmup`);
    the export's check replays them too. The writer is the export's
    (`keras_attention.export.warmup.write_warmup_requests`).

    Raises:
        ValueError: more than `MAX_WARMUP_RECORDS` records (TF Serving refuses
            such a version), or a non-empty file without a record.
        tf.errors.DataLossError: a corrupt record.
        google.protobuf.message.DecodeError: a record is not a `PredictionLog`.
    """
    path = str(Path(version_dir) / WARMUP_FILE)
    if not tf.io.gfile.exists(path):
        return []
    logs = []
    for record in tf.data.TFRecordDataset(path).as_numpy_iterator():
        if len(logs) == MAX_WARMUP_RECORDS:
            raise ValueError(
                f"{path!r} holds more than {MAX_WARMUP_RECORDS} warmup records, which TF "
                "Serving refuses"
            )
        logs.append(prediction_log_pb2.PredictionLog.FromString(record))
    if not logs and tf.io.gfile.stat(path).length:
        raise ValueError(f"{path!r} is not a TFRecord file of PredictionLogs")
    return logs
