"""`Translation`: one translated sentence, as every translator of the project returns it.

The serving clients parse a server's outputs into it, `Translator.translate_all` its own
outputs (the same aliases), and `LiteRTTranslator` builds it from a LiteRT model's. Its
`to_dict` is the one JSON shape of every command line's `--format json`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from keras_attention_client.wire.contract import (
    CONFIDENCE_OUTPUTS,
    N_BEST_OUTPUTS,
    TRANSLATION_OUTPUTS,
)


@dataclasses.dataclass(frozen=True, eq=False)
class Translation:
    """A translation of one input sentence, trimmed of the batch's padding.

    The exported model answers a batch with padded tensors (`tokens`
    `[batch, T_out]` and `source_tokens` `[batch, T_in]` padded with `""`,
    `attention` `[batch, T_out, T_in]`); a `Translation` keeps only this
    sentence's part:

    1. `tokens` = the first `length` output tokens.
    2. `source_tokens` = the source tokens up to the last non-empty one.
    3. `attention` = `attention[:length, :len(source_tokens)]`.
    4. `token_probabilities` = `exp(token_scores[:length])`, and
       `confidence` as it is, when the export returns them (exports written
       before them do not: both are then `None`).

    Attributes:
        text: the translation (output `translation`).
        score: the model's score, e.g. the log-probability (output `score`).
        length: the number of output tokens (output `length`).
        tokens: output tokens, `list[str]` of length `length`.
        source_tokens: the source sentence's tokens as the model saw them.
        attention: attention weights, float32 array of shape
            `(length, len(source_tokens))`; row `t` is the distribution over
            source tokens when output token `t` was produced.
        token_probabilities: the model's probability of each of `tokens`,
            `list[float]` of length `length`, or `None`.
        confidence: the geometric mean of the token probabilities (the end
            token's included), in `[0, 1]`, or `None`. Low values mark the
            translations to check.
        next_words: with a request for them (`translate(next_words=k)`),
            the `k` most probable words after the sentence's prefix and
            their log-probabilities, most probable first; else `None`.

    Example:

    >>> outputs = {
    ...     "translation": np.array([b"B A"], dtype=object),
    ...     "score": np.array([-1.0], np.float32),
    ...     "length": np.array([2], np.int32),
    ...     "tokens": np.array([[b"B", b"A", b""]], dtype=object),
    ...     "source_tokens": np.array([[b"a", b"b"]], dtype=object),
    ...     "attention": np.zeros((1, 3, 2), np.float32),
    ... }
    >>> [t.tokens for t in Translation.from_outputs(outputs)]
    [['B', 'A']]
    """

    text: str
    score: float
    length: int
    tokens: list[str]
    source_tokens: list[str]
    attention: np.ndarray
    token_probabilities: list[float] | None = None
    confidence: float | None = None
    next_words: list[tuple[str, float]] | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Translation):
            return NotImplemented
        return (
            self.text == other.text
            and self.score == other.score
            and self.length == other.length
            and self.tokens == other.tokens
            and self.source_tokens == other.source_tokens
            and self.attention.shape == other.attention.shape
            and bool(np.array_equal(self.attention, other.attention))
            and self.token_probabilities == other.token_probabilities
            and self.confidence == other.confidence
            and self.next_words == other.next_words
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict (attention as nested lists)."""
        return {
            "text": self.text,
            "score": self.score,
            "length": self.length,
            "tokens": list(self.tokens),
            "source_tokens": list(self.source_tokens),
            "attention": self.attention.tolist(),
            "token_probabilities": self.token_probabilities,
            "confidence": self.confidence,
            **(
                {}
                if self.next_words is None
                else {"next_words": [list(w) for w in self.next_words]}
            ),
        }

    @classmethod
    def from_outputs(cls, outputs: Mapping[str, Any]) -> list[Translation]:
        """Splits a batch of signature outputs into one `Translation` per row.

        Args:
            outputs: the signature's outputs by alias (arrays or nested lists;
                strings as `bytes` or `str`), as decoded from a gRPC
                `PredictResponse` or a REST `outputs` object.

        Returns:
            A list with one `Translation` per batch row.

        Raises:
            ValueError: if an output is missing or the outputs' batch sizes or
                ranks do not match the contract.
        """
        missing = [
            name
            for name in TRANSLATION_OUTPUTS
            if name not in outputs and name not in CONFIDENCE_OUTPUTS
        ]
        if missing:
            raise ValueError(
                f"The model's response lacks the outputs {missing} of the translation "
                f"contract. Received outputs: {sorted(outputs)}"
            )
        ranks = {name: len(shape) for name, (_, shape) in TRANSLATION_OUTPUTS.items()}
        texts = _strings(outputs["translation"], rank=ranks["translation"], name="translation")
        scores = np.asarray(outputs["score"], dtype=np.float32).reshape(-1)
        lengths = np.asarray(outputs["length"], dtype=np.int64).reshape(-1)
        tokens = _strings(outputs["tokens"], rank=ranks["tokens"], name="tokens")
        source_tokens = _strings(
            outputs["source_tokens"], rank=ranks["source_tokens"], name="source_tokens"
        )
        attention = np.asarray(outputs["attention"], dtype=np.float32)
        batch = len(texts)
        if attention.size == 0 and attention.ndim != 3:
            attention = np.zeros((batch, 0, 0), np.float32)
        if attention.ndim != ranks["attention"]:
            raise ValueError(
                f"Expected output 'attention' of rank 3 [batch, T_out, T_in]. "
                f"Received shape: {attention.shape}"
            )
        sizes = {
            "translation": batch,
            "score": len(scores),
            "length": len(lengths),
            "tokens": len(tokens),
            "source_tokens": len(source_tokens),
            "attention": attention.shape[0],
        }
        token_scores = confidence = None
        if all(name in outputs for name in CONFIDENCE_OUTPUTS):
            token_scores = np.asarray(outputs["token_scores"], dtype=np.float32)
            if token_scores.size == 0 and token_scores.ndim != 2:
                token_scores = np.zeros((batch, 0), np.float32)
            if token_scores.ndim != 2:
                raise ValueError(
                    "Expected output 'token_scores' of rank 2 [batch, T_out]. "
                    f"Received shape: {token_scores.shape}"
                )
            confidence = np.asarray(outputs["confidence"], dtype=np.float32).reshape(-1)
            sizes["token_scores"] = token_scores.shape[0]
            sizes["confidence"] = len(confidence)
        next_words = None
        if "next_words" in outputs and "next_word_scores" in outputs:
            words = np.asarray(outputs["next_words"], dtype=object)
            word_scores = np.asarray(outputs["next_word_scores"], dtype=np.float32)
            if words.size == 0:
                words = words.reshape(batch, 0)
                word_scores = word_scores.reshape(batch, 0)
            if words.ndim != 2 or words.shape != word_scores.shape:
                raise ValueError(
                    "Expected outputs 'next_words' and 'next_word_scores' of shape [batch, k]. "
                    f"Received shapes: {words.shape}, {word_scores.shape}"
                )
            next_words = [
                [(_decode(w), float(p)) for w, p in zip(row, row_scores, strict=True)]
                for row, row_scores in zip(words, word_scores, strict=True)
            ]
            if words.shape[1] == 0:
                next_words = None
            else:
                sizes["next_words"] = len(words)
        if len(set(sizes.values())) != 1:
            raise ValueError(f"The outputs disagree on the batch size. Received: {sizes}")
        results = []
        for i in range(batch):
            row_tokens = tokens[i]
            length = int(min(max(lengths[i], 0), len(row_tokens)))
            row_source = source_tokens[i]
            n_source = len(row_source)
            while n_source > 0 and row_source[n_source - 1] == "":
                n_source -= 1
            row_attention = attention[i, :length, :n_source]
            results.append(
                cls(
                    text=texts[i],
                    score=float(scores[i]),
                    length=length,
                    tokens=list(row_tokens[:length]),
                    source_tokens=list(row_source[:n_source]),
                    attention=np.array(row_attention, dtype=np.float32),
                    token_probabilities=None
                    if token_scores is None
                    else [float(p) for p in np.exp(token_scores[i, :length])],
                    confidence=None if confidence is None else float(confidence[i]),
                    next_words=None if next_words is None else next_words[i],
                )
            )
        return results

    @classmethod
    def from_n_best_outputs(cls, outputs: Mapping[str, Any]) -> list[list[Translation]]:
        """Splits the outputs of an n-best request (`N_BEST_OUTPUTS`) into lists per row.

        Args:
            outputs: `translation`, `score`, `length` `[batch, n_best]`,
                `tokens` `[batch, n_best, T_out]`, `source_tokens`
                `[batch, T_in]`, `attention` `[batch, n_best, T_out, T_in]`.

        Returns:
            One list of `n_best` `Translation`s per batch row, best first.

        Raises:
            ValueError: an output is missing or its shape does not fit.
        """
        return _from_n_best(cls, outputs)


def _from_n_best(cls, outputs: Mapping[str, Any]) -> list[list[Translation]]:
    missing = [
        name for name in N_BEST_OUTPUTS if name not in outputs and name not in CONFIDENCE_OUTPUTS
    ]
    if missing:
        raise ValueError(
            f"The model's response lacks the outputs {missing} of the translation "
            f"contract. Received outputs: {sorted(outputs)}"
        )
    texts = np.asarray(outputs["translation"], dtype=object)
    if texts.ndim != 2:
        raise ValueError(
            "Expected output 'translation' of rank 2 [batch, n_best] for an n-best request. "
            f"Received shape: {texts.shape}"
        )
    batch, n_best = texts.shape
    attention = np.asarray(outputs["attention"], dtype=np.float32)
    if attention.size == 0 and attention.ndim != 4:
        attention = np.zeros((batch, n_best, 0, 0), np.float32)
    tokens = np.asarray(outputs["tokens"], dtype=object)
    if tokens.size == 0 and tokens.ndim != 3:
        tokens = tokens.reshape(batch, n_best, 0)
    scores = np.asarray(outputs["score"], dtype=np.float32)
    lengths = np.asarray(outputs["length"], dtype=np.int64)
    for name, array, rank in (
        ("score", scores, 2),
        ("length", lengths, 2),
        ("tokens", tokens, 3),
        ("attention", attention, 4),
    ):
        if array.ndim != rank or array.shape[:2] != (batch, n_best):
            raise ValueError(
                f"Expected output {name!r} of rank {rank} starting [batch, n_best] = "
                f"[{batch}, {n_best}]. Received shape: {array.shape}"
            )
    confidence_outputs = {}
    if all(name in outputs for name in CONFIDENCE_OUTPUTS):
        token_scores = np.asarray(outputs["token_scores"], dtype=np.float32)
        if token_scores.size == 0 and token_scores.ndim != 3:
            token_scores = token_scores.reshape(batch, n_best, 0)
        confidence = np.asarray(outputs["confidence"], dtype=np.float32)
        for name, array, rank in (("token_scores", token_scores, 3), ("confidence", confidence, 2)):
            if array.ndim != rank or array.shape[:2] != (batch, n_best):
                raise ValueError(
                    f"Expected output {name!r} of rank {rank} starting [batch, n_best] = "
                    f"[{batch}, {n_best}]. Received shape: {array.shape}"
                )
        confidence_outputs = {"token_scores": token_scores, "confidence": confidence}
    # Rank r of every row is one batch of rows without the n-best axis.
    by_rank = [
        cls.from_outputs(
            {
                "translation": texts[:, rank],
                "score": scores[:, rank],
                "length": lengths[:, rank],
                "tokens": tokens[:, rank],
                "source_tokens": outputs["source_tokens"],
                "attention": attention[:, rank],
                **{name: array[:, rank] for name, array in confidence_outputs.items()},
                **{
                    name: outputs[name]
                    for name in ("next_words", "next_word_scores")
                    if name in outputs
                },
            }
        )
        for rank in range(n_best)
    ]
    return [[by_rank[rank][row] for rank in range(n_best)] for row in range(batch)]


def _strings(values: Any, *, rank: int, name: str) -> list:
    """Decodes a string tensor (bytes or str, array or nested lists) to nested lists of str."""
    array = np.asarray(values, dtype=object)
    if array.size == 0 and rank == 2 and array.ndim == 1:
        array = array.reshape(len(array), 0)
    if array.ndim != rank:
        raise ValueError(f"Expected output {name!r} of rank {rank}. Received shape: {array.shape}")
    decode = np.frompyfunc(_decode, 1, 1)
    return decode(array).tolist() if array.size else array.tolist()


def _decode(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)
