"""The files, inputs and outputs of a LiteRT (`.tflite`) export: what the exporter writes
(`keras_attention.export.litert.exporter`) and `LiteRTTranslator` reads.

An export is a directory:

- `greedy.tflite`, `beam.tflite`: one model per decoding mode, each taking
  `source_ids` int32 `(batch_size, attention_width)` (0 = padding) and
  running the encoder and the whole decoding loop inside, with builtin ops
  only. Outputs: `tokens` int32, `scores` float32, `lengths` int32 and
  `attention` float32; `greedy` without an n-best axis (`(batch, T)`,
  `(batch,)`, `(batch,)`, `(batch, T, attention_width)`), `beam` with one
  after the batch axis (`(batch, n_best, T)`, ...), best first.
- `text.json`: what the text side needs (`TEXT_FILE`): the tokenizer, the
  vocabularies or SentencePiece model files, the normalization,
  tokenization and detokenization rules (regular expressions as the
  SavedModel's graph runs them), the reserved ids, `attention_width` and
  `max_source_length`.
- the vocabulary or SentencePiece files `text.json` names.
- `litert_manifest.json` (`MANIFEST_FILE`): the settings, each model's ops,
  sizes and the export's provenance.
"""

from __future__ import annotations

MODES = ("greedy", "beam")
"""The decoding modes, one `.tflite` model each."""

MODEL_FILES = {mode: f"{mode}.tflite" for mode in MODES}
TEXT_FILE = "text.json"
MANIFEST_FILE = "litert_manifest.json"

INPUT = "source_ids"
"""The models' one input: int32 `(batch_size, attention_width)`."""

OUTPUTS = ("tokens", "scores", "lengths", "attention")
"""The models' outputs (names of the signature's outputs)."""

WEIGHTS = ("float32", "float16", "int8")
"""How an export stores its weights: as trained, in float16 (computed in float32), or int8
with a float32 scale per output channel (the SavedModel's `int8` values, computed in float32)."""
