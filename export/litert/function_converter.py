"""`convert_function`: a `tf.function` with a fixed input signature as a LiteRT model with
builtin ops only, run in LiteRT's interpreter and checked against TensorFlow.

Made for decoding functions of `keras_attention.seq2seq` (an `AttentionWrapper` under a
`BeamSearchDecoder`, or a `BasicDecoder` with `GreedyEmbeddingSampler`), which TFA's
decoders could not give (tensorflow/tensorflow#40507), and fit for any function whose
ops have LiteRT builtins. `LiteRTExporter` converts with the same `builtin_converter`.
"""

from __future__ import annotations

import dataclasses

import keras
import numpy as np
import tensorflow as tf

from keras_attention.export.litert.ops import model_ops
from keras_attention.seq2seq.litert_tracing import tracing_for_litert


def builtin_converter(function, trackable=None) -> tf.lite.TFLiteConverter:
    """A `TFLiteConverter` of one concrete function, with LiteRT's builtin ops only.

    No `SELECT_TF_OPS` (Flex) and no custom ops; `TensorArray`s of a static element
    shape are lowered to builtin ops (the converter's default
    `_experimental_lower_tensor_list_ops`).
    """
    converter = tf.lite.TFLiteConverter.from_concrete_functions([function], trackable)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    return converter


def _concrete(function) -> tf.types.experimental.ConcreteFunction:
    if isinstance(function, tf.types.experimental.ConcreteFunction):
        return function
    if getattr(function, "input_signature", None) is None:
        raise ValueError(
            "`function` must be a concrete function or a `tf.function` with an "
            "`input_signature` (the converted model's fixed inputs)"
        )
    return function.get_concrete_function()


def _traced_for_litert(function) -> tf.types.experimental.ConcreteFunction:
    """`function` traced again inside `tracing_for_litert()`: its decoders' buffers of a
    fixed size, which the converter lowers to builtin ops (a concrete function is taken
    as it was traced)."""
    if isinstance(function, tf.types.experimental.ConcreteFunction):
        return function
    with tracing_for_litert():
        retraced = tf.function(function.python_function, input_signature=function.input_signature)
        return retraced.get_concrete_function()


def _frozen(function: tf.types.experimental.ConcreteFunction):
    """`function` with every variable as a constant, inside its loops' bodies too (a
    variable read in a `tf.while_loop` would stay a LiteRT resource variable that the
    interpreter has no value for)."""
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    return convert_variables_to_constants_v2(function, lower_control_flow=False)


@dataclasses.dataclass
class ConvertedFunction:
    """A function converted by `convert_function`, runnable in LiteRT's interpreter.

    Attributes:
        data: the `.tflite` flatbuffer.
        ops: its op kinds (`model_ops`): `{"builtin", "custom", "flex"}` names.
        function: the TensorFlow concrete function converted (variables as they were).
    """

    data: bytes
    ops: dict[str, list[str]]
    function: tf.types.experimental.ConcreteFunction

    def __call__(self, *inputs, num_threads: int | None = None):
        """Runs the model on `inputs` (NumPy arrays, in the signature's order) in
        `ai_edge_litert`'s interpreter; returns the function's output structure of
        NumPy arrays."""
        from ai_edge_litert.interpreter import Interpreter

        runner = Interpreter(
            model_content=self.data, num_threads=num_threads
        ).get_signature_runner()
        # The signature's inputs are named as the function's placeholders of its
        # arguments, which come before those of its captured tensors.
        specs = tf.nest.flatten(self.function.structured_input_signature)
        names = [t.name.split(":")[0] for t in self.function.inputs[: len(specs)]]
        if len(names) != len(inputs):
            raise ValueError(f"The model takes {len(names)} inputs. Received: {len(inputs)}")
        feed = {
            name: np.asarray(value, spec.dtype.as_numpy_dtype)
            for name, value, spec in zip(names, inputs, specs, strict=True)
        }
        outputs = runner(**feed)
        flat = [outputs[f"output_{i}"] for i in range(len(outputs))]
        return tf.nest.pack_sequence_as(self.function.structured_outputs, flat)

    def check(self, *inputs, atol: float = 1e-5, rtol: float = 1e-5) -> dict[str, float]:
        """Compares the LiteRT model with the TensorFlow function on `inputs`.

        Integer and boolean outputs (ids, lengths) must be equal; float outputs
        (scores, logits, alignments) within `atol + rtol * |expected|`.

        Returns:
            The largest absolute difference of each output, by its path in the
            output structure (e.g. `"scores"`).

        Raises:
            ValueError: an output differs (or has another shape), naming it.
        """
        expected = self.function(*[tf.constant(x) for x in inputs])
        actual = self(*inputs)
        differences = {}
        for path, want, got in zip(
            _paths(expected), tf.nest.flatten(expected), tf.nest.flatten(actual), strict=True
        ):
            want, got = np.asarray(want), np.asarray(got)
            if got.shape != want.shape:
                raise ValueError(f"{path}: shape {got.shape}, TensorFlow's {want.shape}")
            difference = np.abs(got.astype(np.float64) - want.astype(np.float64))
            largest = float(difference.max()) if difference.size else 0.0
            if np.issubdtype(want.dtype, np.floating):
                agrees = np.allclose(got, want, rtol=rtol, atol=atol)
            else:
                agrees = np.array_equal(got, want)
            if not agrees:
                raise ValueError(
                    f"{path}: LiteRT's output differs from TensorFlow's (largest difference "
                    f"{largest:g}; atol={atol}, rtol={rtol} for floats, equal otherwise)"
                )
            differences[path] = largest
        return differences


def _paths(structure) -> list[str]:
    """Each leaf's path in `structure`, its keys / fields / indices joined by "/"."""
    return [
        "/".join(str(key) for key in path) for path, _ in keras.tree.flatten_with_path(structure)
    ]


def convert_function(function) -> ConvertedFunction:
    """Converts a decoding function to LiteRT with builtin ops only.

    The variables are frozen into constants (those read inside the decoding loop
    too), and `builtin_converter` converts with `TFLITE_BUILTINS` only: conversion
    fails rather than fall back to Flex or custom ops, and the result's `ops` lists
    none (checked here too).

    Args:
        function: a `tf.function` with an `input_signature` of fixed shapes (fixed
            batch size; a `BeamSearchDecoder` or `dynamic_decode` with a Python
            `maximum_iterations`), or a concrete function, whose layers are built
            (run its Python function once eagerly, as the example does): variables
            created while tracing cannot be frozen.

    Returns:
        A `ConvertedFunction`: `.data` (the flatbuffer), `.ops`, callable in LiteRT's
        interpreter, and `.check(*inputs)` against TensorFlow.

    Raises:
        ValueError: a `tf.function` without an input signature, or a converted
            model with custom or Flex ops.

    Example (a beam search over an attention wrapper, as tests/seq2seq/test_litert.py):

    ```python
    @tf.function(input_signature=[tf.TensorSpec([2, 5, 8]), tf.TensorSpec([2], tf.int32)])
    def decode(memory, start_tokens):
        mechanism.setup_memory(seq2seq.tile_batch(memory, 3))
        state = cell.get_initial_state(batch_size=2 * 3, dtype=tf.float32)
        outputs, _, _ = decoder(embedding, start_tokens=start_tokens, end_token=1,
                                initial_state=state)
        return {"ids": outputs.predicted_ids, "scores": outputs.beam_search_decoder_output.scores}

    decode.python_function(memory, start_tokens)  # builds the layers
    converted = convert_function(decode)
    converted.check(memory, start_tokens, atol=1e-4)
    ```
    """
    concrete = _concrete(function)
    # An (empty) trackable object gives the model a signature, named by the arguments.
    data = builtin_converter(_frozen(_traced_for_litert(function)), tf.Module()).convert()
    ops = model_ops(data)
    if ops["custom"] or ops["flex"]:
        raise ValueError(
            f"The converted model has ops outside LiteRT's builtins: custom {ops['custom']}, "
            f"Flex {ops['flex']}"
        )
    # Checked against the function as TensorFlow runs it (growing `TensorArray`s).
    return ConvertedFunction(data=data, ops=ops, function=concrete)
