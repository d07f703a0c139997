"""The next-step function a model hands a decoding strategy, and its checks.

A decoding strategy knows nothing about the model. The model hands it a
next-step function

    next_fn(step, token_ids, state) -> (logits, new_state, attention)

- `step`: scalar int32, 0-based.
- `token_ids`: int32 `(batch, )`, the previous tokens (the start ids at step 0).
- `state`: a nest (tuple, list, dict) of tensors, every leaf with leading
  dimension `batch`.
- `logits`: float `(batch, vocab_size)`, unnormalized; the strategy applies
  `log_softmax` in float32.
- `new_state`: the same structure and shapes as `state`.
- `attention`: float `(batch, Tv)`, the attention weights of that step, with
  `Tv` fixed for the whole call (it may be unknown statically). A model without
  attention may return `None`; the result's attention then has `Tv = 0`.

`batch` is the number of sentences for greedy search and sampling and
`num_sentences * beam_width` for beam search.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

NextFn = Callable[[tf.Tensor, tf.Tensor, Any], "tuple[tf.Tensor, Any, tf.Tensor | None]"]


def relaxed_shape(tensor: tf.Tensor) -> tf.TensorShape:
    """The shape of `tensor` with its leading (batch) dimension unknown."""
    shape = tensor.shape
    if shape.rank is None or shape.rank == 0:
        return shape
    return tf.TensorShape([None]).concatenate(shape[1:])


def call_next_fn(
    next_fn: NextFn, step: tf.Tensor, token_ids: tf.Tensor, state: Any
) -> tuple[tf.Tensor, Any, tf.Tensor]:
    """Runs one model step; returns float32 log-probs, new state, attention."""
    outputs = next_fn(step, token_ids, state)
    if not isinstance(outputs, (tuple, list)) or len(outputs) != 3:
        raise ValueError(
            f"`next_fn` must return a tuple `(logits, new_state, attention)`. Received: {outputs!r}"
        )
    logits, new_state, attention = outputs
    logits = tf.convert_to_tensor(logits)
    if logits.shape.rank is not None and logits.shape.rank != 2:
        raise ValueError(
            "`next_fn` must return logits of shape (batch, vocab_size). "
            f"Received: logits.shape={logits.shape}"
        )
    tf.nest.assert_same_structure(state, new_state)
    if attention is None:
        attention = tf.zeros([tf.shape(logits)[0], 0], tf.float32)
    attention = tf.cast(attention, tf.float32)
    if attention.shape.rank is not None and attention.shape.rank != 2:
        raise ValueError(
            "`next_fn` must return attention of shape (batch, Tv). "
            f"Received: attention.shape={attention.shape}"
        )
    log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)
    return log_probs, new_state, attention
