"""Everything a client machine needs: gRPC and REST translation clients, no TensorFlow.

Installed alone by `pip install ./serving/client` (the `keras-attention-client`
distribution: grpcio, protobuf and NumPy only), or as part of the full package.

- `TranslationClient` (gRPC) / `RestTranslationClient` (REST):
  `client.translate([...])` returns `Translation`s; failures raise
  `ServingError`.
- `translation_contract`: the signatures' inputs and outputs, shared with the
  exporter.
- `protos`: the subset of TF Serving's wire messages the client uses,
  compiled from `.proto` files in that folder (same bytes on the wire).
- `keras-attention-client translate --server HOST:PORT TEXT...` (`cli`).

Names are imported lazily, so `import keras_attention_client` is cheap. (By hand, not with
`lazy_loader` as the other packages: this distribution depends on grpcio, protobuf and
NumPy only.)
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ServingError": "keras_attention_client.serving_error",
    "Translation": "keras_attention_client.translation",
    "TranslationClient": "keras_attention_client.translation_client",
    "RestTranslationClient": "keras_attention_client.rest_translation_client",
    "ModelVersionStatus": "keras_attention_client.model_version_status",
    "ModelMetadata": "keras_attention_client.model_metadata",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'keras_attention_client' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
