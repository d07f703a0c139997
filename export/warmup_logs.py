"""The warmup requests an export writes (`assets.extra/tf_serving_warmup_requests`): each
signature at batch 1 and at all warmup pairs, with every decoding input given, steered
and constrained."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from keras_attention.export.translation_signatures import (
    INPUT_KEY,
    SCORE_TRANSLATION,
    SEARCH,
    TRANSLATION_KEY,
)
from keras_attention.export.warmup import predict_log
from keras_attention_client.wire.contract import STEERED_BEAM_SEARCH, STEERED_BEAM_SEARCH_INPUTS

WARMUP_DECODING_INPUTS: dict[str, dict[str, np.ndarray]] = {
    "search": {
        "beam_width": np.int32(2),
        "n_best": np.int32(2),
        "length_penalty": np.float32(1.0),
    },
    "sample": {
        "temperature": np.float32(0.8),
        "top_k": np.int32(5),
        "top_p": np.float32(0.9),
        "seed": np.int32(7),
    },
}
"""The warmup request with every decoding input given (plus `max_output_length`, the export's)."""


def warmup_logs(signatures, warmup_pairs, target_vectorizer, max_output_length: int) -> list:
    """`PredictionLog`s: each signature at batch 1 and at all warmup pairs, and `search`
    and `sample` at all warmup pairs with every decoding input given (for `search`, each
    target's first word as the `prefix`, and `next_words` 2), and `search` once more
    with `constraints` (`warmup_constraints`); `steered_beam_search` with `""` for
    each row's prefix and constraints, and once more at all pairs with a prefix (the
    target's first word) on the odd rows and those constraints on the even rows."""
    sources = np.array([s.encode("utf-8") for s, _ in warmup_pairs], dtype=object)
    targets = np.array([t.encode("utf-8") for _, t in warmup_pairs], dtype=object)
    batches = [slice(0, 1)] + ([slice(None)] if len(sources) > 1 else [])
    logs = []
    for name in signatures.endpoints():
        for batch in batches:
            inputs = {INPUT_KEY: sources[batch]}
            if name == SCORE_TRANSLATION:
                inputs[TRANSLATION_KEY] = targets[batch]
            if name == STEERED_BEAM_SEARCH:  # required, one per text: no prefix, none
                none = np.full(len(inputs[INPUT_KEY]), b"", dtype=object)
                inputs.update(dict.fromkeys(STEERED_BEAM_SEARCH_INPUTS, none))
            logs.append(predict_log(name, inputs))
        if name == STEERED_BEAM_SEARCH:  # steered: odd rows a prefix, even a constraint
            prefixes = _first_words(targets)
            prefixes[::2] = b""
            steered = {
                "prefix": prefixes,
                "constraints": warmup_constraints(target_vectorizer, targets),
            }
            logs.append(predict_log(name, {INPUT_KEY: sources, **steered}))
        every_input = WARMUP_DECODING_INPUTS.get(name) if signatures.decoding_inputs else None
        if every_input is not None:
            inputs = {INPUT_KEY: sources, **every_input}
            inputs["max_output_length"] = np.int32(max_output_length)
            if name == SEARCH:  # steering too: each target's first word as the prefix
                inputs["prefix"] = _first_words(targets)
                inputs["next_words"] = np.int32(2)
            logs.append(predict_log(name, inputs))
            if name == SEARCH:  # and constrained: a known word of every other target
                constrained = {INPUT_KEY: sources, **every_input}
                constrained["max_output_length"] = inputs["max_output_length"]
                constrained["constraints"] = warmup_constraints(target_vectorizer, targets)
                logs.append(predict_log(name, constrained))
    return logs


def warmup_constraints(target_vectorizer, targets: np.ndarray) -> np.ndarray:
    """For the warmup's constrained `search`: the first word of each even target whose
    every token the target vocabulary knows (a constraint with `[UNK]` is refused),
    `""` for the others."""
    target = target_vectorizer
    phrases = []
    for row, text in enumerate(targets):
        words = text.decode("utf-8").split() if row % 2 == 0 else []
        ids = target.encode(tf.constant(words or [""]), ragged=True).to_list()
        known = [
            w for w, i in zip(words, ids, strict=False) if i and all(t != target.unk_id for t in i)
        ]
        phrases.append(known[0].encode("utf-8") if known else b"")
    return np.array(phrases, dtype=object)


def _first_words(targets: np.ndarray) -> np.ndarray:
    """The first word of each target (`b""` for an empty one), as warmup prefixes."""
    return np.array([t.split(b" ")[0] if t else b"" for t in targets], dtype=object)
