"""The translation contract: what every translator export takes and returns.

The one definition both sides check against: `export` builds its signatures
from it (and `check-export` verifies a SavedModel against it), the clients
parse responses with it (`Translation.from_outputs`). Plain Python, so a
client machine needs no TensorFlow to read it.
"""

from __future__ import annotations

SERVE_TAG = "serve"
"""The MetaGraph tag TF Serving loads (`tf.saved_model.SERVING`)."""

DEFAULT_SIGNATURE = "serving_default"
"""`tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY`: greedy decoding."""

BEAM_SEARCH = "beam_search"
SCORE_TRANSLATION = "score_translation"

TEXT_INPUT = "text"
"""The input alias of every signature: a `[batch]` DT_STRING tensor of raw sentences."""

TRANSLATION_INPUT = "translation"
"""The second input of `score_translation`: the `[batch]` translations to score."""

TRANSLATION_OUTPUTS: dict[str, tuple[str, list[int]]] = {
    "translation": ("DT_STRING", [-1]),
    "score": ("DT_FLOAT", [-1]),
    "length": ("DT_INT32", [-1]),
    "tokens": ("DT_STRING", [-1, -1]),
    "source_tokens": ("DT_STRING", [-1, -1]),
    "attention": ("DT_FLOAT", [-1, -1, -1]),
}
"""Outputs of `serving_default` and `beam_search`: alias -> (DataType name, shape, -1 dynamic)."""

SCORE_OUTPUTS: dict[str, tuple[str, list[int]]] = {
    "score": ("DT_FLOAT", [-1]),
    "length": ("DT_INT32", [-1]),
    "tokens": ("DT_STRING", [-1, -1]),
    "token_scores": ("DT_FLOAT", [-1, -1]),
    "source_tokens": ("DT_STRING", [-1, -1]),
    "attention": ("DT_FLOAT", [-1, -1, -1]),
}
"""Outputs of `score_translation`."""
