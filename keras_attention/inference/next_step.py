"""The next-step functions a `Translator` composes around its model's, and their checks.

Each wraps a `next_fn(step, token_ids, state) -> (logits, state, attention)` (the
contract of `keras_attention.decoding.next_fn`) and keeps what it needs per row in the
state, so that beam search's tiling and the dropping of finished rows carry it along:

- `own_candidates`: a shortlist's row keeps to its own candidates;
- `forced_prefix`: a row's first tokens are given.
"""

from __future__ import annotations

import math

import tensorflow as tf


def is_zero(value) -> bool:
    """Whether `value` is the Python int 0 (a tensor is never: it may be anything)."""
    return not tf.is_tensor(value) and int(value) == 0


def forced_prefix(next_fn):
    """`next_fn` over a state `(inner_state, forced, lengths)`: at step `t < lengths[row]`
    the row's only possible token is `forced[row, t]` (logit 0, every other the lowest),
    so it is emitted with log-probability 0, whatever the search."""

    def forced_next_fn(step, token_ids, state):
        inner, forced, lengths = state
        logits, inner, attention = next_fn(step, token_ids, inner)
        column = tf.gather(forced, tf.minimum(step, tf.shape(forced)[1] - 1), axis=1)
        is_forced = tf.equal(tf.range(tf.shape(logits)[1])[tf.newaxis, :], column[:, tf.newaxis])
        only_forced = lowest_where(tf.logical_not(is_forced), tf.zeros_like(logits))
        logits = tf.where((step < lengths)[:, tf.newaxis], only_forced, logits)
        return logits, (inner, forced, lengths), attention

    return forced_next_fn


def own_candidates(next_fn):
    """`next_fn` over a state `(model_state, allowed)`: the logits of the candidates a
    row may not emit (`allowed` false, bool `(rows, C)`) at the lowest value."""

    def own_next_fn(step, token_ids, state):
        model_state, allowed = state
        logits, model_state, attention = next_fn(step, token_ids, model_state)
        return lowest_where(tf.logical_not(allowed), logits), (model_state, allowed), attention

    return own_next_fn


def lowest_where(banned, logits):
    """`logits` with the columns where `banned` at the dtype's lowest value (finite: no
    inf - inf in a beam)."""
    return tf.where(banned, tf.constant(logits.dtype.min, logits.dtype), logits)


def check_shortlist(shortlist, model, source_vectorizer, target_vectorizer) -> None:
    """Raises `ValueError` unless `shortlist` fits the vocabularies and the special ids."""
    sizes = (shortlist.source_vocabulary_size, shortlist.target_vocabulary_size)
    expected = (source_vectorizer.vocabulary_size, target_vectorizer.vocabulary_size)
    if sizes != expected:
        raise ValueError(
            f"The shortlist is for vocabularies of {sizes[0]} source and {sizes[1]} target ids, "
            f"but the translator's vectorizers have {expected[0]} and {expected[1]}. "
            "Build it from the same run."
        )
    special = (target_vectorizer.pad_id, target_vectorizer.start_id, target_vectorizer.end_id)
    if max(special) > max(shortlist.special_ids):
        raise ValueError(
            "The shortlist keeps the ids up to "
            f"{max(shortlist.special_ids)} at their own positions, but the target's padding, "
            f"start and end ids are {special}"
        )
    if not hasattr(model, "output_projection"):
        raise ValueError(
            "A shortlist needs a model with `output_projection(ids)` and "
            "`next_logits(..., projection=)`, as `Seq2Seq` has. "
            f"Received: {type(model).__name__}"
        )


def forbidden_mask(target_vectorizer, ids):
    """Whether each of `ids` is one of the target's `forbidden_output_ids`; `None` when it
    has none."""
    forbidden = list(target_vectorizer.forbidden_output_ids)
    if not forbidden:
        return None
    return tf.reduce_any(tf.equal(ids[:, tf.newaxis], tf.constant(forbidden, tf.int32)), axis=1)


def encode_prefixes(target_vectorizer, prefixes, batch_size) -> tuple[tf.Tensor, tf.Tensor]:
    """Target ids `(batch_size, P)` (P >= 1, padded with 0) and lengths `(batch_size,)`
    of the prefixes, tokenized as training targets (no start or end token)."""
    prefixes = tf.reshape(tf.convert_to_tensor(prefixes, dtype=tf.string), [-1])
    with tf.control_dependencies(
        [
            tf.debugging.assert_equal(
                tf.size(prefixes),
                batch_size,
                message="`prefix` must hold one string per `text` (or none)",
            )
        ]
    ):
        prefixes = tf.identity(prefixes)
    prefix_ids = target_vectorizer.encode(prefixes, ragged=True)
    lengths = tf.cast(prefix_ids.row_lengths(), tf.int32)
    prefix_ids = tf.cast(prefix_ids.to_tensor(default_value=target_vectorizer.pad_id), tf.int32)
    width = tf.maximum(tf.shape(prefix_ids)[1], 1)
    prefix_ids = tf.pad(prefix_ids, [[0, 0], [0, width - tf.shape(prefix_ids)[1]]])
    return prefix_ids, lengths


def next_word_outputs(
    model, target_vectorizer, source_ids, prefix_ids, prefix_lengths, k
) -> dict[str, tf.Tensor]:
    """The `k` most probable words after each prefix, by teacher forcing `model` (called
    in the caller's `WeightSlices` scope). `k` may be a scalar tensor (an export's input):
    the teacher-forced pass then runs only where `k > 0`.

    Returns:
        `next_words` string `(batch_size, k)` and `next_word_scores`
        float32 `(batch_size, k)`, their log-probabilities (over the whole
        target vocabulary, the forbidden ids, padding and start excluded),
        most probable first; `(batch_size, 0)` for `k` 0.
    """
    target = target_vectorizer

    def none():
        batch_size = tf.shape(prefix_ids)[0]
        return {
            "next_words": tf.fill([batch_size, 0], ""),
            "next_word_scores": tf.zeros([batch_size, 0], tf.float32),
        }

    def asked():
        start = tf.fill([tf.shape(prefix_ids)[0], 1], tf.constant(target.start_id, tf.int32))
        logits, _ = model.call_with_attention(
            (source_ids, tf.concat([start, prefix_ids], axis=1)), training=False
        )
        logits = tf.gather(tf.cast(logits, tf.float32), prefix_lengths, batch_dims=1)
        ids = tf.range(target.vocabulary_size)
        never = tf.logical_or(tf.equal(ids, target.pad_id), tf.equal(ids, target.start_id))
        banned = forbidden_mask(target, ids)
        if banned is not None:
            never = tf.logical_or(never, banned)
        log_probs = tf.nn.log_softmax(tf.where(never, -math.inf, logits), axis=-1)
        size = target.vocabulary_size
        top_k = tf.minimum(k, size) if tf.is_tensor(k) else min(int(k), size)
        scores, top = tf.math.top_k(log_probs, k=top_k)
        return {"next_words": target.ids_to_tokens(top), "next_word_scores": scores}

    if tf.is_tensor(k):  # an export's input: the pass runs only when asked
        return tf.cond(k > 0, asked, none)
    return asked() if k else none()
