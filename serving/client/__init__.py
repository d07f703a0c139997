"""Everything a client machine needs: gRPC and REST translation clients, no TensorFlow.

Installed alone by `pip install ./serving/client` (the `keras-attention-client`
distribution: grpcio, protobuf and NumPy only), or as part of the full package.

- `TranslationClient` (gRPC) / `RestTranslationClient` (REST):
  `client.translate([...])` returns `Translation`s; failures raise
  `ServingError`.
- `client.list_models()` lists a server's models (`ServedModel`s; our local
  server can, TF Serving cannot).
- `wire`: what clients, the local server and the exporter share: the
  translation contract, tensor conversion, errors and the wire messages
  (TF Serving's subset, same bytes on the wire, and our `ModelListing`).
- `keras-attention-client translate --server HOST:PORT TEXT...` (`cli`).
- `LiteRTTranslator`: translates strings on the device side with a LiteRT export
  (`keras-attention export RUN --format litert`), with `ai-edge-litert`'s interpreter,
  `regex` and `sentencepiece` (the `litert` extra), no TensorFlow; `LiteRTText` is its
  text side.

Names are imported lazily, so `import keras_attention_client` is cheap. (By hand, not with
`lazy_loader` as the other packages: this distribution depends on grpcio, protobuf and
NumPy only.)
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ServingError": "keras_attention_client.wire.errors",
    "Translation": "keras_attention_client.wire.translation",
    "TranslationClient": "keras_attention_client.translation_client",
    "RestTranslationClient": "keras_attention_client.rest_translation_client",
    "ModelVersionStatus": "keras_attention_client.model_version_status",
    "ModelMetadata": "keras_attention_client.model_metadata",
    "ServedModel": "keras_attention_client.served_model",
    "LiteRTTranslator": "keras_attention_client.litert_translator",
    "LiteRTText": "keras_attention_client.litert_text",
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
