"""One loaded model version: its own graph and Session, as TF Serving's SavedModelBundle."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

from keras_attention.serving.server.saved_model import load_session, read_warmup_requests

logger = logging.getLogger(__name__)


class SavedModelBundle:
    """A SavedModel version loaded the way `tensorflow_model_server` loads it.

    1. A fresh `tf.Graph` and `tf.compat.v1.Session` per version, loaded by
       `keras_attention.serving.server.saved_model.load_session` (the loader `export` checks
       its exports with): MetaGraph, variables, init op (lookup tables).
    2. Requests run the SignatureDef's tensor names with `Session.run`
       (through cached `make_callable` callables); a Session is thread-safe,
       so concurrent requests run in parallel.
    3. Optional warmup replays `assets.extra/tf_serving_warmup_requests`
       (a TFRecord of `PredictionLog`s) before the version is made available.

    The bundle is reference counted: the manager `retire()`s a version it
    unloads, and the Session is closed once the last in-flight request
    `release()`s it, so a version switch never fails a running request.

    Args:
        name: the model name.
        version: the version number.
        path: the version directory (`BASE/<version>`).
        session_config: a `tf.compat.v1.ConfigProto` for the Session.

    Example:

    ```python
    bundle = SavedModelBundle("translator", 1, "/models/translator/1")
    bundle.load()
    signature = bundle.signature_defs["serving_default"]
    (translation,) = bundle.run(
        {signature.inputs["text"].name: np.array([b"hello"], dtype=object)},
        [signature.outputs["translation"].name],
    )
    ```
    """

    def __init__(self, name: str, version: int, path: str, *, session_config: Any | None = None):
        self.name = name
        self.version = int(version)
        self.path = path
        self.session_config = session_config
        self.graph: tf.Graph | None = None
        self.session: tf.compat.v1.Session | None = None
        self.meta_graph_def = None
        self._callables: dict[tuple, Callable] = {}
        self._callables_lock = threading.Lock()
        self._refs_lock = threading.Lock()
        self._refs = 0
        self._retired = False
        self._closed = False

    def __repr__(self) -> str:
        return f"SavedModelBundle(name={self.name!r}, version={self.version}, path={self.path!r})"

    @property
    def signature_defs(self) -> dict:
        """The MetaGraph's SignatureDefs by name (includes `__saved_model_init_op`)."""
        return dict(self.meta_graph_def.signature_def)

    def load(self) -> None:
        """Loads graph, variables and tables; raises TensorFlow's error on failure."""
        self.graph, self.session, self.meta_graph_def = load_session(self.path, self.session_config)

    def run(
        self,
        feeds: dict[str, np.ndarray],
        fetches: Sequence[str],
        *,
        timeout_in_ms: int | None = None,
    ) -> list[np.ndarray]:
        """Runs the graph: feed tensor names -> arrays, fetch tensor names -> arrays.

        Args:
            feeds: arrays by graph tensor name (e.g. `"serving_default_text:0"`).
            fetches: graph tensor names to compute.
            timeout_in_ms: `RunOptions.timeout_in_ms`; past it the run is
                cancelled with `DeadlineExceededError`, as TF Serving does
                with the request's deadline.

        Returns:
            The fetched arrays, in order.
        """
        feed_names = tuple(sorted(feeds))
        key = (feed_names, tuple(fetches))
        fn = self._callables.get(key)
        if fn is None:
            with self._callables_lock:
                fn = self._callables.get(key)
                if fn is None:
                    fn = self.session.make_callable(
                        list(fetches),
                        feed_list=list(feed_names),
                        accept_options=True,
                    )
                    self._callables[key] = fn
        options = None
        if timeout_in_ms is not None:
            options = tf.compat.v1.RunOptions(timeout_in_ms=max(int(timeout_in_ms), 1))
        return fn(*(feeds[name] for name in feed_names), options=options)

    def warmup_requests(self) -> list[prediction_log_pb2.PredictionLog]:
        """The `PredictionLog`s of the version's warmup file (`[]` if none).

        Raises:
            ValueError: more than 1000 records (TF Serving's limit).
        """
        return read_warmup_requests(self.path)

    # Reference counting ---------------------------------------------------------------------

    def acquire(self) -> bool:
        """Takes a reference for one request; False if the version is being unloaded."""
        with self._refs_lock:
            if self._retired:
                return False
            self._refs += 1
            return True

    def release(self) -> None:
        """Returns a reference; closes the Session if retired and this was the last one."""
        with self._refs_lock:
            self._refs -= 1
            close = self._retired and self._refs == 0
        if close:
            self._close()

    def retire(self) -> None:
        """Marks the version unloaded: no new requests; closed when the last one ends."""
        with self._refs_lock:
            self._retired = True
            close = self._refs == 0
        if close:
            self._close()

    @property
    def in_flight(self) -> int:
        """Requests currently holding this version."""
        return self._refs

    def _close(self) -> None:
        with self._refs_lock:
            if self._closed:
                return
            self._closed = True
        if self.session is not None:
            self.session.close()
            logger.info("Unloaded model %s version %d", self.name, self.version)
        self._callables.clear()
