"""`TranslationSignatures`: the serving functions of a translator export."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from keras_attention.translator import Translator
from keras_attention_client.wire.contract import (
    BEAM_SEARCH,
    DEFAULT_SIGNATURE,
    SCORE_OUTPUTS,
    SCORE_TRANSLATION,
    TEXT_INPUT,
    TRANSLATION_INPUT,
    TRANSLATION_OUTPUTS,
)

# The contract lives with the client, which parses what these signatures return.
INPUT_KEY = TEXT_INPUT
TRANSLATION_KEY = TRANSLATION_INPUT
SERVING_DEFAULT = DEFAULT_SIGNATURE

_TEXT_SPEC = tf.TensorSpec([None], tf.string, name=INPUT_KEY)
_TRANSLATION_SPEC = tf.TensorSpec([None], tf.string, name=TRANSLATION_KEY)


class _CompiledStrategy:
    """Runs a decoding strategy's `tf.while_loop` as one XLA cluster.

    Wraps `strategy(next_fn, state, start_ids)` in a
    `tf.function(jit_compile=True)`; the text processing around it (tf-text,
    lookups, string ops) stays outside, since XLA cannot compile string ops.
    In a SavedModel this becomes a call marked `_XlaMustCompile`, which
    TensorFlow Serving on CPU runs only with
    `--xla_cpu_compilation_enabled=true`.

    Args:
        strategy: a `GreedySearch` or `BeamSearch`.
    """

    def __init__(self, strategy):
        self.strategy = strategy

    def __call__(self, next_fn, initial_state, start_ids):
        decode = tf.function(
            lambda state, ids: self.strategy(next_fn, state, ids),
            jit_compile=True,
            autograph=False,
        )
        return decode(initial_state, start_ids)

    def get_config(self) -> dict[str, Any]:
        return self.strategy.get_config()


class TranslationSignatures:
    """The functions behind each signature of a translator export.

    Every function takes `[batch]` strings and returns a dict of dense
    tensors, all TensorFlow ops (core plus tf-text), so it runs inside a
    SavedModel served by TensorFlow Serving:

    - `serving_default`: `Translator.translate` with greedy search.
    - `beam_search`: `Translator.translate` with beam search (`beam_width`,
      `length_penalty` fixed here).
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

    An empty batch (`[0]` strings) returns empty outputs (`[0]`, `[0, 0]`,
    `[0, 0, 0]`) instead of failing. An input with no token (empty,
    blank) translates to `""` with score 0 and length 0; non-UTF-8 bytes are
    replaced by U+FFFD before tokenization; a source longer than the model's
    maximum source length (`source_vectorizer.max_length`) is truncated to
    it.

    Args:
        translator: a `Translator`.
        beam_width: int >= 2, the `beam_search` beam width.
        length_penalty: float >= 0, the `beam_search` GNMT length penalty.
        jit_compile: bool, whether to compile the decoding loops with XLA
            (see `_CompiledStrategy`).
    """

    def __init__(
        self,
        translator: Translator,
        beam_width: int = 4,
        length_penalty: float = 0.6,
        jit_compile: bool = False,
    ):
        if isinstance(beam_width, bool) or not isinstance(beam_width, int) or beam_width < 2:
            raise ValueError(
                "`beam_width` must be an integer >= 2 (beam width 1 is `serving_default`). "
                f"Received: beam_width={beam_width!r}"
            )
        self.translator = translator
        self.beam_width = beam_width
        self.length_penalty = length_penalty
        self.jit_compile = bool(jit_compile)
        self.greedy_strategy = translator.strategy(1)
        self.beam_strategy = translator.strategy(beam_width, length_penalty)

    def endpoints(
        self, score_signature: bool = True
    ) -> dict[str, tuple[Callable[..., dict[str, tf.Tensor]], list[tf.TensorSpec]]]:
        """Signature name -> `(fn, input_signature)`, `serving_default` first."""
        endpoints = {
            SERVING_DEFAULT: (self.translate_function(self.greedy_strategy), [_TEXT_SPEC]),
            BEAM_SEARCH: (self.translate_function(self.beam_strategy), [_TEXT_SPEC]),
        }
        if score_signature:
            endpoints[SCORE_TRANSLATION] = (self.score, [_TEXT_SPEC, _TRANSLATION_SPEC])
        return endpoints

    def translate_function(self, strategy) -> Callable[[tf.Tensor], dict[str, tf.Tensor]]:
        """`text -> outputs` for one strategy, guarded against an empty batch."""
        if self.jit_compile:
            strategy = _CompiledStrategy(strategy)

        def translate(text):
            text = tf.reshape(tf.convert_to_tensor(text, tf.string), [-1])
            return tf.cond(
                tf.size(text) > 0,
                lambda: self.translator.translate(text, strategy),
                lambda: _empty(TRANSLATION_OUTPUTS),
            )

        return translate

    def score(self, text, translation) -> dict[str, tf.Tensor]:
        """The `score_translation` function (see the class docstring)."""
        text = tf.reshape(tf.convert_to_tensor(text, tf.string), [-1])
        translation = tf.reshape(tf.convert_to_tensor(translation, tf.string), [-1])
        same_size = tf.debugging.assert_equal(
            tf.size(text),
            tf.size(translation),
            message="`text` and `translation` must have the same batch size",
        )
        # An explicit dependency: on the Session path nothing else orders the
        # check before the ops that would fail on mismatched batches.
        with tf.control_dependencies([same_size]):
            text, translation = tf.identity(text), tf.identity(translation)
        return tf.cond(
            tf.size(text) > 0,
            lambda: self._score(text, translation),
            lambda: _empty(SCORE_OUTPUTS),
        )

    def _score(self, text, translation):
        translator = self.translator
        source_ids, source_tokens = translator.encode_source(text)
        target = translator.target_vectorizer
        target_ids = target.encode(translation, add_start=True, add_end=True)
        target_in, target_out = target_ids[:, :-1], target_ids[:, 1:]
        logits, attention = translator.model.call_with_attention(
            (source_ids, target_in), training=False
        )
        log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32))
        # The tokens and [END]; nothing for a source with no token, which
        # `translate` turns into "" with score 0.
        has_tokens = tf.reduce_any(tf.not_equal(source_ids, 0), axis=1)
        scored = tf.logical_and(tf.not_equal(target_out, target.pad_id), has_tokens[:, tf.newaxis])
        token_scores = tf.gather(log_probs, target_out, batch_dims=2)
        token_scores = tf.where(scored, token_scores, 0.0)
        is_token = tf.logical_and(scored, tf.not_equal(target_out, target.end_id))
        tokens = tf.where(is_token, target.ids_to_tokens(target_out), "")
        attention = tf.where(scored[:, :, tf.newaxis], tf.cast(attention, tf.float32), 0.0)
        return {
            "score": tf.reduce_sum(token_scores, axis=1),
            "length": tf.reduce_sum(tf.cast(is_token, tf.int32), axis=1),
            "tokens": tokens[:, :-1],
            "token_scores": token_scores,
            "source_tokens": source_tokens,
            "attention": attention,
        }


def _empty(outputs: dict[str, tuple[str, list[int]]]) -> dict[str, tf.Tensor]:
    dtypes = {"DT_STRING": tf.string, "DT_FLOAT": tf.float32, "DT_INT32": tf.int32}
    return {
        key: tf.zeros([0] * len(shape), dtypes[dtype])
        if dtype != "DT_STRING"
        else tf.fill([0] * len(shape), "")
        for key, (dtype, shape) in outputs.items()
    }
