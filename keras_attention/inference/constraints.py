"""Lexical constraints for a `Translator`: phrases tokenized as targets and checked.

`Translator.translate(constraints=...)` takes a string tensor `(batch_size, C)`, each
row the phrases its translation must contain (`""` for none); `encode_constraints`
turns it into the target ids `BeamSearch` takes (`keras_attention.decoding.
lexical_constraints`), inside the graph, with checks that name the phrase at fault: a
phrase that tokenizes to nothing or to a token the target vocabulary lacks (`[UNK]`), or a
sentence whose phrases hold more tokens than a translation can carry
(`constraint_token_limit`: `max_output_length - 1`). The search needs a `BeamSearch`
(width 1 included: `as_beam_search`); a row without phrases decodes exactly as it
would without constraints. With a shortlist, the phrases' ids join the candidates and
each row's allowed ids (`allow_constraints`).
"""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow as tf


def constraint_token_limit(max_output_length: int) -> int:
    """The most constraint tokens one sentence may carry: its output must also hold `[END]`."""
    return max_output_length - 1


def pad_phrases(constraints: Sequence[Sequence[str]] | None, count: int) -> list[list[str]]:
    """`count` lists of phrases, padded with `""` to the same length (at least 1)."""
    if constraints is None:
        return [[""] for _ in range(count)]
    if len(constraints) != count:
        raise ValueError(
            f"`constraints` must hold one list of phrases per text. Received: {len(constraints)} "
            f"for {count} texts"
        )
    rows = [
        [p for p in row if p.strip()] if not isinstance(row, str) else [row] for row in constraints
    ]
    width = max([len(row) for row in rows] + [1])
    return [row + [""] * (width - len(row)) for row in rows]


def _assert(condition, message, data):
    return tf.debugging.Assert(condition, [tf.constant(message), *data], summarize=8)


def encode_constraints(target_vectorizer, constraints, batch_size, max_output_length) -> tf.Tensor:
    """Target ids `(batch_size, C, L)` of the phrases, padded with the target's pad id.

    Each phrase is tokenized as a training target (no start or end token).
    Raises (`InvalidArgumentError` in a graph) naming the phrase when a
    non-blank phrase has no token or a token the vocabulary lacks (`[UNK]`:
    the output would hold `[UNK]`, not the word), and naming the limit when a sentence's phrases hold more
    tokens than a translation can (`constraint_token_limit`).
    """
    target = target_vectorizer
    constraints = tf.convert_to_tensor(constraints, dtype=tf.string)
    constraints = tf.reshape(constraints, [batch_size, -1])
    width = tf.shape(constraints)[1]
    flat = tf.reshape(constraints, [-1])
    ids = target.encode(flat, ragged=True)
    lengths = tf.cast(ids.row_lengths(), tf.int32)
    blank = tf.equal(tf.strings.length(tf.strings.strip(flat)), 0)
    unknown = tf.reduce_any(tf.equal(ids, target.unk_id), axis=1)
    bad = tf.logical_and(tf.logical_not(blank), tf.logical_or(lengths == 0, unknown))
    limit = constraint_token_limit(max_output_length)
    totals = tf.reduce_sum(tf.reshape(lengths, [batch_size, -1]), axis=1)
    checks = [
        _assert(
            tf.logical_not(tf.reduce_any(bad)),
            "A constraint tokenizes to nothing or to a token the target vocabulary lacks "
            "([UNK]), so no translation can contain it. Received:",
            [tf.boolean_mask(flat, bad)],
        ),
        _assert(
            tf.reduce_all(totals <= limit),
            f"A sentence's constraints hold more tokens than a translation can carry "
            f"(at most {limit}, max_output_length - 1). Received token counts:",
            [totals],
        ),
    ]
    with tf.control_dependencies(checks):
        dense = tf.cast(ids.to_tensor(default_value=target.pad_id), tf.int32)
    length = tf.maximum(tf.shape(dense)[1], 1)
    dense = tf.pad(dense, [[0, 0], [0, length - tf.shape(dense)[1]]], constant_values=target.pad_id)
    return tf.reshape(dense, [batch_size, width, length])


def check_phrases(
    target_vectorizer, constraints: Sequence[Sequence[str]], max_output_length: int
) -> None:
    """Raises `ValueError` naming each phrase no translation can contain, or the limit.

    The eager twin of `encode_constraints`' checks, for Python callers
    (`translate_all`, the command line).
    """
    target = target_vectorizer
    limit = constraint_token_limit(max_output_length)
    for row in constraints:
        phrases = [p for p in ([row] if isinstance(row, str) else row) if p.strip()]
        if not phrases:
            continue
        ids = target.encode(tf.constant(phrases), ragged=True)
        tokens = target.tokenize(tf.constant(phrases)).to_list()
        for phrase, phrase_ids, words in zip(phrases, ids.to_list(), tokens, strict=True):
            if not phrase_ids:
                raise ValueError(
                    f"The constraint {phrase!r} tokenizes to nothing, so no translation can "
                    "contain it"
                )
            missing = [
                w.decode() for w, i in zip(words, phrase_ids, strict=False) if i == target.unk_id
            ]
            if missing or target.unk_id in phrase_ids:
                raise ValueError(
                    f"The constraint {phrase!r} has a token the target vocabulary lacks "
                    f"({', '.join(map(repr, missing)) or '[UNK]'}), so no translation can "
                    "contain it"
                )
        total = sum(len(i) for i in ids.to_list())
        if total > limit:
            raise ValueError(
                f"The constraints {phrases!r} hold {total} target tokens, more than a translation "
                f"can carry (at most {limit}: max_output_length - 1)"
            )


def as_beam_search(strategy, length_penalty: float):
    """`strategy`, or for a `GreedySearch` the `BeamSearch` of width 1 that decodes alike
    and takes constraints."""
    from keras_attention.decoding import BeamSearch, GreedySearch

    if not isinstance(strategy, GreedySearch):
        return strategy
    return BeamSearch(
        beam_width=1,
        length_penalty=length_penalty,
        max_steps=strategy.max_steps,
        end_id=strategy.end_id,
        pad_id=strategy.pad_id,
        drop_finished=strategy.drop_finished,
    )


def check_beam_search(strategy) -> None:
    """Raises `ValueError` unless `strategy` (or the one it compiles) is a `BeamSearch`."""
    from keras_attention.decoding import BeamSearch

    if not isinstance(getattr(strategy, "strategy", strategy), BeamSearch):
        raise ValueError(
            "`constraints` need a BeamSearch strategy (beam_width=1 is allowed). "
            f"Received: {strategy!r}"
        )


def allow_constraints(allowed, candidates, constraint_ids) -> tf.Tensor:
    """A shortlist's per-row `allowed` `(batch, C)` with each row's constraint ids added."""
    batch_size = tf.shape(constraint_ids)[0]
    ids = tf.reshape(constraint_ids, [batch_size, 1, -1])
    hit = tf.reduce_any(tf.equal(candidates[tf.newaxis, :, tf.newaxis], ids), axis=-1)
    return tf.logical_or(allowed, hit)


def to_positions(candidates, ids) -> tf.Tensor:
    """Target `ids` (any shape, all among `candidates`) as positions in `candidates`."""
    flat = tf.reshape(ids, [1, -1])
    positions = tf.searchsorted(candidates[tf.newaxis], flat)
    return tf.reshape(tf.cast(positions, tf.int32), tf.shape(ids))


def steered_batches(translate_fn, prefixes, phrases, order, batch_size):
    """`translate(texts, batch_index)` for `Translator.translate_all` with prefixes, next
    words or constraints: each batch of the texts in `order` with its rows' prefixes and
    `phrases` (`pad_phrases`' rows, one per text), to `translate_fn(texts, prefixes,
    phrases)` (one `tf.function` for every batch, `Translator.steered_function`)."""

    def translate(texts, batch_index):
        rows = order[batch_index * batch_size : (batch_index + 1) * batch_size]
        batch_prefixes = [prefixes[i] if prefixes else "" for i in rows]
        return translate_fn(
            texts,
            tf.constant(batch_prefixes, tf.string),
            tf.constant([phrases[i] for i in rows], tf.string),
        )

    return translate
