"""Strings in, translations out: vectorizers + model + a search strategy."""

from __future__ import annotations

import functools
import random

import tensorflow as tf

from keras_attention.decoding.options_strategy import strategy_for
from keras_attention.decoding_defaults import DEFAULT_MAX_OUTPUT_LENGTH
from keras_attention.inference import next_step
from keras_attention.inference.constraints import (
    allow_constraints,
    as_beam_search,
    check_beam_search,
    check_phrases,
    encode_constraints,
    pad_phrases,
    steered_batches,
    to_positions,
)
from keras_attention.inference.translation_outputs import (
    OUTPUT_KEYS,
    n_best_outputs,
    resolve_replace_unknown,
    results_in_order,
    single_outputs,
)
from keras_attention.models.weight_slices import WeightSlices
from keras_attention.text import BaseVectorizer
from keras_attention_client.defaults import DEFAULT_BATCH_SIZE
from keras_attention_client.wire.decoding_options import DecodingOptions


class Translator:
    """Translates raw strings with a trained `Seq2Seq` model, all in the graph.

    `translate` is pure TensorFlow (tf-text ops, lookups, one `tf.while_loop`
    per search), so the same function runs eagerly, in `tf.function`, and
    inside the exported SavedModel.

    Args:
        model: a `Seq2Seq`, or an `Ensemble` of them (decoded as one model).
        source_vectorizer: `TextVectorizer` or `SubwordVectorizer` for the
            source language. Its `max_length` truncates long inputs.
        target_vectorizer: the vectorizer of the target language. The ids
            of its `forbidden_output_ids` (`[UNK]` for subwords) are never
            emitted: their logits are set to the dtype's lowest value at every
            search step.
        max_output_length: int, the most tokens a translation may have.
        shortlist: a `VocabularyShortlist`, or `None` (the default) to score
            the whole target vocabulary. With one, each `translate` call
            computes only the shortlist's candidates for the batch's source
            ids: the output projection's columns of those ids are gathered
            once per call, the search runs over candidate positions, and the
            ids are mapped back before the embedding lookup and in the
            outputs. Each sentence may emit only its own candidates
            (`VocabularyShortlist.allowed`), so its translation does not
            depend on its batch-mates. Scores are then log-probabilities over
            the sentence's own candidates.
        gather_weights: `gather(variable, ids, axis) -> tensor`, how the
            model reads the slices of its weights that a call uses: the
            source and target embeddings' rows it looks up, and the
            shortlist's columns of the output projection. The translator
            calls the model inside `WeightSlices(gather_weights)`, the
            model's one hook for it. Defaults to `None`: `tf.gather` of
            the weights, the embeddings' rows taken from the whole matrices.
            An export with int8 weights reads the int8 rows and columns and
            their scales, so that a request converts only those
            (`WeightStorage.gather`).
        replace_unknown: bool or None, whether each `[UNK]` the model emits
            becomes, in `tokens` and `translation`, the source token it
            attended to most (`argmax` of that step's attention; Luong et al.
            2015), so that names and numbers outside the vocabulary come
            through. None (the default): on where the model may emit `[UNK]`
            (word vocabularies), off where it never does (subwords; True is
            an error there). The attribute holds the resolved bool.
    """

    def __init__(
        self,
        model,
        source_vectorizer: BaseVectorizer,
        target_vectorizer: BaseVectorizer,
        max_output_length: int = DEFAULT_MAX_OUTPUT_LENGTH,
        *,
        shortlist=None,
        gather_weights=None,
        replace_unknown: bool | None = None,
    ):
        if max_output_length < 1:
            raise ValueError(
                f"`max_output_length` must be >= 1. Received: max_output_length={max_output_length}"
            )
        if shortlist is not None:
            next_step.check_shortlist(shortlist, model, source_vectorizer, target_vectorizer)
        self.model = model
        self.source_vectorizer = source_vectorizer
        self.target_vectorizer = target_vectorizer
        self.max_output_length = max_output_length
        self.shortlist = shortlist
        self.gather_weights = gather_weights
        self.replace_unknown = resolve_replace_unknown(replace_unknown, target_vectorizer)

    def with_shortlist(self, shortlist, gather_weights=None) -> Translator:
        """This translator with another `shortlist` (`None`: none) and `gather_weights`."""
        return Translator(
            self.model,
            self.source_vectorizer,
            self.target_vectorizer,
            max_output_length=self.max_output_length,
            shortlist=shortlist,
            gather_weights=gather_weights,
            replace_unknown=self.replace_unknown,
        )

    def strategy(self, options: DecodingOptions | None = None, **decoding):
        """The decoding strategy for `options` (a `DecodingOptions`, or its fields as
        keywords): `keras_attention.decoding.options_strategy.strategy_for`, with the
        translator's `max_output_length` and the target's end and padding ids. Bad values
        raise `ValueError`."""
        return strategy_for(
            DecodingOptions.of(options, **decoding),
            max_steps=self.max_output_length,
            end_id=self.target_vectorizer.end_id,
            pad_id=self.target_vectorizer.pad_id,
        )

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
        return self.step_function(state)(step, token_ids, state)

    def step_function(self, state, candidates=None):
        """The search's `next_fn(step, token_ids, state) -> (logits, state, attention)`.

        The model's next logits with the target's forbidden ids at the lowest
        logit. What stays the same from step to step is computed here, once
        per call: the forbidden ids' mask, the model's weights in its compute
        dtype (`Seq2Seq.step_function`) and, with `candidates`, the output
        projection's columns.

        Args:
            state: the model's decoding state (`initial_decode_state`).
            candidates: `None` (every target id), or int32 `(C,)` target ids
                (a shortlist's): `next_fn` then takes and scores candidate
                positions: its `token_ids` index `candidates` (mapped to
                target ids for the embedding lookup) and its logits are
                `(batch, C)`.
        """
        projection = None
        with WeightSlices(self.gather_weights):
            if candidates is not None:
                projection = self.model.output_projection(candidates)
            if hasattr(self.model, "step_function"):
                model_step = self.model.step_function(state, projection)
            elif projection is not None:
                model_step = functools.partial(self.model.next_logits, projection=projection)
            else:
                model_step = self.model.next_logits
        ids = tf.range(self.target_vectorizer.vocabulary_size) if candidates is None else candidates
        banned = next_step.forbidden_mask(self.target_vectorizer, ids)

        def next_fn(step, token_ids, state):
            if candidates is not None:
                token_ids = tf.gather(candidates, token_ids)
            logits, state, attention = model_step(step, token_ids, state)
            if banned is not None:
                logits = next_step.lowest_where(banned, logits)
            return logits, state, attention

        return next_fn

    def translate(
        self, texts, strategy, *, prefixes=None, next_words=0, constraints=None, **options
    ) -> dict[str, tf.Tensor]:
        """Translates a batch of strings.

        Args:
            texts: string tensor `(batch_size,)`.
            strategy: a decoding strategy (`GreedySearch`, `BeamSearch`,
                `RandomSampling`), or any callable
                `strategy(next_fn, initial_state, start_ids) -> DecodeResult`.
            prefixes: `None`, or a string tensor `(batch_size,)`: each
                translation starts with its prefix's tokens (tokenized as
                targets; `""` for none). The forced tokens are given, not
                chosen: they score 0 (probability 1), so `score` and
                `confidence` are those of the rest given the prefix.
            next_words: int (a scalar tensor in an export), the number of
                most probable words after each prefix to return; 0 (the
                default) returns none.
            constraints: `None`, or a string tensor `(batch_size, C)`, the
                phrases each translation must contain (`""`: none), for a
                `BeamSearch` (`inference.constraints`). A row without phrases
                decodes exactly as without them.
            **options: the strategy's per-call options (e.g. `beam_width`,
                `max_steps`, as scalar tensors in an export).

        Returns:
            A dict of dense tensors: `translation_outputs.OUTPUT_KEYS`
            (`translation`, `score`, `length`, `tokens`, `source_tokens`,
            `attention`, `token_scores`, `confidence`; shapes and meanings
            there), with an n-best axis after the batch axis for a strategy
            that returns n-best lists (`BeamSearch` with `n_best`), and with
            `prefixes` or `next_words` also `next_words` and
            `next_word_scores` (`next_step.next_word_outputs`).
        """
        texts = tf.reshape(tf.convert_to_tensor(texts, dtype=tf.string), [-1])
        source_ids, source_tokens = self.encode_source(texts)
        has_tokens = tf.reduce_any(tf.not_equal(source_ids, 0), axis=1)

        batch_size = tf.shape(texts)[0]
        start_ids = tf.fill([batch_size], tf.constant(self.target_vectorizer.start_id, tf.int32))
        with WeightSlices(self.gather_weights):
            state = self.model.initial_decode_state(source_ids)
        # With a shortlist, the start, end and padding ids are candidates at their own positions.
        steered = prefixes is not None or not next_step.is_zero(next_words)
        if steered:
            if prefixes is None:
                prefixes = tf.fill([batch_size], "")
            prefix_ids, prefix_lengths = next_step.encode_prefixes(
                self.target_vectorizer, prefixes, batch_size
            )
        if constraints is not None:
            check_beam_search(strategy)
            constraint_ids = encode_constraints(
                self.target_vectorizer, constraints, batch_size, self.max_output_length
            )
            options["constraints"] = constraint_ids
        if self.shortlist is None:
            candidates = None
            next_fn, decode_state = self.step_function(state), state
        else:
            extra = [prefix_ids] if steered else []
            if constraints is not None:
                extra.append(tf.reshape(constraint_ids, [-1]))
            extra = tf.concat([tf.reshape(e, [-1]) for e in extra], 0) if extra else None
            candidates = self.shortlist.candidates(source_ids, extra_ids=extra)
            allowed = self.shortlist.allowed(source_ids, candidates)
            if constraints is not None:
                allowed = allow_constraints(allowed, candidates, constraint_ids)
                options["constraints"] = to_positions(candidates, constraint_ids)
            # Each row's own candidates travel in the state, so that beam
            # search's tiling and the dropping of finished rows keep them.
            next_fn = next_step.own_candidates(self.step_function(state, candidates))
            decode_state = (state, allowed)
        if prefixes is not None:
            forced = prefix_ids if candidates is None else to_positions(candidates, prefix_ids)
            next_fn = next_step.forced_prefix(next_fn)
            decode_state = (decode_state, forced, prefix_lengths)
        result = strategy(next_fn, decode_state, start_ids, **options)
        if candidates is not None:
            result = result._replace(tokens=tf.gather(candidates, result.tokens))
        target = self.target_vectorizer
        if result.tokens.shape.rank == 3:
            outputs = n_best_outputs(
                target, self.replace_unknown, result, has_tokens, source_tokens
            )
        else:
            outputs = single_outputs(
                target, self.replace_unknown, result, has_tokens, source_tokens
            )
            outputs["source_tokens"] = source_tokens
            outputs = {key: outputs[key] for key in OUTPUT_KEYS}
        if steered:
            with WeightSlices(self.gather_weights):
                outputs.update(
                    next_step.next_word_outputs(
                        self.model, target, source_ids, prefix_ids, prefix_lengths, next_words
                    )
                )
        return outputs

    def compile(self, strategy):
        """`translate` with `strategy` as a `tf.function` over a `[None]` string batch."""
        return tf.function(
            lambda texts: self.translate(texts, strategy),
            input_signature=[tf.TensorSpec([None], tf.string, name="text")],
            autograph=False,  # translate is plain TensorFlow; no Python control flow to convert
        )

    def steered_function(self, strategy, prefixed: bool, next_words: int, constrained: bool):
        """`translate` with `strategy` as a `tf.function` over a batch's `text`, `prefix`
        and `constraints` (`[None]`, `[None]`, `[None, None]` strings); the prefixes and
        the constraints are passed on only when `prefixed` and `constrained`."""
        return tf.function(
            lambda texts, prefixes, phrases: self.translate(
                texts,
                strategy,
                prefixes=prefixes if prefixed else None,
                next_words=next_words,
                constraints=phrases if constrained else None,
            ),
            input_signature=[
                tf.TensorSpec([None], tf.string, name="text"),
                tf.TensorSpec([None], tf.string, name="prefix"),
                tf.TensorSpec([None, None], tf.string, name="constraints"),
            ],
            autograph=False,
        )

    def translate_all(
        self,
        texts: list[str],
        options: DecodingOptions | None = None,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        progress: bool = False,
        prefixes: list[str] | None = None,
        next_words: int = 0,
        constraints: list[list[str]] | None = None,
        **decoding,
    ) -> list:
        """Translates a list of strings in batches; returns one result per input.

        Inputs are sorted by length into batches (less padding) and the results
        returned in input order. Each result is a `Translation` (the type the
        serving clients return): `text` (str), `score` (float), `length`
        (int), `tokens` and `source_tokens` (lists of str without padding),
        `attention` (a NumPy array `[length, n_source]`),
        `token_probabilities` (list of float, the probability of each of
        `tokens`) and `confidence` (float in `[0, 1]`, the geometric mean of
        the token probabilities, the end token's included). With `n_best > 1`
        (beam search) each result is a list of `n_best` of them, best first.

        `options` (a `DecodingOptions`, or its fields as keywords in
        `decoding`, e.g. `beam_width=4`) chooses the strategy (`strategy`).
        `sample=True` draws each translation with `RandomSampling(temperature,
        top_k, top_p)` instead of searching (`score` is then the model's
        log-probability of the drawn translation). With a `seed`, batch `i`
        is sampled with seed `seed + i` (modulo 2**31), so the same `texts`,
        `batch_size` and `seed` give the same translations; without one every
        call differs. The serving clients batch and seed the same way, so an
        export's `sample` signature gives the same translations.

        `prefixes` (one string per text, `""` for none) starts each
        translation with its prefix, and `next_words` (k > 0) adds to each
        result `next_words`, a list of `(word, log_probability)`, the k most
        probable words after the prefix (`translate`). `constraints` (one
        list of phrases per text, `[]` for none) makes each translation
        contain its phrases (beam search, `beam_width` 1 included); a phrase
        no translation can contain raises `ValueError` naming it
        (`inference.constraints.check_phrases`).
        """
        options = DecodingOptions.of(options, **decoding)
        if batch_size < 1:
            raise ValueError(f"`batch_size` must be >= 1. Received: batch_size={batch_size}")

        strategy = self.strategy(options)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        seed = options.seed
        steered = prefixes is not None or next_words > 0 or constraints is not None
        if prefixes is not None and len(prefixes) != len(texts):
            raise ValueError(
                f"`prefixes` must hold one string per text. Received: {len(prefixes)} for "
                f"{len(texts)} texts"
            )
        if steered and options.sample:
            raise ValueError(
                "`prefixes`, `next_words` and `constraints` steer search, not sampling"
            )
        if options.sample:
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
        elif steered:
            phrases = pad_phrases(constraints, len(texts))
            if constraints is not None:
                check_phrases(self.target_vectorizer, phrases, self.max_output_length)
                strategy = as_beam_search(strategy, options.value("length_penalty"))
            translate_fn = self.steered_function(
                strategy, prefixes is not None, next_words, constraints is not None
            )
            translate = steered_batches(translate_fn, prefixes, phrases, order, batch_size)
        else:
            compiled = self.compile(strategy)

            def translate(texts, batch_index):
                return compiled(texts)

        return results_in_order(translate, texts, order, batch_size, progress)
