"""`TranslationSignatures`: the serving functions of a translator export."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from keras_attention.export.compiled_strategy import CompiledStrategy
from keras_attention.export.signature_options import DEFAULT_MAX_BEAM_WIDTH, SignatureOptions
from keras_attention.export.signature_tensors import (
    DTYPES,
    best_of,
    check,
    check_one_per_text,
    check_range,
    empty_outputs,
    scalar_specs,
    split_phrases,
    tensor_specs,
)
from keras_attention.export.translation_scores import teacher_forced_scores
from keras_attention.inference.translator import Translator
from keras_attention_client.wire.contract import (
    BEAM_SEARCH,
    DECODING_INPUTS,
    DEFAULT_SIGNATURE,
    N_BEST_OUTPUTS,
    SAMPLE,
    SAMPLE_INPUTS,
    SCORE_TRANSLATION,
    SEARCH,
    SEARCH_INPUTS,
    STEERED_BEAM_SEARCH,
    STEERED_BEAM_SEARCH_INPUTS,
    STEERING_INPUTS,
    STEERING_OUTPUTS,
    TEXT_INPUT,
    TRANSLATION_INPUT,
    TRANSLATION_OUTPUTS,
)
from keras_attention_client.wire.decoding_options import DecodingOptions

__all__ = ["DEFAULT_MAX_BEAM_WIDTH", "TranslationSignatures"]

# The contract lives with the client, which parses what these signatures return.
INPUT_KEY = TEXT_INPUT
TRANSLATION_KEY = TRANSLATION_INPUT
SERVING_DEFAULT = DEFAULT_SIGNATURE

_TEXT_SPEC = tf.TensorSpec([None], tf.string, name=INPUT_KEY)
_TRANSLATION_SPEC = tf.TensorSpec([None], tf.string, name=TRANSLATION_KEY)


class TranslationSignatures:
    """The functions behind each signature of a translator export.

    Every function takes `[batch]` strings and returns a dict of dense
    tensors, all TensorFlow ops (core plus tf-text), so it runs inside a
    SavedModel served by TensorFlow Serving:

    - `serving_default`: `Translator.translate` with greedy search.
    - `beam_search`: `Translator.translate` with beam search.
    - `search` (with `decoding_inputs`): `Translator.translate` with greedy
      or beam search, chosen per request (constrained beam search with
      `constraints`), and the optional `STEERING_INPUTS` (defaults: none),
      returning `STEERING_OUTPUTS` besides the translation outputs.
    - `sample` (with `decoding_inputs`): `Translator.translate` with random
      sampling.
    - `steered_beam_search` (with `decoding_inputs`; inputs `text`, `prefix`,
      `constraints`, all `[batch]` and required): `beam_search` steered per
      row by a prefix and constraints (`""`: none), so that server-side
      batching can merge its requests; `beam_search`'s outputs.
    - `score_translation` (inputs `text` and `translation`): the model's
      log-probability of a given translation, by teacher forcing (the same
      numbers the decoder computes step by step): `score` float32 `[batch]`
      (sum of the token log-probabilities, `[END]` included), `length` int32
      `[batch]` (tokens, `[END]` excluded), `tokens` string `[batch, T]`,
      `token_scores` float32 `[batch, T + 1]` (the last scored position is
      `[END]`; padding is 0), `source_tokens` string `[batch, T_in]`,
      `attention` float32 `[batch, T + 1, T_in]`. The translation is
      tokenized like training targets and cut to the model's maximum length.
      A source with no token scores 0 with length 0, as in `translate`.

    `serving_default` and `beam_search` take `text` only, whatever
    `decoding_inputs`: TF Serving's REST API does not fill SignatureDef
    defaults (a `{"instances": [...]}` request fits only a one-input
    signature) and `--enable_batching` refuses scalar inputs, so the decoding
    inputs live on signatures of their own. With `decoding_inputs` (the
    default), `search` and `sample` take the optional scalar inputs of the
    contract (`keras_attention_client.wire.contract.SEARCH_INPUTS`,
    `SAMPLE_INPUTS`), each a Python default of the function, which
    `tf.saved_model.save` writes into the SignatureDef's `defaults` (TF
    Serving's gRPC Predict feeds those for inputs a request leaves out). In
    `search`, beam width 1 (the default) runs `GreedySearch`, above it
    `BeamSearch` with the beam width, length penalty and n-best as tensors,
    so one graph serves every width up to `max_beam_width`. With `n_best` 1
    the outputs are those of the text-only signatures, value for value;
    above 1 they are `N_BEST_OUTPUTS`. Values outside their ranges fail the
    graph's own checks (`tf.debugging.Assert`, INVALID_ARGUMENT) with a
    message naming the input and its range, on every path that runs the
    graph.

    An empty batch (`[0]` strings) returns empty outputs (`[0]`, `[0, 0]`,
    `[0, 0, 0]`) instead of failing. An input with no token (empty,
    blank) translates to `""` with score 0 and length 0; non-UTF-8 bytes are
    replaced by U+FFFD before tokenization; a source longer than the model's
    maximum source length (`source_vectorizer.max_length`) is truncated to
    it.

    Args:
        translator: a `Translator`.
        options: a `SignatureOptions` (the `beam_search` beam width and
            length penalty, `max_beam_width`, `decoding_inputs`,
            `jit_compile`; see there). Defaults to `SignatureOptions()`.
        **settings: `SignatureOptions` fields by name (e.g. `beam_width=3`),
            replacing `options`' values.
    """

    def __init__(
        self, translator: Translator, options: SignatureOptions | None = None, **settings: Any
    ):
        options = SignatureOptions.of(options, **settings)
        self.options = options
        self.translator = translator
        self.beam_width = options.beam_width
        self.length_penalty = options.length_penalty
        self.jit_compile = bool(options.jit_compile)
        self.max_beam_width = options.beam_cap
        self.decoding_inputs = bool(options.decoding_inputs)
        self.greedy_strategy = translator.strategy(beam_width=1)
        self.beam_strategy = translator.strategy(options.beam_search)
        self.sample_strategy = translator.strategy(sample=True)

    def endpoints(
        self,
    ) -> dict[str, tuple[Callable[..., dict[str, tf.Tensor]], list[tf.TensorSpec]]]:
        """Signature name -> `(fn, input_signature)`, `serving_default` first
        (`score_translation` when `options.score_signature`)."""
        endpoints = {
            SERVING_DEFAULT: (self.translate_function(self.greedy_strategy), [_TEXT_SPEC]),
            BEAM_SEARCH: (self.translate_function(self.beam_strategy), [_TEXT_SPEC]),
        }
        if self.decoding_inputs:
            endpoints[SEARCH] = (
                self.search_function(),
                [_TEXT_SPEC, *scalar_specs(SEARCH_INPUTS), *tensor_specs(STEERING_INPUTS)],
            )
            endpoints[SAMPLE] = (
                self.sample_function(),
                [_TEXT_SPEC, *scalar_specs(SAMPLE_INPUTS)],
            )
            endpoints[STEERED_BEAM_SEARCH] = (
                self.steered_beam_function(),
                [_TEXT_SPEC, *tensor_specs(STEERED_BEAM_SEARCH_INPUTS)],
            )
        if self.options.score_signature:
            endpoints[SCORE_TRANSLATION] = (self.score, [_TEXT_SPEC, _TRANSLATION_SPEC])
        return endpoints

    def input_defaults(self, signature_name: str) -> dict[str, int | float]:
        """The default of each decoding input of a signature (`{}` without them)."""
        if not self.decoding_inputs:
            return {}
        limit = self.translator.max_output_length
        defaults = DecodingOptions.DEFAULTS
        if signature_name == SAMPLE:
            return {
                "temperature": defaults["temperature"],
                "top_k": 0,
                "top_p": 1.0,
                "seed": -1,
                "max_output_length": limit,
            }
        if signature_name == SEARCH:
            return {
                "beam_width": defaults["beam_width"],
                "n_best": 1,
                "length_penalty": float(self.length_penalty),
                "max_output_length": limit,
            }
        return {}

    def input_ranges(self, signature_name: str) -> dict[str, str]:
        """Each decoding input's valid values, as the graph's checks state them."""
        limit = self.translator.max_output_length
        if not self.decoding_inputs:
            return {}
        if signature_name == SAMPLE:
            return {
                "temperature": "> 0, finite",
                "top_k": ">= 0 (0: the whole vocabulary)",
                "top_p": "(0, 1] (1: no cut)",
                "seed": ">= -1 (-1: a new seed for each request)",
                "max_output_length": f"[1, {limit}]",
            }
        if signature_name == SEARCH:
            return {
                "beam_width": f"[1, {self.max_beam_width}]",
                "n_best": "[1, beam_width]",
                "length_penalty": ">= 0, finite",
                "max_output_length": f"[1, {limit}]",
            }
        return {}

    def translate_function(self, strategy) -> Callable[[tf.Tensor], dict[str, tf.Tensor]]:
        """`text -> outputs` for one strategy, guarded against an empty batch."""
        if self.jit_compile:
            strategy = CompiledStrategy(strategy)

        def translate(text):
            text = tf.reshape(tf.convert_to_tensor(text, tf.string), [-1])
            return tf.cond(
                tf.size(text) > 0,
                lambda: self.translator.translate(text, strategy),
                lambda: empty_outputs(TRANSLATION_OUTPUTS),
            )

        return translate

    def search_function(self) -> Callable[..., dict[str, tf.Tensor]]:
        """The `search` function with its decoding inputs.

        `text, beam_width, n_best, length_penalty, max_output_length ->
        outputs`, the decoding inputs defaulting to `input_defaults`.
        """
        translator = self.translator
        limit, cap = translator.max_output_length, self.max_beam_width
        greedy, beam = self.greedy_strategy, self.beam_strategy
        if self.jit_compile:
            greedy, beam = CompiledStrategy(greedy), CompiledStrategy(beam)
        defaults = self._default_constants(SEARCH)
        with tf.init_scope():
            no_prefix, no_next_words = tf.constant([], tf.string), tf.constant(0, tf.int32)

        def translate(
            text,
            beam_width=defaults[0],
            n_best=defaults[1],
            length_penalty=defaults[2],
            max_output_length=defaults[3],
            prefix=no_prefix,
            next_words=no_next_words,
            constraints=no_prefix,  # [] too: none
        ):
            text = tf.reshape(text, [-1])
            prefix = tf.reshape(prefix, [-1])
            constraints = tf.reshape(constraints, [-1])
            checks = [
                check_one_per_text("constraints", constraints, text),
                check_one_per_text("prefix", prefix, text),
                check(next_words >= 0, "`next_words` must be >= 0. Received:", [next_words]),
                check_range("beam_width", beam_width, 1, cap),
                check(
                    tf.logical_and(n_best >= 1, n_best <= beam_width),
                    "`n_best` must be in [1, beam_width]. Received n_best, beam_width:",
                    [n_best, beam_width],
                ),
                check(
                    tf.logical_and(tf.math.is_finite(length_penalty), length_penalty >= 0.0),
                    "`length_penalty` must be a finite number >= 0. Received:",
                    [length_penalty],
                ),
                check_range("max_output_length", max_output_length, 1, limit),
            ]
            with tf.control_dependencies(checks):
                text = tf.reshape(tf.identity(text), [-1])
            prefix = tf.cond(
                tf.equal(tf.size(prefix), 0), lambda: tf.fill(tf.shape(text), ""), lambda: prefix
            )
            steering = {"prefixes": prefix, "next_words": next_words}
            phrases, constrained = split_phrases(constraints)

            def run_greedy():
                return translator.translate(text, greedy, max_steps=max_output_length, **steering)

            def run_beam():
                outputs = self._steered_beam(
                    text,
                    beam,
                    phrases,
                    constrained,
                    **steering,
                    beam_width=beam_width,
                    length_penalty=length_penalty,
                    n_best=n_best,
                    max_steps=max_output_length,
                )
                return tf.cond(n_best > 1, lambda: outputs, lambda: best_of(outputs))

            return tf.cond(
                tf.size(text) > 0,
                lambda: tf.cond(tf.logical_or(constrained, beam_width > 1), run_beam, run_greedy),
                lambda: tf.cond(
                    n_best > 1,
                    lambda: empty_outputs({**N_BEST_OUTPUTS, **STEERING_OUTPUTS}),
                    lambda: empty_outputs({**TRANSLATION_OUTPUTS, **STEERING_OUTPUTS}),
                ),
            )

        return translate

    def steered_beam_function(self) -> Callable[..., dict[str, tf.Tensor]]:
        """The `steered_beam_search` function: `text, prefix, constraints -> outputs`.

        Beam search at the export's beam width and length penalty, as
        `beam_search`, each row starting with its `prefix` and containing its
        `constraints` (`""`: none). Every input is `[batch]` and required;
        a batch without any prefix or phrase runs `beam_search`'s decoding.
        """
        beam = self.beam_strategy
        if self.jit_compile:
            beam = CompiledStrategy(beam)

        def steered_beam_search(text, prefix, constraints):
            text, prefix, constraints = (tf.reshape(t, [-1]) for t in (text, prefix, constraints))
            checks = [
                check_one_per_text(name, value, text, or_none=False)
                for name, value in (("prefix", prefix), ("constraints", constraints))
            ]
            with tf.control_dependencies(checks):
                text = tf.identity(text)
            phrases, constrained = split_phrases(constraints)
            steered = tf.logical_or(constrained, tf.reduce_any(tf.strings.length(prefix) > 0))

            def run_steered():
                outputs = self._steered_beam(text, beam, phrases, constrained, prefixes=prefix)
                return {key: outputs[key] for key in TRANSLATION_OUTPUTS}

            return tf.cond(
                tf.size(text) > 0,
                lambda: tf.cond(
                    steered, run_steered, lambda: self.translator.translate(text, beam)
                ),
                lambda: empty_outputs(TRANSLATION_OUTPUTS),
            )

        return steered_beam_search

    def _steered_beam(self, text, strategy, phrases, constrained, **options):
        """`Translator.translate(text, strategy, **options)`, with the constraints `phrases`
        (`[batch, C]`, `""`: none) when `constrained` (any row holds a phrase)."""
        translate = functools.partial(self.translator.translate, text, strategy, **options)
        return tf.cond(constrained, lambda: translate(constraints=phrases), translate)

    def sample_function(self) -> Callable[..., dict[str, tf.Tensor]]:
        """The `sample` function: `text, temperature, top_k, top_p, seed, max_output_length`."""
        translator = self.translator
        limit = translator.max_output_length
        sampler = self.sample_strategy
        if self.jit_compile:
            sampler = CompiledStrategy(sampler)
        defaults = self._default_constants(SAMPLE)

        def sample(
            text,
            temperature=defaults[0],
            top_k=defaults[1],
            top_p=defaults[2],
            seed=defaults[3],
            max_output_length=defaults[4],
        ):
            checks = [
                check(
                    tf.logical_and(tf.math.is_finite(temperature), temperature > 0.0),
                    "`temperature` must be a finite number > 0. Received:",
                    [temperature],
                ),
                check(
                    top_k >= 0, "`top_k` must be >= 0 (0: the whole vocabulary). Received:", [top_k]
                ),
                check(
                    tf.logical_and(top_p > 0.0, top_p <= 1.0),
                    "`top_p` must be in (0, 1]. Received:",
                    [top_p],
                ),
                check(
                    seed >= -1, "`seed` must be >= -1 (-1: drawn per request). Received:", [seed]
                ),
                check_range("max_output_length", max_output_length, 1, limit),
            ]
            with tf.control_dependencies(checks):
                text = tf.reshape(tf.identity(text), [-1])
            return tf.cond(
                tf.size(text) > 0,
                lambda: translator.translate(
                    text,
                    sampler,
                    temperature=temperature,
                    top_k=top_k,
                    top_p=top_p,
                    seed=seed,
                    max_steps=max_output_length,
                ),
                lambda: empty_outputs(TRANSLATION_OUTPUTS),
            )

        return sample

    def _default_constants(self, signature_name: str) -> tuple[tf.Tensor, ...]:
        """`input_defaults(signature_name)` as constants, in the contract's input order."""
        dtypes = DECODING_INPUTS[signature_name]
        with tf.init_scope():  # the defaults are constants, whatever the caller's context
            return tuple(
                tf.constant(value, DTYPES[dtypes[alias]])
                for alias, value in self.input_defaults(signature_name).items()
            )

    def score(self, text, translation) -> dict[str, tf.Tensor]:
        """The `score_translation` function (see the class docstring)."""
        return teacher_forced_scores(self.translator, text, translation)
