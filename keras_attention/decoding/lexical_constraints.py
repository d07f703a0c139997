"""Lexically constrained beam search: dynamic beam allocation in fixed shapes.

`BeamSearch` called with `constraints` runs `constrained_step` instead of its
own step: the dynamic beam allocation of Post & Vilar (2018, "Fast Lexically
Constrained Decoding with Dynamic Beam Allocation for Neural Machine
Translation"), as Sockeye implements it, written with core TensorFlow ops on
fixed-shape tensors so that it runs in the one decoding loop, under XLA, and
in a SavedModel served by TensorFlow Serving's stock binary.

Each sentence `b` has `C` constraint phrases, int32 ids `constraints[b, c, :]`
padded with `pad_id` (a phrase with no ids is no constraint). Each hypothesis
carries `progress[b, j, c]`, the tokens of phrase `c` it has met (its length
once met), and `current[b, j]`, the phrase it is in the middle of (-1 for
none). At each step, with `k` hypotheses per sentence:

1. A hypothesis that has not met every phrase may not emit the end token.
2. The candidates are (a) the `k` best of all `k * vocab` continuations (what
   plain beam search keeps), (b) for each hypothesis and phrase the token
   that advances the phrase (its next token when the hypothesis is in the
   middle of it; its first token when the hypothesis is in none and has not
   met it) and (c) each hypothesis' best continuation: `k * (C + 2)` in all,
   duplicates dropped.
3. Each candidate's progress: a token that continues the current phrase
   advances it; any other token while in a phrase undoes that phrase's
   progress; a token, outside a phrase, equal to the first token of a phrase
   not yet met starts it (the first such phrase).
4. Candidates are grouped into banks by the tokens of constraints they have
   met and the `k` slots are dealt round-robin over the banks, most met
   first: the best of each bank, then the second best of each, and so on
   (an empty bank's slots go to the others, as in Sockeye's allocation).
5. The kept hypotheses are ordered by tokens met, then by normalized score,
   so the first has met the most and is the best of those.
6. A sentence is finished once one of its hypotheses that met every phrase
   has ended and none that met every phrase is still running; its other
   hypotheses are dropped (score `-inf`).

A sentence without constraints keeps the `k` candidates of (a) in their
order, which is exactly plain beam search's step: it decodes as it does
without constraints, in the same batch or alone.
"""

from __future__ import annotations

import math

import tensorflow as tf

from keras_attention.decoding.decoding_strategy import write_column

BANNED = -1e30
"""Log-probabilities at or below this are of banned tokens (a logit at the dtype's lowest
value, about -3.4e38 in float32), never candidates."""


def constraint_lengths(constraints: tf.Tensor, pad_id: int) -> tf.Tensor:
    """The number of ids of each phrase: int32 `(batch, C)` of `(batch, C, L)`."""
    return tf.reduce_sum(tf.cast(tf.not_equal(constraints, pad_id), tf.int32), axis=-1)


def prepare_constraints(constraints, pad_id: int) -> tf.Tensor:
    """`constraints` as int32 `(batch, C, L)` with `C, L >= 1` (padded with `pad_id`)."""
    constraints = tf.cast(tf.convert_to_tensor(constraints), tf.int32)
    if constraints.shape.rank is not None and constraints.shape.rank != 3:
        raise ValueError(
            "`constraints` must be int ids of shape (batch_size, num_constraints, length). "
            f"Received: constraints.shape={constraints.shape}"
        )
    shape = tf.shape(constraints)
    return tf.pad(
        constraints,
        [[0, 0], [0, tf.maximum(shape[1], 1) - shape[1]], [0, tf.maximum(shape[2], 1) - shape[2]]],
        constant_values=pad_id,
    )


def initial_search(constraints: tf.Tensor, beam_width) -> dict[str, tf.Tensor]:
    """The search variables the constrained step adds to beam search's."""
    batch_size, num = tf.shape(constraints)[0], tf.shape(constraints)[1]
    return {
        "constraints": constraints,
        "progress": tf.zeros([batch_size, beam_width, num], tf.int32),
        "current": tf.fill([batch_size, beam_width], -1),
    }


def _advance(tokens, progress, current, next_tokens, first_tokens, lengths):
    """The progress of hypotheses after emitting `tokens` (step 3 of the module doc).

    Args:
        tokens: int32 `(batch, N)`, the emitted ids.
        progress: int32 `(batch, N, C)`, the parents' progress.
        current: int32 `(batch, N)`, the parents' current phrase (-1: none).
        next_tokens: int32 `(batch, N, C)`, each phrase's next id for the parent.
        first_tokens: int32 `(batch, 1, C)`, each phrase's first id.
        lengths: int32 `(batch, 1, C)`, each phrase's number of ids.

    Returns:
        `(progress, current)` after the tokens.
    """
    num = tf.shape(progress)[-1]
    in_phrase = current >= 0
    is_current = tf.logical_and(
        tf.one_hot(tf.maximum(current, 0), num, on_value=True, off_value=False),
        in_phrase[..., tf.newaxis],
    )
    wanted = tf.reduce_sum(tf.where(is_current, next_tokens, 0), axis=-1)
    goes_on = tf.logical_and(in_phrase, tf.equal(tokens, wanted))
    progress = tf.where(is_current, tf.where(goes_on[..., tf.newaxis], progress + 1, 0), progress)
    current_done = tf.reduce_any(tf.logical_and(is_current, progress >= lengths), axis=-1)
    current = tf.where(tf.logical_and(goes_on, tf.logical_not(current_done)), current, -1)
    starts = tf.logical_and(
        tf.logical_and(tf.equal(progress, 0), lengths > 0),
        tf.logical_and(
            tf.equal(first_tokens, tokens[..., tf.newaxis]),
            tf.logical_not(goes_on)[..., tf.newaxis],
        ),
    )
    starts_one = tf.reduce_any(starts, axis=-1)
    first = tf.argmax(tf.cast(starts, tf.int32), axis=-1, output_type=tf.int32)
    started = tf.logical_and(
        tf.one_hot(first, num, on_value=True, off_value=False), starts_one[..., tf.newaxis]
    )
    progress += tf.cast(started, tf.int32)
    first_length = tf.reduce_sum(tf.where(started, lengths, 0), axis=-1)
    current = tf.where(tf.logical_and(starts_one, first_length > 1), first, current)
    return progress, current


def _allocate(scores, banks, valid, beam_width, most):
    """The `beam_width` candidates dealt round-robin over the banks (step 4).

    Args:
        scores: float32 `(batch, N)`, the candidates' ranking scores.
        banks: int32 `(batch, N)`, the tokens of constraints each has met.
        valid: bool `(batch, N)`, whether each is a candidate at all.
        beam_width: int or scalar tensor.
        most: int32 scalar, the largest possible bank.

    Returns:
        int32 `(batch, beam_width)`, positions in the candidates, valid ones first.
    """
    count = tf.shape(scores)[1]
    positions = tf.range(count)
    same_bank = tf.logical_and(
        tf.equal(banks[:, :, tf.newaxis], banks[:, tf.newaxis, :]), valid[:, tf.newaxis, :]
    )
    ahead = tf.logical_or(
        scores[:, tf.newaxis, :] > scores[:, :, tf.newaxis],
        tf.logical_and(
            tf.equal(scores[:, tf.newaxis, :], scores[:, :, tf.newaxis]),
            positions[tf.newaxis, :] < positions[:, tf.newaxis],
        ),
    )
    rank = tf.reduce_sum(tf.cast(tf.logical_and(same_bank, ahead), tf.int32), axis=-1)
    key = tf.where(valid, rank * (most + 1) + (most - banks), tf.int32.max)
    return tf.argsort(key, axis=-1, stable=True)[:, :beam_width]


def constrained_step(strategy, step, log_probs, state, attention, search):
    """`BeamSearch.step` with lexical constraints (the module doc's steps)."""
    beam_width = strategy.beam_width
    pad = tf.constant(strategy.pad_id, tf.int32)
    minus_inf = tf.constant(-math.inf, tf.float32)
    finished = search["finished"]
    constraints, progress, current = search["constraints"], search["progress"], search["current"]
    batch_size = tf.shape(finished)[0]
    num, width = tf.shape(constraints)[1], tf.shape(constraints)[2]
    lengths = constraint_lengths(constraints, strategy.pad_id)  # (batch, C)
    total = tf.reduce_sum(lengths, axis=-1)  # (batch,)
    met = tf.reduce_sum(progress, axis=-1)  # (batch, beam)

    vocab_size = tf.shape(log_probs)[-1]
    step_log_probs = tf.reshape(log_probs, [-1, beam_width, vocab_size])
    pad_only = tf.where(tf.equal(tf.range(vocab_size), pad), 0.0, minus_inf)
    step_log_probs = tf.where(finished[..., tf.newaxis], pad_only, step_log_probs)
    # 1. No end token before every phrase is met.
    unmet = tf.logical_and(met < total[:, tf.newaxis], tf.logical_not(finished))
    no_end = tf.logical_and(unmet[..., tf.newaxis], tf.equal(tf.range(vocab_size), strategy.end_id))
    step_log_probs = tf.where(no_end, minus_inf, step_log_probs)
    totals = search["log_probs"][..., tf.newaxis] + step_log_probs  # (batch, beam, vocab)
    candidate_lengths = search["lengths"] + tf.cast(tf.logical_not(finished), tf.int32)
    ranked = strategy.normalize(totals, candidate_lengths[..., tf.newaxis])
    flat_ranked = tf.reshape(ranked, [-1, beam_width * vocab_size])

    # 2. Candidates, as positions in the (beam * vocab) continuations.
    _, top = tf.math.top_k(flat_ranked, beam_width)  # (a)
    beams = tf.range(beam_width)[tf.newaxis, :] * vocab_size
    best = tf.argmax(ranked, axis=-1, output_type=tf.int32) + beams  # (c)
    # Each phrase's next id for each hypothesis (its first once met: unused).
    at = tf.one_hot(tf.minimum(progress, width - 1), width, on_value=True, off_value=False)
    next_tokens = tf.reduce_sum(tf.where(at, constraints[:, tf.newaxis], 0), axis=-1)
    advances = tf.where(
        (current >= 0)[..., tf.newaxis],
        tf.equal(tf.range(num)[tf.newaxis, tf.newaxis, :], current[..., tf.newaxis]),
        tf.logical_and(tf.equal(progress, 0), lengths[:, tf.newaxis] > 0),
    )
    live = tf.logical_and(tf.logical_not(finished), search["log_probs"] > minus_inf)
    advances = tf.logical_and(advances, live[..., tf.newaxis])  # (batch, beam, C)
    phrase = tf.reshape(next_tokens + beams[..., tf.newaxis], [batch_size, -1])  # (b)
    candidates = tf.concat([top, best, phrase], axis=1)
    count = tf.shape(candidates)[1]
    scores = tf.gather(flat_ranked, candidates, batch_dims=1)
    valid = tf.concat(
        [tf.ones([batch_size, 2 * beam_width], tf.bool), tf.reshape(advances, [batch_size, -1])],
        axis=1,
    )
    valid = tf.logical_and(valid, scores > minus_inf)
    # A token the next-step function banned (a forced prefix's others, at the dtype's
    # lowest logit) is no candidate, even when it would advance a phrase.
    step_scores = tf.gather(tf.reshape(step_log_probs, [batch_size, -1]), candidates, batch_dims=1)
    valid = tf.logical_and(valid, step_scores > BANNED)
    earlier = tf.range(count)[tf.newaxis, :] < tf.range(count)[:, tf.newaxis]
    repeated = tf.reduce_any(
        tf.logical_and(
            tf.logical_and(
                tf.equal(candidates[:, :, tf.newaxis], candidates[:, tf.newaxis, :]),
                earlier[tf.newaxis],
            ),
            valid[:, tf.newaxis, :],
        ),
        axis=-1,
    )
    valid = tf.logical_and(valid, tf.logical_not(repeated))

    # 3. Each candidate's progress.
    parents = candidates // vocab_size
    ids = candidates % vocab_size
    parent_finished = tf.gather(finished, parents, batch_dims=1)
    parent_progress = tf.gather(progress, parents, batch_dims=1)
    parent_current = tf.gather(current, parents, batch_dims=1)
    new_progress, new_current = _advance(
        ids,
        parent_progress,
        parent_current,
        tf.gather(next_tokens, parents, batch_dims=1),
        constraints[:, tf.newaxis, :, 0],
        lengths[:, tf.newaxis],
    )
    new_progress = tf.where(parent_finished[..., tf.newaxis], parent_progress, new_progress)
    new_current = tf.where(parent_finished, parent_current, new_current)
    banks = tf.reduce_sum(new_progress, axis=-1)

    # 4-5. Allocation over the banks, then the order: tokens met, score.
    dealt = _allocate(scores, banks, valid, beam_width, num * width)
    dealt_scores = tf.gather(scores, dealt, batch_dims=1)
    dealt_valid = tf.gather(valid, dealt, batch_dims=1)
    by_score = tf.argsort(
        tf.where(dealt_valid, dealt_scores, minus_inf),
        axis=-1,
        direction="DESCENDING",
        stable=True,
    )
    dealt = tf.gather(dealt, by_score, batch_dims=1)
    by_met = tf.argsort(
        tf.where(tf.gather(valid, dealt, batch_dims=1), tf.gather(banks, dealt, batch_dims=1), -1),
        axis=-1,
        direction="DESCENDING",
        stable=True,
    )
    dealt = tf.gather(dealt, by_met, batch_dims=1)
    # A sentence without constraints keeps plain beam search's candidates, in its order.
    plain = tf.equal(total, 0)[:, tf.newaxis]
    kept = tf.where(plain, tf.range(beam_width)[tf.newaxis, :], dealt)
    kept_valid = tf.logical_or(plain, tf.gather(valid, kept, batch_dims=1))

    chosen = tf.gather(candidates, kept, batch_dims=1)
    parents = chosen // vocab_size
    ids = chosen % vocab_size
    kept_log_probs = tf.gather(tf.reshape(totals, [batch_size, -1]), chosen, batch_dims=1)
    kept_log_probs = tf.where(kept_valid, kept_log_probs, minus_inf)
    kept_step_log_probs = tf.gather(
        tf.reshape(step_log_probs, [batch_size, -1]), chosen, batch_dims=1
    )
    kept_progress = tf.gather(new_progress, kept, batch_dims=1)
    kept_current = tf.gather(new_current, kept, batch_dims=1)
    parent_finished = tf.gather(finished, parents, batch_dims=1)
    ended = tf.logical_and(tf.logical_not(parent_finished), tf.equal(ids, strategy.end_id))
    stopped = tf.logical_or(parent_finished, ended)
    dead = tf.equal(kept_log_probs, -math.inf)
    now_finished = tf.logical_or(stopped, dead)

    # 6. Done: a hypothesis that met everything has ended and none such runs.
    all_met = tf.equal(tf.reduce_sum(kept_progress, axis=-1), total[:, tf.newaxis])
    met_and_ended = tf.logical_and(all_met, tf.logical_and(stopped, tf.logical_not(dead)))
    done = tf.logical_and(
        tf.reduce_any(met_and_ended, axis=1),
        tf.reduce_all(tf.logical_or(tf.logical_not(all_met), now_finished), axis=1),
    )
    dropped = tf.logical_and(done[:, tf.newaxis], tf.logical_not(now_finished))
    kept_log_probs = tf.where(dropped, minus_inf, kept_log_probs)
    now_finished = tf.logical_or(now_finished, dropped)

    row_offsets = tf.range(batch_size)[:, tf.newaxis] * beam_width
    flat_parent_rows = tf.reshape(parents + row_offsets, [-1])
    state = tf.nest.map_structure(lambda x: tf.gather(x, flat_parent_rows), state)
    tokens = tf.gather(search["tokens"], parents, batch_dims=1)
    ancestry = tf.gather(search["ancestry"], parents, batch_dims=1)
    token_scores = tf.gather(search["token_scores"], parents, batch_dims=1)
    shapes = {key: value.shape for key, value in search.items()}
    search = {
        "log_probs": kept_log_probs,
        "lengths": tf.gather(candidate_lengths, parents, batch_dims=1),
        "finished": now_finished,
        "tokens": write_column(tokens, step, tf.where(stopped, pad, ids)),
        "token_scores": write_column(
            token_scores, step, tf.where(parent_finished, 0.0, kept_step_log_probs)
        ),
        "ancestry": write_column(ancestry, step, parents),
        "constraints": constraints,
        "progress": kept_progress,
        "current": kept_current,
    }
    # The beam axis of the candidates' gathers is dynamic; the loop's is as it came.
    search = {key: tf.ensure_shape(value, shapes[key]) for key, value in search.items()}
    next_ids = tf.reshape(tf.where(parent_finished, pad, ids), [-1])
    return next_ids, state, search, attention
