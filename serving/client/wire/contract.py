"""The translation contract: what every translator export takes and returns.

The one definition both sides check against: `export` builds its signatures
from it (and `check-export` verifies a SavedModel against it), the clients
parse responses with it (`Translation.from_outputs`). Plain Python, so a
client machine needs no TensorFlow to read it; TensorFlow's own constants are
copied here for the client, and `tests/export/test_translation_contract.py`
checks the copies against `tf.saved_model`.
"""

from __future__ import annotations

from pathlib import Path

SERVE_TAG = "serve"
"""The MetaGraph tag TF Serving loads (`tf.saved_model.SERVING`)."""

ASSETS_EXTRA = "assets.extra"
"""The version directory's folder of extra assets (`tf.saved_model.ASSETS_DIRECTORY + ".extra"`)."""

WARMUP_FILE = Path(ASSETS_EXTRA) / "tf_serving_warmup_requests"
"""Where TF Serving looks for warmup requests (a TFRecord file of `PredictionLog`s), relative
to the version directory: the exporter writes it, the local server replays it."""

MAX_WARMUP_RECORDS = 1000
"""TF Serving refuses to load a version whose warmup file holds more records."""

DEFAULT_SIGNATURE = "serving_default"
"""`tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY`: greedy decoding."""

SIGNATURE_DEF_FIELD = "signature_def"
"""The one `metadata_field` of GetModelMetadata: every SignatureDef of the version."""

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
    "token_scores": ("DT_FLOAT", [-1, -1]),
    "confidence": ("DT_FLOAT", [-1]),
}
"""Outputs of the translating signatures: alias -> (DataType name, shape, -1 dynamic).

`token_scores` `[batch, T_out]`: the log-probability of each output token
(at position `length` the end token's when one was emitted; padding 0), so
that a row sums to `score`. `confidence` `[batch]`: `exp(score / n)` with
`n` the tokens scored (`length`, plus one for the end token), the geometric
mean of the token probabilities, in `[0, 1]`; 1 for an input with no token.
"""

CONFIDENCE_OUTPUTS = ("token_scores", "confidence")
"""The outputs that exports written before them lack: a client reads them when present."""

SCORE_OUTPUTS: dict[str, tuple[str, list[int]]] = {
    "score": ("DT_FLOAT", [-1]),
    "length": ("DT_INT32", [-1]),
    "tokens": ("DT_STRING", [-1, -1]),
    "token_scores": ("DT_FLOAT", [-1, -1]),
    "source_tokens": ("DT_STRING", [-1, -1]),
    "attention": ("DT_FLOAT", [-1, -1, -1]),
}
"""Outputs of `score_translation`."""

SEARCH = "search"
"""Greedy or beam search with per-request decoding inputs (`SEARCH_INPUTS`).

`serving_default` and `beam_search` stay `text`-only: TF Serving's REST API
does not fill SignatureDef defaults (a `{"instances": [...]}` request fits
only a one-input signature) and `--enable_batching` refuses scalar inputs, so
the decoding inputs live on signatures of their own.
"""

SAMPLE = "sample"
"""The random-sampling signature: one translation drawn per sentence."""

STEERED_BEAM_SEARCH = "steered_beam_search"
"""`beam_search` steered per row by a prefix and constraints (`STEERED_BEAM_SEARCH_INPUTS`).

Unlike `search`, every input is `[batch]` and required, with no scalar
decoding input: TF Serving's `--enable_batching` concatenates requests along
dimension 0 (it refuses scalars, and could not join a default `[]` with
another request's `[n]`), and a REST request may use the row format
(`{"instances": [{"text": ..., "prefix": "", "constraints": ""}]}`). It
decodes at the export's fixed beam width and length penalty; a batch whose
rows carry no prefix and no constraint returns exactly `beam_search`'s outputs.
"""

TRANSLATE_SIGNATURES = (DEFAULT_SIGNATURE, BEAM_SEARCH, SEARCH, SAMPLE, STEERED_BEAM_SEARCH)
"""The signatures that translate `text` (and return `TRANSLATION_OUTPUTS`)."""

SEARCH_INPUTS: dict[str, str] = {
    "beam_width": "DT_INT32",
    "n_best": "DT_INT32",
    "length_penalty": "DT_FLOAT",
    "max_output_length": "DT_INT32",
}
"""Optional scalar inputs of `search`: alias -> DataType name.

Every one has a default in the SignatureDef's `defaults` map, which TF
Serving's Predict feeds for an input a request leaves out:

- `beam_width`: hypotheses kept per sentence, in `[1, max_beam_width]` (the
  cap recorded in the export's manifest); 1 (the default) is greedy search,
  the decoding of `serving_default`.
- `n_best`: translations returned per sentence, in `[1, beam_width]`.
  Default 1: the outputs are `TRANSLATION_OUTPUTS`; above 1 they are
  `N_BEST_OUTPUTS`, best first.
- `length_penalty`: the GNMT alpha of beam search, finite and >= 0.
  Default: the export's `--length-penalty`.
- `max_output_length`: the most tokens of a translation (decoding steps,
  counting the end token), in `[1, the export's max_output_length]`.
  Default: the export's.
"""

STEERING_INPUTS: dict[str, tuple[str, list[int]]] = {
    "prefix": ("DT_STRING", [-1]),
    "next_words": ("DT_INT32", []),
    "constraints": ("DT_STRING", [-1]),
}
"""Optional inputs of `search` that steer each translation, with SignatureDef defaults:

- `prefix`: `[batch]` strings, or `[]` (the default: no prefix). Each
  translation starts with its prefix's tokens (`""`: none); the forced
  tokens score 0 (they are given, not chosen). With a prefix, `search`
  answers as without one for the sentences whose prefix is `""`.
- `next_words`: `k >= 0`, the number of most probable words after each
  prefix to return (`STEERING_OUTPUTS`); 0 (the default) returns `[batch, 0]`.
- `constraints`: `[batch]` strings, or `[]` (the default: none). Each holds the
  phrases its translation must contain, separated by `CONSTRAINT_SEPARATOR` (a
  tab; `""`: none). Beam search guarantees them by dynamic beam allocation, at
  the request's `beam_width` (1 included); a sentence without phrases decodes
  as it would without the input. A phrase with no token the target vocabulary
  knows, or more constraint tokens than `max_output_length - 1`, is answered
  `INVALID_ARGUMENT` naming it. An export made before constraints lacks this
  input (`check-export` accepts it without).
"""

STEERED_BEAM_SEARCH_INPUTS: dict[str, tuple[str, list[int]]] = {
    "prefix": ("DT_STRING", [-1]),
    "constraints": ("DT_STRING", [-1]),
}
"""Required inputs of `steered_beam_search` besides `text`, one string per text and no
SignatureDef default: `prefix` as in `STEERING_INPUTS` (`""`: none) and `constraints`
as there (`""`: none), with the same errors. Its outputs are `TRANSLATION_OUTPUTS`."""

OPTIONAL_STEERING_INPUTS: tuple[str, ...] = ("constraints",)
"""The `STEERING_INPUTS` an export with the others may lack (added later)."""

CONSTRAINT_SEPARATOR = "\t"
"""What separates the phrases of one sentence in the `constraints` input."""

STEERING_OUTPUTS: dict[str, tuple[str, list[int]]] = {
    "next_words": ("DT_STRING", [-1, -1]),
    "next_word_scores": ("DT_FLOAT", [-1, -1]),
}
"""Extra outputs of `search`: the `next_words` most probable words after each prefix
(`[batch, k]`, most probable first; `[END]` when ending is among them) and their
log-probabilities."""

SAMPLE_INPUTS: dict[str, str] = {
    "temperature": "DT_FLOAT",
    "top_k": "DT_INT32",
    "top_p": "DT_FLOAT",
    "seed": "DT_INT32",
    "max_output_length": "DT_INT32",
}
"""Optional scalar inputs of `sample`, each with a default in the SignatureDef:

- `temperature`: > 0 and finite; below 1 sharpens, above 1 flattens. Default 1.
- `top_k`: >= 0, draw from the `top_k` most probable tokens; 0 (the default)
  is the whole vocabulary.
- `top_p`: in `(0, 1]`, draw from the most probable tokens whose mass reaches
  `top_p`; 1 (the default) is no cut.
- `seed`: >= -1; the same seed, batch and inputs give the same draws; -1
  (the default) draws a seed at each request.
- `max_output_length`: as for `SEARCH_INPUTS`.
"""

DECODING_INPUTS: dict[str, dict[str, str]] = {
    SEARCH: SEARCH_INPUTS,
    SAMPLE: SAMPLE_INPUTS,
}
"""The optional decoding inputs of each translating signature (besides `text`)."""

N_BEST_OUTPUTS: dict[str, tuple[str, list[int]]] = {
    "translation": ("DT_STRING", [-1, -1]),
    "score": ("DT_FLOAT", [-1, -1]),
    "length": ("DT_INT32", [-1, -1]),
    "tokens": ("DT_STRING", [-1, -1, -1]),
    "source_tokens": ("DT_STRING", [-1, -1]),
    "attention": ("DT_FLOAT", [-1, -1, -1, -1]),
    "token_scores": ("DT_FLOAT", [-1, -1, -1]),
    "confidence": ("DT_FLOAT", [-1, -1]),
}
"""Outputs of a request with `n_best > 1`: `[batch, n_best, ...]`, best first.

`translation`, `score`, `length`, `confidence` `[batch, n_best]`; `tokens`,
`token_scores` `[batch, n_best, T_out]`; `attention` `[batch, n_best, T_out, T_in]`; `source_tokens` stays
`[batch, T_in]`. The SignatureDef of a signature with `n_best` gives these
outputs an unknown rank, since the rank depends on the request.
"""
