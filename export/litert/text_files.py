"""`write_text_files`: a LiteRT export's `text.json` and the vocabulary or SentencePiece files."""

from __future__ import annotations

import json
from pathlib import Path

from keras_attention.text.subword_vectorizer import SubwordVectorizer
from keras_attention.text.tokenization import text_rules
from keras_attention.text.vocabulary import save_vocabulary
from keras_attention_client.litert_contract import TEXT_FILE


def write_text_files(directory, source_vectorizer, target_vectorizer, attention_width: int) -> dict:
    """Writes what `keras_attention_client.LiteRTText` reads into `directory`.

    - `text.json`: the reserved ids, `attention_width` and, per side
      (`"source"`, `"target"`), the tokenizer name, `max_length`, the
      vocabulary size, the file of its vocabulary (`save_vocabulary`'s
      format) or SentencePiece model, and the regular expressions of the
      graph's text processing (`text_rules`; the target's with its
      detokenization and spacing).
    - `source_vocabulary.txt` / `target_vocabulary.txt`, or `source.model` /
      `target.model` (SentencePiece).

    Args:
        directory: an existing directory.
        source_vectorizer: the source `TextVectorizer` or `SubwordVectorizer`.
        target_vectorizer: the target one.
        attention_width: the models' source columns.

    Returns:
        `text.json`'s content.
    """
    directory = Path(directory)
    text = {
        "attention_width": attention_width,
        "pad_id": target_vectorizer.pad_id,
        "unk_id": target_vectorizer.unk_id,
        "start_id": target_vectorizer.start_id,
        "end_id": target_vectorizer.end_id,
    }
    for side, vectorizer in (("source", source_vectorizer), ("target", target_vectorizer)):
        entry = {
            "tokenizer": vectorizer.tokenizer,
            "max_length": vectorizer.max_length,
            "vocabulary_size": vectorizer.vocabulary_size,
        }
        if isinstance(vectorizer, SubwordVectorizer):
            name = f"{side}.model"
            (directory / name).write_bytes(vectorizer.model)
            entry["sentencepiece_model"] = name
            entry["rules"] = text_rules(None)
        else:
            name = f"{side}_vocabulary.txt"
            save_vocabulary(vectorizer.vocabulary, directory / name)
            entry["vocabulary"] = name
            entry["rules"] = text_rules(vectorizer.spacing if side == "target" else None)
        text[side] = entry
    with open(directory / TEXT_FILE, "w", encoding="utf-8") as f:
        json.dump(text, f, indent=2, ensure_ascii=False)
        f.write("\n")
    return text
