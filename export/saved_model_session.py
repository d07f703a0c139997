"""`SavedModelSession`: an export loaded and run the way TensorFlow Serving runs it."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf


class SavedModelSession:
    """A SavedModel version in its own Graph and TF1 Session, as `tensorflow_model_server` loads it.

    The export's own runner (`ExportChecker` checks every version with it): tf-text's ops are
    registered, `tf.compat.v1.saved_model.loader.load(session, ["serve"], path)` restores the
    variables and runs the init op in a fresh Graph and Session, and `run` feeds and fetches
    the SignatureDef's tensor names, so no Python function of the exporting library is used.
    (The local server loads versions the same way, in `keras_attention.serving`, which the
    export does not import.)

    Args:
        path: the version directory (`BASE/<version>`).

    Raises:
        tf.errors.OpError: the version does not load (e.g. `NotFoundError`).

    Example:

    ```python
    with SavedModelSession("/models/translator/1") as session:
        outputs = session.run("serving_default", {"text": np.array([b"Hello."], object)})
    ```
    """

    def __init__(self, path: str | os.PathLike):
        self.path = str(path)
        with contextlib.suppress(ImportError):
            import tensorflow_text  # noqa: F401 - registers tf-text's ops
        graph = tf.Graph()
        self.session = tf.compat.v1.Session(graph=graph)
        # The TF1 loader warns that it is deprecated; it is the model server's path here.
        tf_logger = logging.getLogger("tensorflow")
        level = tf_logger.level
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

    def __repr__(self) -> str:
        return f"SavedModelSession({self.path!r})"

    def run(
        self,
        signature_name: str,
        inputs: Mapping[str, np.ndarray],
        output_keys: Sequence[str] | None = None,
    ) -> dict[str, np.ndarray]:
        """Runs one signature on NumPy inputs; returns output alias -> array.

        Args:
            signature_name: e.g. `"serving_default"`.
            inputs: input alias -> array; one with a value in the SignatureDef's
                `defaults` may be left out (fed that value, as TF Serving's `GetInputValues`).
            output_keys: the outputs to fetch (default: all).

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
                )
        values = fn(*(np.asarray(inputs[key]) for key in feed_keys))
        return dict(zip(keys, values, strict=True))

    def close(self) -> None:
        """Closes the Session."""
        self._callables.clear()
        self.session.close()

    def __enter__(self) -> SavedModelSession:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
