"""`DecodeResult`: what every decoding strategy returns."""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf


class DecodeResult(NamedTuple):
    """The output of a decoding strategy, one row per input sentence.

    `T` is the number of decoding steps actually run: at most `max_steps`,
    fewer when every sentence emitted `end_id` earlier. It is dynamic (known
    only when the graph runs).

    Attributes:
        tokens: int32 tensor of shape `(batch_size, T)`. The generated ids,
            without the start token and without the end token; positions
            `>= lengths[b]` hold `pad_id`.
        scores: float32 tensor of shape `(batch_size,)`. The sum of the
            log-probabilities of the emitted tokens, including the end token
            when one was emitted. For beam search, the raw (not
            length-normalized) log-probability of the returned hypothesis.
        lengths: int32 tensor of shape `(batch_size,)`. The number of tokens
            before the end token (`max_steps` when the sentence never ended).
        attention: float32 tensor of shape `(batch_size, T, Tv)`. The
            attention weights of each emitted step; rows `>= lengths[b]`
            (the end token's step and everything after it) are zero.
        token_scores: float32 tensor of shape `(batch_size, T)`, or `None`
            from a strategy that does not record it. The log-probability of
            each emitted token: positions `< lengths[b]` hold the tokens',
            position `lengths[b]` the end token's when one was emitted, and
            the rest 0, so that a row sums to `scores[b]`.
    """

    tokens: tf.Tensor
    scores: tf.Tensor
    lengths: tf.Tensor
    attention: tf.Tensor
    token_scores: tf.Tensor | None = None
