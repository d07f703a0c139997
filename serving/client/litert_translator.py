"""`LiteRTTranslator`: translate strings with a LiteRT export, without TensorFlow."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from keras_attention_client.litert_contract import INPUT, MANIFEST_FILE, MODEL_FILES, MODES
from keras_attention_client.litert_text import LiteRTText
from keras_attention_client.wire.translation import Translation


class LiteRTTranslator:
    """Translates strings with the `.tflite` models of a LiteRT export.

    Needs NumPy, `ai-edge-litert` (the interpreter), `regex` and, for a
    SentencePiece run, `sentencepiece` (from a clone: `pip install
    "./serving/client[litert]"`); no TensorFlow.

    1. `LiteRTText.encode` turns each sentence into the source ids the
       SavedModel's graph computes (cut to the source's `max_length`).
    2. Sentences are sorted by length and sent `batch_size` at a time as an
       int32 `(batch, attention_width)` array, padded with 0, to the mode's
       model, whose search runs inside it.
    3. Each result is built as `Translator.translate_all` builds it: the
       tokens up to the model's length, the translation decoded from them,
       the score, and the attention `(length, source tokens)`. A sentence
       with no token translates to `""` with score 0 and length 0, without
       running the model.
    4. With `replace_unknown`, each `[UNK]` the model emits becomes, in
       `tokens` and `translation`, the source token at that step's attention
       peak (the first, on a tie), as the SavedModel's signatures and
       `Translator` do; the translation is then the detokenized tokens.

    Args:
        directory: the export directory (`keras-attention export RUN
            --format litert`).
        num_threads: the interpreter's CPU threads. Defaults to `None` (the
            runtime's choice).
        replace_unknown: bool or None, whether each `[UNK]` becomes the
            source token attended to most (step 4). Defaults to `None`: the
            export's own setting (its manifest's `replace_unknown`; off for
            exports written before it was recorded). True is an error for a
            SentencePiece target, which never emits `[UNK]`. The attribute
            holds the resolved bool.

    Example:

    ```python
    translator = LiteRTTranslator("/models/translator-litert")
    translator.translate(["How are you?"])[0].text
    translator.translate(["How are you?"], mode="beam", n_best=2)[0][1].text
    ```
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        num_threads: int | None = None,
        replace_unknown: bool | None = None,
    ):
        self.directory = Path(directory)
        with open(self.directory / MANIFEST_FILE, encoding="utf-8") as f:
            self.manifest = json.load(f)
        self.text = LiteRTText(self.directory)
        self.num_threads = num_threads
        if not isinstance(replace_unknown, (bool, type(None))):
            raise ValueError(
                f"`replace_unknown` must be a bool or None. Received: {replace_unknown!r}"
            )
        if replace_unknown and self.text.target.sentencepiece is not None:
            raise ValueError(
                "`replace_unknown` needs a target vocabulary whose [UNK] the model may emit "
                "(a word vocabulary); this export's target is a SentencePiece model"
            )
        if replace_unknown is None:
            replace_unknown = bool(self.manifest.get("replace_unknown", False))
        self.replace_unknown = replace_unknown
        self._runners: dict = {}

    @property
    def modes(self) -> list[str]:
        """The decoding modes this export has a model for."""
        return [mode for mode in MODES if mode in self.manifest["models"]]

    def runner(self, mode: str):
        """The LiteRT signature runner of `mode`'s model (loaded once)."""
        if mode not in self.modes:
            raise ValueError(f"`mode` must be one of {self.modes}. Received: mode={mode!r}")
        if mode not in self._runners:
            from ai_edge_litert.interpreter import Interpreter

            interpreter = Interpreter(
                model_path=str(self.directory / MODEL_FILES[mode]), num_threads=self.num_threads
            )
            self._runners[mode] = interpreter.get_signature_runner()
        return self._runners[mode]

    def run(self, mode: str, source_ids: np.ndarray) -> dict[str, np.ndarray]:
        """The model of `mode` on int32 source ids `(batch, attention_width)`: its raw outputs."""
        return self.runner(mode)(**{INPUT: np.asarray(source_ids, np.int32)})

    def translate(
        self,
        texts: Sequence[str],
        mode: str = "greedy",
        *,
        n_best: int | None = None,
        batch_size: int = 8,
    ) -> list:
        """Translates `texts`; one result per input, in input order.

        Args:
            texts: the sentences.
            mode: `"greedy"` or `"beam"` (the export's beam width and length penalty).
            n_best: with `"beam"`, return this many hypotheses per sentence
                (at most the export's `n_best`), each result then a list of
                dicts, best first; `None` (the default): the best one.
            batch_size: sentences per model call.

        Returns:
            `Translation`s (as `Translator.translate_all` and the serving
            clients return them: `text`, `score`, `length`, `tokens`,
            `source_tokens`, `attention` `(length, len(source_tokens))`;
            `token_probabilities` and `confidence` are `None`, the models do
            not return token scores), or lists of them with `n_best`.
        """
        if batch_size < 1:
            raise ValueError(f"`batch_size` must be >= 1. Received: batch_size={batch_size}")
        available = self.manifest["decoding"]["beam"]["n_best"]
        if n_best is not None and (mode != "beam" or not 1 <= n_best <= available):
            raise ValueError(
                f"`n_best` needs mode='beam' and a value in [1, {available}]. "
                f"Received: n_best={n_best!r}, mode={mode!r}"
            )
        width = self.text.attention_width
        encoded = [self.text.encode(text) for text in texts]
        results: list = [None] * len(texts)
        running = [i for i, (ids, _) in enumerate(encoded) if ids]
        for i, (ids, tokens) in enumerate(encoded):
            if not ids:
                empty = _result(self.text, [], 0.0, np.zeros([0, len(tokens)]), tokens, False)
                results[i] = [empty] * n_best if n_best else empty
        running.sort(key=lambda i: len(encoded[i][0]))
        for start in range(0, len(running), batch_size):
            rows = running[start : start + batch_size]
            batch = np.zeros([len(rows), width], np.int32)
            for row, index in enumerate(rows):
                ids = encoded[index][0][:width]
                batch[row, : len(ids)] = ids
            outputs = self.run(mode, batch)
            for row, index in enumerate(rows):
                source_tokens = encoded[index][1]
                if mode == "greedy":
                    results[index] = self._one(outputs, (row,), source_tokens)
                else:
                    ranked = [
                        self._one(outputs, (row, rank), source_tokens)
                        for rank in range(n_best or 1)
                    ]
                    results[index] = ranked if n_best else ranked[0]
        return results

    def _one(self, outputs, index, source_tokens) -> Translation:
        length = int(outputs["lengths"][index])
        ids = outputs["tokens"][index][:length]
        attention = outputs["attention"][index][:length, : len(source_tokens)]
        return _result(
            self.text,
            ids,
            float(outputs["scores"][index]),
            attention,
            source_tokens,
            self.replace_unknown,
        )


def _result(text: LiteRTText, ids, score, attention, source_tokens, replace_unknown) -> Translation:
    """The `Translation` of target `ids`; with `replace_unknown`, each `[UNK]` as the source
    token at its step's attention peak (the first on a tie), the translation then the
    detokenized tokens."""
    tokens = text.target_tokens(ids)
    translation = text.decode(ids)
    unk_id = text.reserved["unk_id"]
    unknown = [step for step, token_id in enumerate(ids) if int(token_id) == unk_id]
    if replace_unknown and unknown and source_tokens:
        for step in unknown:
            tokens[step] = source_tokens[int(np.argmax(attention[step]))]
        translation = text.detokenize(tokens)
    return Translation(
        text=translation,
        score=score,
        length=len(tokens),
        tokens=tokens,
        source_tokens=list(source_tokens),
        attention=np.asarray(attention, np.float32),
    )
