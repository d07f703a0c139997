"""The tensors around the translation signatures' decoding: input specs, the graph's own
input checks, and the outputs of an empty batch and of a one-best n-best list."""

from __future__ import annotations

import tensorflow as tf

from keras_attention_client.wire.contract import CONSTRAINT_SEPARATOR, STEERING_OUTPUTS

DTYPES = {"DT_STRING": tf.string, "DT_FLOAT": tf.float32, "DT_INT32": tf.int32}
"""The contract's DataType names -> TensorFlow dtypes."""


def tensor_specs(inputs: dict[str, tuple[str, list[int]]]) -> list[tf.TensorSpec]:
    """`TensorSpec`s named after the contract's `alias -> (dtype, shape)` inputs, in order
    (every dimension dynamic)."""
    return [
        tf.TensorSpec([None] * len(shape), DTYPES[dtype], name=alias)
        for alias, (dtype, shape) in inputs.items()
    ]


def scalar_specs(inputs: dict[str, str]) -> list[tf.TensorSpec]:
    """Scalar `TensorSpec`s named after the decoding inputs, in the contract's order."""
    return [tf.TensorSpec([], DTYPES[dtype], name=alias) for alias, dtype in inputs.items()]


def check(condition: tf.Tensor, message: str, values: list[tf.Tensor]) -> tf.Operation:
    """`tf.debugging.Assert`: INVALID_ARGUMENT with `message` and `values` when false."""
    return tf.debugging.Assert(condition, [message, *values])


def check_one_per_text(
    name: str, value: tf.Tensor, text: tf.Tensor, *, or_none: bool = True
) -> tf.Operation:
    """`value` holds one string per `text` (or, with `or_none`, none at all)."""
    sizes = [tf.size(value), tf.size(text)]
    same = tf.equal(sizes[0], sizes[1])
    if or_none:
        same = tf.logical_or(tf.equal(sizes[0], 0), same)
    return check(
        same,
        f"`{name}` must hold one string per `text`{', or none' if or_none else ''}. "
        f"Received sizes {name}, text:",
        sizes,
    )


def check_range(name: str, value: tf.Tensor, low: int, high: int) -> tf.Operation:
    """`value` is in `[low, high]`."""
    return check(
        tf.logical_and(value >= low, value <= high),
        f"`{name}` must be in [{low}, {high}]. Received:",
        [value],
    )


def best_of(outputs: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """Outputs with an n-best axis of size 1 -> the outputs without it."""
    return {
        key: value if key in ("source_tokens", *STEERING_OUTPUTS) else value[:, 0]
        for key, value in outputs.items()
    }


def empty_outputs(outputs: dict[str, tuple[str, list[int]]]) -> dict[str, tf.Tensor]:
    """The contract's outputs for an empty batch: `[0]`, `[0, 0]`, ... tensors."""
    return {
        key: tf.zeros([0] * len(shape), DTYPES[dtype])
        if dtype != "DT_STRING"
        else tf.fill([0] * len(shape), "")
        for key, (dtype, shape) in outputs.items()
    }


def split_phrases(constraints: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """`[batch]` strings of `CONSTRAINT_SEPARATOR`-joined phrases -> `[batch, C]` phrases
    (`""`-padded) and whether any row holds one (not blank)."""
    phrases = tf.strings.split(constraints, CONSTRAINT_SEPARATOR).to_tensor("")
    return phrases, tf.reduce_any(tf.strings.length(tf.strings.strip(phrases)) > 0)
