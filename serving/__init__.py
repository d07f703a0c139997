"""Clients and a local server for TensorFlow Serving's gRPC and REST APIs.

    serving/
      client/   what a client machine needs (grpcio, protobuf, NumPy; no TensorFlow):
                TranslationClient, RestTranslationClient, Translation, ServingError,
                the translation contract, the wire protos; its own distribution
                (`pip install ./serving/client`, `keras-attention-client`).
      server/   the local model server (`python -m serving`), with TensorFlow.

`serving` never imports `keras_attention`, `export` or Keras: once a model is
exported, only the client (and TF Serving, or this package's server) are
needed.

The client's and the server's main names are importable from here (lazily, so
`import serving` is cheap): `from serving import TranslationClient`. A machine
with only `keras-attention-client` installed imports them from
`serving.client`.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ServingError": "serving.client.serving_error",
    "Translation": "serving.client.translation",
    "TranslationClient": "serving.client.translation_client",
    "RestTranslationClient": "serving.client.rest_translation_client",
    "ModelVersionStatus": "serving.client.model_version_status",
    "ModelMetadata": "serving.client.model_metadata",
    "ModelServer": "serving.server.model_server",
    "ServerOptions": "serving.server.server_options",
    "ServableManager": "serving.server.servable_manager",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'serving' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
