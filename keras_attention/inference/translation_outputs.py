"""What `Translator.translate` returns for a `DecodeResult`, and `translate_all`'s
`Translation`s."""

from __future__ import annotations

import tensorflow as tf

from keras_attention.text.tokenization import detokenize
from keras_attention_client.wire.translation import Translation

OUTPUT_KEYS = (
    "translation",
    "score",
    "length",
    "tokens",
    "source_tokens",
    "attention",
    "token_scores",
    "confidence",
)
"""The outputs of `Translator.translate` (with steering, `next_words` and
`next_word_scores` too), dense tensors:

- `translation` string `(batch_size,)`;
- `score` float32 `(batch_size,)`, the log-probability;
- `length` int32 `(batch_size,)`, tokens before `[END]`;
- `tokens` string `(batch_size, T_out)`;
- `source_tokens` string `(batch_size, T_in)`, padded with `""`;
- `attention` float32 `(batch_size, T_out, T_in)`;
- `token_scores` float32 `(batch_size, T_out)`: the log-probability of each
  output token, at position `length` the end token's when one was emitted, 0
  after (a row sums to `score`);
- `confidence` float32 `(batch_size,)`: the geometric mean of the scored
  tokens' probabilities, `exp(score / n)` with `n` the tokens scored
  (`length`, plus one for the end token), in `[0, 1]`.

Inputs with no token (empty or blank strings) translate to `""` with score 0,
length 0 and confidence 1. With n-best lists, every output but `source_tokens`
has an n-best axis after the batch axis."""


def resolve_replace_unknown(replace_unknown: bool | None, target_vectorizer) -> bool:
    """`Translator`'s `replace_unknown` resolved: None means on where the model may emit
    `[UNK]` (a word target vocabulary), off where it never does (subwords).

    Raises:
        ValueError: `replace_unknown` is not a bool or None, or is True for a target
            vocabulary whose `[UNK]` is never emitted.
    """
    if not isinstance(replace_unknown, (bool, type(None))):
        raise ValueError(f"`replace_unknown` must be a bool or None. Received: {replace_unknown!r}")
    emits_unknown = target_vectorizer.unk_id not in target_vectorizer.forbidden_output_ids
    if replace_unknown and not emits_unknown:
        raise ValueError(
            "`replace_unknown` needs a target vocabulary whose [UNK] the model may emit "
            f"(a word vocabulary); {type(target_vectorizer).__name__} never emits it"
        )
    return emits_unknown if replace_unknown is None else replace_unknown


def single_outputs(
    target_vectorizer, replace_unknown: bool, result, has_tokens, source_tokens
) -> dict[str, tf.Tensor]:
    """`Translator.translate`'s outputs (but `source_tokens`) of a `DecodeResult` without an
    n-best axis, its tokens read with `target_vectorizer` (each `[UNK]` replaced by the
    most attended source token with `replace_unknown`)."""
    lengths = tf.where(has_tokens, result.lengths, 0)
    steps = tf.shape(result.tokens)[1]
    keep = tf.sequence_mask(lengths, steps)
    token_ids = tf.where(keep, result.tokens, target_vectorizer.pad_id)
    tokens = tf.where(keep, target_vectorizer.ids_to_tokens(token_ids), "")
    attention = tf.where(keep[:, :, tf.newaxis], result.attention, 0.0)
    scores = tf.where(has_tokens, result.scores, 0.0)
    if result.token_scores is None:
        token_scores = tf.zeros(tf.shape(result.tokens), tf.float32)
    else:
        token_scores = tf.where(has_tokens[:, tf.newaxis], result.token_scores, 0.0)
    translation = target_vectorizer.decode(token_ids)
    if replace_unknown:
        unknown = tf.logical_and(keep, tf.equal(token_ids, target_vectorizer.unk_id))
        attended = tf.argmax(result.attention, axis=-1, output_type=tf.int32)
        copied = tf.gather(source_tokens, attended, batch_dims=1)
        tokens = tf.where(unknown, copied, tokens)
        translation = tf.where(
            tf.reduce_any(unknown, axis=1),
            detokenize(tokens, spacing=target_vectorizer.spacing),
            translation,
        )
    return {
        "translation": translation,
        "score": scores,
        "length": lengths,
        "tokens": tokens,
        "attention": attention,
        "token_scores": token_scores,
        "confidence": sentence_confidence(scores, lengths, steps),
    }


def n_best_outputs(
    target_vectorizer, replace_unknown: bool, result, has_tokens, source_tokens
) -> dict[str, tf.Tensor]:
    """`translate`'s outputs with an n-best axis: the rows flattened, processed
    (`single_outputs`), reshaped."""
    batch_size, n_best = tf.shape(result.tokens)[0], tf.shape(result.tokens)[1]
    steps, source_length = tf.shape(result.tokens)[2], tf.shape(result.attention)[3]
    flat = type(result)(
        tokens=tf.reshape(result.tokens, [-1, steps]),
        scores=tf.reshape(result.scores, [-1]),
        lengths=tf.reshape(result.lengths, [-1]),
        attention=tf.reshape(result.attention, [-1, steps, source_length]),
        token_scores=None
        if result.token_scores is None
        else tf.reshape(result.token_scores, [-1, steps]),
    )
    outputs = single_outputs(
        target_vectorizer,
        replace_unknown,
        flat,
        tf.repeat(has_tokens, n_best),
        tf.repeat(source_tokens, n_best, axis=0),
    )
    shaped = {
        "translation": [batch_size, n_best],
        "score": [batch_size, n_best],
        "length": [batch_size, n_best],
        "confidence": [batch_size, n_best],
        "tokens": [batch_size, n_best, steps],
        "token_scores": [batch_size, n_best, steps],
        "attention": [batch_size, n_best, steps, source_length],
    }
    outputs = {key: tf.reshape(outputs[key], shape) for key, shape in shaped.items()}
    outputs["source_tokens"] = source_tokens
    return {key: outputs[key] for key in OUTPUT_KEYS}


def sentence_confidence(scores, lengths, steps):
    """`exp(scores / n)`: the geometric mean of a translation's token probabilities.

    `n` counts the scored tokens: the `lengths` tokens, plus the end token
    when the search emitted one (a translation shorter than the `steps` run).
    A translation that scored nothing (an empty input) has confidence 1.

    Args:
        scores: float32 `(batch,)`, sums of log-probabilities.
        lengths: int32 `(batch,)`, tokens before the end token.
        steps: int32 scalar, the decoding steps run.

    Returns:
        float32 `(batch,)` in `[0, 1]`.
    """
    scored = lengths + tf.cast(lengths < steps, lengths.dtype)
    return tf.exp(scores / tf.cast(tf.maximum(scored, 1), tf.float32))


def results_in_order(translate, texts, order, batch_size: int, progress: bool) -> list:
    """`translate_all`'s `Translation`s (lists of them with an n-best axis), in input
    order, from `translate(batch, batch_index)` run over the texts in `order`,
    `batch_size` at a time (a progress bar with `progress`).

    The outputs carry the translation contract's aliases, so they are parsed as a
    server's answer is (`Translation.from_outputs`, `from_n_best_outputs`)."""
    import keras

    results: list = [None] * len(texts)
    bar = keras.utils.Progbar(len(texts), unit_name="sentence") if progress else None
    for batch_index, start in enumerate(range(0, len(order), batch_size)):
        indices = order[start : start + batch_size]
        batch = tf.constant([texts[i] for i in indices])
        outputs = {k: v.numpy() for k, v in translate(batch, batch_index).items()}
        if outputs["translation"].ndim == 2:
            translations = Translation.from_n_best_outputs(outputs)
        else:
            translations = Translation.from_outputs(outputs)
        for index, translation in zip(indices, translations, strict=True):
            results[index] = translation
        if bar is not None:
            bar.add(len(indices))
    return results
