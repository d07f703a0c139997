"""`teacher_forced_scores`: the `score_translation` signature's teacher-forced scores."""

from __future__ import annotations

import tensorflow as tf

from keras_attention.export.signature_tensors import empty_outputs
from keras_attention.inference.translator import Translator
from keras_attention_client.wire.contract import SCORE_OUTPUTS


def teacher_forced_scores(translator: Translator, text, translation) -> dict[str, tf.Tensor]:
    """The model's log-probability of each given translation, by teacher forcing.

    The `score_translation` signature (`TranslationSignatures`): `text` and
    `translation` `[batch]` strings (the same batch size, else
    INVALID_ARGUMENT) -> `SCORE_OUTPUTS`; an empty batch gives empty outputs.
    """
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
        lambda: _score(translator, text, translation),
        lambda: empty_outputs(SCORE_OUTPUTS),
    )


def _score(translator: Translator, text, translation) -> dict[str, tf.Tensor]:
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
