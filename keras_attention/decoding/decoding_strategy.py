"""`DecodingStrategy`: the contract shared by greedy and beam search.

A strategy knows nothing about the model. The model hands it a next-step
function

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

`batch` is the number of sentences for greedy search and
`num_sentences * beam_width` for beam search.

Strategies run a single `tf.while_loop` with `maximum_iterations`, use only
core TensorFlow ops (no custom ops, no TF Addons), and work eagerly, inside
`tf.function`, with `jit_compile=True`, and inside an exported SavedModel run
by TensorFlow Serving.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

from keras_attention.decoding.decode_result import DecodeResult

NextFn = Callable[[tf.Tensor, tf.Tensor, Any], "tuple[tf.Tensor, Any, tf.Tensor | None]"]


def check_int(name: str, value: Any, minimum: int) -> int:
    """Returns `value` as an `int`, or raises `ValueError` naming it."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or int(value) < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}. Received: {name}={value!r}")
    return int(value)


def relaxed_shape(tensor: tf.Tensor) -> tf.TensorShape:
    """The shape of `tensor` with its leading (batch) dimension unknown."""
    shape = tensor.shape
    if shape.rank is None or shape.rank == 0:
        return shape
    return tf.TensorShape([None]).concatenate(shape[1:])


def write_column(buffer: tf.Tensor, step: tf.Tensor, values: tf.Tensor) -> tf.Tensor:
    """Sets `buffer[..., step] = values` for a buffer whose last axis is time.

    A masked `tf.where` instead of a scatter keeps every shape fixed, which
    XLA needs.
    """
    length = buffer.shape[-1]
    is_step = tf.equal(tf.range(length), step)
    return tf.where(is_step, values[..., tf.newaxis], buffer)


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


def prepare_start_ids(start_ids: Any) -> tf.Tensor:
    """Converts `start_ids` to an int32 vector, or raises `ValueError`."""
    start_ids = tf.convert_to_tensor(start_ids)
    if start_ids.shape.rank is not None and start_ids.shape.rank != 1:
        raise ValueError(
            f"`start_ids` must have shape (batch_size,). Received: start_ids.shape={start_ids.shape}"
        )
    return tf.cast(start_ids, tf.int32)


@keras.saving.register_keras_serializable(package="keras_attention")
class DecodingStrategy:
    """Base class of decoding strategies (greedy search, beam search).

    Subclasses implement `__call__`; this class holds the arguments every
    strategy shares, validates them, and round-trips them through
    `get_config` / `from_config`.

    Args:
        max_length: int >= 1, the most tokens generated per sentence
            (counting the end token).
        end_id: int >= 0, the id that ends a sentence.
        pad_id: int >= 0, the id written after a sentence has ended.

    Call arguments:
        next_fn: `next_fn(step, token_ids, state) -> (logits, new_state,
            attention)`, see the module docstring.
        initial_state: a nest of tensors, every leaf of shape
            `(batch_size, ...)`.
        start_ids: int tensor of shape `(batch_size,)`, the ids fed at step 0.

    Returns:
        A `DecodeResult`.
    """

    def __init__(self, max_length: int = 50, end_id: int = 3, pad_id: int = 0):
        self.max_length = check_int("max_length", max_length, minimum=1)
        self.end_id = check_int("end_id", end_id, minimum=0)
        self.pad_id = check_int("pad_id", pad_id, minimum=0)

    def __call__(self, next_fn: NextFn, initial_state: Any, start_ids: Any) -> DecodeResult:
        raise NotImplementedError(f"{type(self).__name__} must implement `__call__`.")

    def get_config(self) -> dict[str, Any]:
        return {"max_length": self.max_length, "end_id": self.end_id, "pad_id": self.pad_id}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> DecodingStrategy:
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{key}={value!r}" for key, value in self.get_config().items())
        return f"{type(self).__name__}({args})"
