"""Clients and a local server for TensorFlow Serving's gRPC and REST APIs.

`serving` never imports `keras_attention`, `export` or Keras: once a model is
exported, only grpc, NumPy, the serving protos (and TensorFlow, to run a graph
in the local server) are needed.

- `TranslationClient` / `RestTranslationClient`: `client.translate([...])`
  returns `Translation`s; failures raise `ServingError`.
- `ModelServer` / `ServerOptions` (`python -m serving`): a local server with
  TF Serving's APIs, flags, config files, status codes and version handling.

Names are imported lazily, so `import serving` is cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ServingError": "serving.serving_error",
    "Translation": "serving.translation",
    "TranslationClient": "serving.translation_client",
    "RestTranslationClient": "serving.rest_translation_client",
    "ModelVersionStatus": "serving.model_version_status",
    "ModelMetadata": "serving.model_metadata",
    "ModelServer": "serving.model_server",
    "ServerOptions": "serving.server_options",
    "ServableManager": "serving.servable_manager",
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
