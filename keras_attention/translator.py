"""Strings in, translations out: vectorizers + model + a search strategy."""

from __future__ import annotations

import functools
import random

import tensorflow as tf

from keras_attention.decoding import BeamSearch, GreedySearch, RandomSampling
from keras_attention.text import BaseVectorizer

OUTPUT_KEYS = ("translation", "score", "length", "tokens", "source_tokens", "attention")


class Translator:
    """Translates raw strings with a trained `Seq2Seq` model, all in the graph.

    `translate` is pure TensorFlow (tf-text ops, lookups, one `tf.while_loop`
    per search), so the same function runs eagerly, in `tf.function`, and
    inside the exported SavedModel.

    Args:
        model: a `Seq2Seq`.
        source_vectorizer: `TextVectorizer` or `SubwordVectorizer` for the
            source language. Its `max_length` truncates long inputs.
        target_vectorizer: the vectorizer of the target language. The ids
            of its `forbidden_output_ids` (`[UNK]` for subwords) are never
            emitted: their logits are set to the dtype's lowest value at every
            search step.
        max_output_length: int, the most tokens a translation may have.
    """

    def __init__(
        self,
        model,
        source_vectorizer: BaseVectorizer,
        target_vectorizer: BaseVectorizer,
        max_output_length: int = 50,
    ):
        if max_output_length < 1:
            raise ValueError(
                f"`max_output_length` must be >= 1. Received: max_output_length={max_output_length}"
            )
        self.model = model
        self.source_vectorizer = source_vectorizer
        self.target_vectorizer = target_vectorizer
        self.max_output_length = max_output_length

    def strategy(
        self,
        beam_width: int = 1,
        length_penalty: float = 0.6,
        *,
        sample: bool = False,
        temperature: float = 1.0,
        top_k: int | None = None,
        seed: int | None = None,
    ):
        """The decoding strategy for these settings.

        Greedy search for `beam_width == 1`, beam search above; with
        `sample=True`, `RandomSampling(temperature, top_k, seed)` (which needs
        `beam_width == 1`). Bad values raise `ValueError`.
        """
        common = dict(
            max_length=self.max_output_length,
            end_id=self.target_vectorizer.end_id,
            pad_id=self.target_vectorizer.pad_id,
        )
        if sample:
            if beam_width != 1:
                raise ValueError(
                    "Sampling draws one translation per sentence; it cannot be combined with "
                    f"beam search. Received: sample=True, beam_width={beam_width!r}"
                )
            return RandomSampling(temperature=temperature, top_k=top_k, seed=seed, **common)
        if beam_width == 1:
            return GreedySearch(**common)
        return BeamSearch(beam_width=beam_width, length_penalty=length_penalty, **common)

    def encode_source(self, texts) -> tuple[tf.Tensor, tf.Tensor]:
        """Source ids (int32) and tokens (string), both `(batch_size, T_in)`.

        Tokens past the source vectorizer's `max_length` are cut from both.
        At least one (padding) column, so a batch of empty strings still runs.
        """
        source_ids = self.source_vectorizer(texts)
        width = tf.maximum(tf.shape(source_ids)[1], 1)
        source_ids = tf.pad(source_ids, [[0, 0], [0, width - tf.shape(source_ids)[1]]])
        source_tokens = self.source_vectorizer.tokenize(texts)[:, :width]
        source_tokens = source_tokens.to_tensor(default_value="")
        source_tokens = tf.pad(
            source_tokens, [[0, 0], [0, width - tf.shape(source_tokens)[1]]], constant_values=""
        )
        return source_ids, source_tokens

    def next_logits(self, step, token_ids, state):
        """The model's `next_logits`, the target's forbidden ids at the lowest logit."""
        logits, state, attention = self.model.next_logits(step, token_ids, state)
        forbidden = list(self.target_vectorizer.forbidden_output_ids)
        if forbidden:
            size = tf.shape(logits)[-1]
            banned = tf.reduce_any(
                tf.equal(tf.range(size)[:, tf.newaxis], tf.constant(forbidden, tf.int32)), axis=1
            )
            lowest = tf.constant(logits.dtype.min, logits.dtype)  # finite: no inf - inf in a beam
            logits = tf.where(banned, lowest, logits)
        return logits, state, attention

    def translate(self, texts, strategy) -> dict[str, tf.Tensor]:
        """Translates a batch of strings.

        Args:
            texts: string tensor `(batch_size,)`.
            strategy: a decoding strategy (`GreedySearch`, `BeamSearch`,
                `RandomSampling`), or any callable
                `strategy(next_fn, initial_state, start_ids) -> DecodeResult`.

        Returns:
            A dict of dense tensors: `translation` string `(batch_size,)`,
            `score` float32 `(batch_size,)` (log-probability), `length` int32
            `(batch_size,)` (tokens before `[END]`), `tokens` string
            `(batch_size, T_out)`, `source_tokens` string `(batch_size, T_in)`
            (padded with `""`), `attention` float32 `(batch_size, T_out, T_in)`.
            Inputs with no token (empty or blank strings) translate to `""`
            with score 0 and length 0.
        """
        texts = tf.reshape(tf.convert_to_tensor(texts, dtype=tf.string), [-1])
        source_ids, source_tokens = self.encode_source(texts)
        has_tokens = tf.reduce_any(tf.not_equal(source_ids, 0), axis=1)

        batch_size = tf.shape(texts)[0]
        start_ids = tf.fill([batch_size], tf.constant(self.target_vectorizer.start_id, tf.int32))
        state = self.model.initial_decode_state(source_ids)
        result = strategy(self.next_logits, state, start_ids)

        lengths = tf.where(has_tokens, result.lengths, 0)
        steps = tf.shape(result.tokens)[1]
        keep = tf.sequence_mask(lengths, steps)
        token_ids = tf.where(keep, result.tokens, self.target_vectorizer.pad_id)
        tokens = tf.where(keep, self.target_vectorizer.ids_to_tokens(token_ids), "")
        attention = tf.where(keep[:, :, tf.newaxis], result.attention, 0.0)
        return {
            "translation": self.target_vectorizer.decode(token_ids),
            "score": tf.where(has_tokens, result.scores, 0.0),
            "length": lengths,
            "tokens": tokens,
            "source_tokens": source_tokens,
            "attention": attention,
        }

    def compile(self, strategy):
        """`translate` with `strategy` as a `tf.function` over a `[None]` string batch."""
        return tf.function(
            lambda texts: self.translate(texts, strategy),
            input_signature=[tf.TensorSpec([None], tf.string, name="text")],
            autograph=False,  # translate is plain TensorFlow; no Python control flow to convert
        )

    def translate_all(
        self,
        texts: list[str],
        beam_width: int = 1,
        length_penalty: float = 0.6,
        batch_size: int = 64,
        progress: bool = False,
        *,
        sample: bool = False,
        temperature: float = 1.0,
        top_k: int | None = None,
        seed: int | None = None,
    ) -> list[dict]:
        """Translates a list of strings in batches; returns one dict per input.

        Inputs are sorted by length into batches (less padding) and the results
        returned in input order. Each dict holds `translation` (str), `score`
        (float), `length` (int), `tokens` and `source_tokens` (lists of str
        without padding), and `attention` (a NumPy array `[length, n_source]`).

        `sample=True` draws each translation with `RandomSampling(temperature,
        top_k)` instead of searching (`score` is then the model's
        log-probability of the drawn translation). With a `seed`, batch `i`
        is sampled with seed `seed + i`, so the same `texts`, `batch_size` and
        `seed` give the same translations; without one every call differs.
        """
        if batch_size < 1:
            raise ValueError(f"`batch_size` must be >= 1. Received: batch_size={batch_size}")
        import keras

        strategy = self.strategy(
            beam_width,
            length_penalty,
            sample=sample,
            temperature=temperature,
            top_k=top_k,
            seed=seed,
        )
        if sample:
            if seed is None:
                # Drawn here: a graph-level draw would repeat under a global TF seed.
                seed = random.SystemRandom().randrange(2**31)
            seeded = tf.function(
                lambda texts, batch_seed: self.translate(
                    texts, functools.partial(strategy, seed=batch_seed)
                ),
                input_signature=[
                    tf.TensorSpec([None], tf.string, name="text"),
                    tf.TensorSpec([], tf.int32, name="seed"),
                ],
                autograph=False,
            )

            def translate(texts, batch_index):
                return seeded(texts, tf.constant((seed + batch_index) % 2**31, tf.int32))
        else:
            compiled = self.compile(strategy)

            def translate(texts, batch_index):
                return compiled(texts)

        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        results: list[dict | None] = [None] * len(texts)
        bar = keras.utils.Progbar(len(texts), unit_name="sentence") if progress else None
        for batch_index, start in enumerate(range(0, len(order), batch_size)):
            indices = order[start : start + batch_size]
            batch = tf.constant([texts[i] for i in indices])
            outputs = {k: v.numpy() for k, v in translate(batch, batch_index).items()}
            for row, index in enumerate(indices):
                length = int(outputs["length"][row])
                source = [t.decode("utf-8") for t in outputs["source_tokens"][row] if t]
                results[index] = {
                    "translation": outputs["translation"][row].decode("utf-8"),
                    "score": float(outputs["score"][row]),
                    "length": length,
                    "tokens": [t.decode("utf-8") for t in outputs["tokens"][row][:length]],
                    "source_tokens": source,
                    "attention": outputs["attention"][row][:length, : len(source)],
                }
            if bar is not None:
                bar.add(len(indices))
        return results
