"""`LiteRTText`: a LiteRT export's text side in plain Python (NumPy-free, no TensorFlow).

The SavedModel tokenizes inside its graph (tf-text and `tf.strings` ops).
A LiteRT export's models take ids, so the program around them has to give
the same ids: `text.json` (`litert_contract.TEXT_FILE`) carries the
regular expressions the graph runs, in RE2 syntax, and this module runs them
with the `regex` package (and SentencePiece models with the `sentencepiece`
package), translating the few places where RE2 and `regex` read a pattern
differently:

- `\\x{HHHH}` (RE2) is `\\UHHHHHHHH` in `regex`;
- `\\b` is an ASCII word boundary in RE2, a Unicode one in `regex`: it is
  written out as an ASCII look-around;
- `\\0` in a rewrite (RE2: the whole match) is `\\g<0>`.

Normalization is `unicodedata`'s NFKC where the graph uses ICU's, then the
export's rules; tokens are the result split on spaces. The tests check
every source of a run's test split against the SavedModel's own tokens.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from pathlib import Path

from keras_attention_client.litert_contract import TEXT_FILE

_ASCII_WORD = "[0-9A-Za-z_]"
_ASCII_BOUNDARY = f"(?:(?<={_ASCII_WORD})(?!{_ASCII_WORD})|(?<!{_ASCII_WORD})(?={_ASCII_WORD}))"


def _pattern(re2: str):
    """An RE2 pattern as a compiled `regex` pattern with the same matches."""
    import regex

    pattern = re.sub(r"\\x\{([0-9A-Fa-f]+)\}", lambda m: f"\\U{int(m.group(1), 16):08X}", re2)
    pattern = re.sub(r"(?<!\\)((?:\\\\)*)\\b", lambda m: m.group(1) + _ASCII_BOUNDARY, pattern)
    return regex.compile(pattern, regex.VERSION0)


def _rewrite(re2: str) -> str:
    """An RE2 rewrite (`\\0`..`\\9`) as a `regex` template (`\\g<0>`..)."""
    return re.sub(r"\\(\d)", r"\\g<\1>", re2)


class _Rules:
    """A list of `(pattern, rewrite)` replacements, applied in order."""

    def __init__(self, rules):
        self.rules = [(_pattern(pattern), _rewrite(rewrite)) for pattern, rewrite in rules]

    def __call__(self, text: str) -> str:
        for pattern, rewrite in self.rules:
            text = pattern.sub(rewrite, text)
        return text


class _Side:
    """One language's text processing: `text.json`'s `"source"` or `"target"` entry."""

    def __init__(self, entry: dict, directory: Path, reserved: dict):
        self.tokenizer = entry["tokenizer"]
        self.max_length = entry.get("max_length")
        self.vocabulary_size = int(entry["vocabulary_size"])
        rules = entry["rules"]
        self.form = rules.get("normalization_form", "NFKC")
        self._normalize = _Rules(rules["normalize"])
        self._tokenize = _Rules(rules.get("tokenize", []))
        self._detokenize = _Rules(rules.get("detokenize", []))
        self.reserved = reserved
        self.sentencepiece = None
        self.vocabulary: list[str] = []
        if "sentencepiece_model" in entry:
            import sentencepiece

            self.sentencepiece = sentencepiece.SentencePieceProcessor(
                model_file=str(directory / entry["sentencepiece_model"])
            )
        else:
            self.vocabulary = _read_vocabulary(directory / entry["vocabulary"])
            if len(self.vocabulary) != self.vocabulary_size:
                raise ValueError(
                    f"{entry['vocabulary']!r} holds {len(self.vocabulary)} tokens, "
                    f"text.json says {self.vocabulary_size}"
                )
            self.ids = {token: i for i, token in enumerate(self.vocabulary)}

    def normalize(self, text: str) -> str:
        return self._normalize(unicodedata.normalize(self.form, text))

    def tokenize(self, text: str) -> list[str]:
        """The tokens the model reads (words, or SentencePiece pieces), not cut."""
        if self.sentencepiece is not None:
            return [self.sentencepiece.id_to_piece(i) for i in self.token_ids(text)]
        return [token for token in self._tokenize(self.normalize(text)).split(" ") if token]

    def token_ids(self, text: str) -> list[int]:
        """The ids of `tokenize(text)`, not cut (`[UNK]` for a word not in the vocabulary)."""
        if self.sentencepiece is not None:
            return list(self.sentencepiece.encode(self.normalize(text)))
        unk = self.reserved["unk_id"]
        return [self.ids.get(token, unk) for token in self.tokenize(text)]

    def id_to_token(self, token_id: int) -> str:
        token_id = int(token_id)
        if token_id == self.reserved["pad_id"]:
            return ""
        if not 0 <= token_id < self.vocabulary_size:
            token_id = self.reserved["unk_id"]
        if self.sentencepiece is not None:
            return self.sentencepiece.id_to_piece(token_id)
        return self.vocabulary[token_id]

    def decode(self, ids) -> str:
        """Ids to a sentence: up to the first `[END]`, padding and `[START]` dropped."""
        kept = []
        for token_id in ids:
            token_id = int(token_id)
            if token_id == self.reserved["end_id"]:
                break
            if token_id not in (self.reserved["pad_id"], self.reserved["start_id"]):
                kept.append(
                    token_id if 0 <= token_id < self.vocabulary_size else self.reserved["unk_id"]
                )
        if self.sentencepiece is not None:
            return self.sentencepiece.decode(kept)
        return self.detokenize([self.vocabulary[i] for i in kept])

    def detokenize(self, tokens) -> str:
        """Word tokens to a sentence: joined by spaces, then the detokenization rules."""
        return self._detokenize(" ".join(token for token in tokens if token))


class LiteRTText:
    """The text side of a LiteRT export: strings to source ids, target ids to strings.

    Reproduces the SavedModel's in-graph processing (`Translator.encode_source`
    and the target vectorizer's `decode`) from the export's `text.json`:

    1. `encode(text)`: NFKC, the normalization rules, the tokenization rules,
       a split on spaces, the vocabulary lookup (`[UNK]` for an unknown word),
       or SentencePiece's pieces of the normalized text; cut to the source's
       `max_length`.
    2. `decode(ids)`: the ids up to the first `[END]` (padding and `[START]`
       dropped) as tokens, joined by spaces and given the detokenization
       rules, or joined by SentencePiece.

    Args:
        directory: the export directory (holding `text.json` and the files it names).

    Example:

    ```python
    text = LiteRTText("/models/translator-litert")
    ids, tokens = text.encode("How are you?")
    ```
    """

    def __init__(self, directory: str | os.PathLike):
        directory = Path(directory)
        with open(directory / TEXT_FILE, encoding="utf-8") as f:
            config = json.load(f)
        self.config = config
        reserved = {key: int(config[key]) for key in ("pad_id", "unk_id", "start_id", "end_id")}
        self.reserved = reserved
        self.attention_width = int(config["attention_width"])
        self.source = _Side(config["source"], directory, reserved)
        self.target = _Side(config["target"], directory, reserved)

    def encode(self, text: str) -> tuple[list[int], list[str]]:
        """`(ids, tokens)` of a source sentence, both cut to the source's `max_length`."""
        ids = self.source.token_ids(text)
        if self.source.sentencepiece is not None:
            tokens = [self.source.id_to_token(i) for i in ids]
        else:
            tokens = self.source.tokenize(text)
        limit = self.source.max_length
        if limit is not None:
            ids, tokens = ids[:limit], tokens[:limit]
        return ids, tokens

    def target_tokens(self, ids) -> list[str]:
        """Target ids to their tokens (`""` for padding, `[UNK]` out of range)."""
        return [self.target.id_to_token(i) for i in ids]

    def decode(self, ids) -> str:
        """Target ids to the translation (see the class docstring)."""
        return self.target.decode(ids)

    def detokenize(self, tokens) -> str:
        """Target word tokens (e.g. with `[UNK]`s replaced) to the translation."""
        return self.target.detokenize(tokens)


def _read_vocabulary(path: Path) -> list[str]:
    """A vocabulary file (one token a line, line `i` the token of id `i`, id 0 `""` implied)."""
    with open(path, encoding="utf-8", newline="") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [""] + [line[:-1] if line.endswith("\r") else line for line in lines]
