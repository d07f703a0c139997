"""`ServingSession`: run an export the way TensorFlow Serving runs it."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from keras_attention.serving.server.saved_model import load_op_libraries, load_session


def load_serving_op_libraries() -> None:
    """Registers tf-text's ops, as the model server links them; call before loading."""
    load_op_libraries()


class ServingSession:
    """A SavedModel loaded into a TF1 `Session`, as `tensorflow_model_server` does.

    1. `keras_attention.serving.server.saved_model.load_session`, the local server's loader:
       tf-text's ops registered, a fresh `tf.Graph` and
       `tf.compat.v1.Session`, `tf.compat.v1.saved_model.loader.load(session,
       ["serve"], path)` (MetaGraph, variables, init op for the lookup
       tables). No Python function of the exporting library is used.
    3. `run(signature, inputs)` feeds and fetches the SignatureDef's tensor
       names with `Session.run` (one cached callable per signature).

    Args:
        path: the version directory (`BASE/<version>`).
        session_config: optional `tf.compat.v1.ConfigProto`.

    Example:

    ```python
    with ServingSession("/models/translator/1") as session:
        outputs = session.run("serving_default", {"text": np.array([b"Hello."], object)})
        outputs["translation"]  # array([b"Bonjour."], dtype=object)
    ```
    """

    def __init__(self, path: str | os.PathLike, session_config: Any | None = None):
        self.path = str(path)
        self.graph, self.session, self.meta_graph_def = load_session(self.path, session_config)
        self._callables: dict[str, tuple[list[str], list[str], Any]] = {}

    def __enter__(self) -> ServingSession:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        self.session.close()

    @property
    def signature_defs(self) -> dict:
        """The SignatureDefs by name, without `__saved_model_init_op`."""
        return {
            name: signature
            for name, signature in self.meta_graph_def.signature_def.items()
            if not name.startswith("__")
        }

    def run(
        self,
        signature_name: str,
        inputs: Mapping[str, np.ndarray],
        output_keys: Sequence[str] | None = None,
    ) -> dict[str, np.ndarray]:
        """Runs one signature on NumPy inputs.

        Args:
            signature_name: e.g. `"serving_default"`.
            inputs: input alias -> array; must name exactly the signature's inputs.
            output_keys: the outputs to fetch (default: all).

        Returns:
            Output alias -> array.

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
        if set(inputs) != set(signature.inputs):
            raise ValueError(
                f"Signature {signature_name!r} takes inputs {sorted(signature.inputs)}. "
                f"Received: {sorted(inputs)}"
            )
        keys = list(output_keys) if output_keys is not None else sorted(signature.outputs)
        cache_key = f"{signature_name}\0{','.join(keys)}"
        if cache_key not in self._callables:
            feed_keys = sorted(signature.inputs)
            fn = self.session.make_callable(
                [signature.outputs[key].name for key in keys],
                feed_list=[signature.inputs[key].name for key in feed_keys],
            )
            self._callables[cache_key] = (feed_keys, keys, fn)
        feed_keys, keys, fn = self._callables[cache_key]
        values = fn(*(np.asarray(inputs[key]) for key in feed_keys))
        return dict(zip(keys, values, strict=True))
