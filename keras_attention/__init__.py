"""keras-attention: Bahdanau and Luong attention for Keras 3, from layer to TF Serving.

Public names are imported lazily (PEP 562), so `import keras_attention` and the
command line's `--help` do not load TensorFlow.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "BahdanauAttention": "keras_attention.layers.bahdanau_attention",
    "BaseAttention": "keras_attention.layers.base_attention",
    "LuongAttention": "keras_attention.layers.luong_attention",
    "Seq2Seq": "keras_attention.models.seq2seq",
    "Translator": "keras_attention.translator",
    "GreedySearch": "keras_attention.decoding.greedy_search",
    "BeamSearch": "keras_attention.decoding.beam_search",
    "TextVectorizer": "keras_attention.text.text_vectorizer",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'keras_attention' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
