"""Loading the golden files of `benchmarks/tfa_golden/make_golden.py` and building our
objects the way each case built TFA's."""

import json
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from keras_attention import seq2seq

GOLDEN = Path(__file__).parents[1] / "seq2seq" / "golden"


def load(name):
    """`(arrays, config)` of `golden/<name>.npz`."""
    with np.load(GOLDEN / f"{name}.npz") as data:
        arrays = {key: data[key] for key in data.files}
    return arrays, json.loads(str(arrays.pop("config")))


def names(prefix):
    return sorted(path.stem for path in GOLDEN.glob(f"{prefix}*.npz"))


def golden_weights(arrays):
    count = len(json.loads(str(arrays["weight_shapes"])))
    return [arrays[f"w_{i}"] for i in range(count)]


def flatten_state(prefix, state):
    """`{prefix_path: array}` of a nested state, TensorArrays stacked (as the generator)."""
    flat = {}

    def visit(path, value):
        if isinstance(value, tf.TensorArray):
            flat[path] = value.stack().numpy()
        elif hasattr(value, "_fields"):
            for field in value._fields:
                visit(f"{path}_{field}", getattr(value, field))
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                visit(f"{path}_{i}", item)
        else:
            flat[path] = keras.ops.convert_to_numpy(value)

    visit(prefix, state)
    return flat


TOLERANCE = 1e-5
"""Float outputs against TFA's golden ones (ids, lengths and flags: exactly)."""


def assert_matches_golden(arrays, ours, name):
    """Each of `ours` (`{key: array}`, on any backend) against the golden `out_<key>`."""
    for key, value in ours.items():
        golden_key = f"out_{key}"
        if golden_key not in arrays and key.endswith("_0"):
            golden_key = f"out_{key[:-2]}"  # tf.keras' GRUCell state is a tensor, not [h]
        expected = arrays[golden_key]
        difference = max_difference(expected, keras.ops.convert_to_numpy(value))
        exact = np.issubdtype(expected.dtype, np.integer) or expected.dtype == bool
        assert difference <= (0 if exact else TOLERANCE), f"{name} {key}: {difference}"


def make_cell(kind, units):
    if kind == "gru":
        return keras.layers.GRUCell(units)
    return keras.layers.LSTMCell(units)


def make_wrapper(
    mechanism_name, mechanism_kwargs, wrapper_kwargs, units, query_layer=False, cell_units=8
):
    """`(mechanism, AttentionWrapper)` as the generator's `_make_wrapper` built them."""
    wrapper_kwargs = dict(wrapper_kwargs)
    cell = make_cell(wrapper_kwargs.pop("cell", "lstm"), cell_units)
    kwargs = dict(mechanism_kwargs)
    if query_layer:
        kwargs["query_layer"] = keras.layers.Dense(units, use_bias=False)
    mechanism = getattr(seq2seq, mechanism_name)(units, **kwargs)
    if wrapper_kwargs.get("attention_layer") == "dense_tanh_7":
        wrapper_kwargs["attention_layer"] = keras.layers.Dense(7, activation="tanh")
    return mechanism, seq2seq.AttentionWrapper(cell, mechanism, **wrapper_kwargs)


def max_difference(expected, actual):
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.shape != actual.shape:
        raise AssertionError(f"shapes differ: {expected.shape} vs {actual.shape}")
    if expected.size == 0:
        return 0.0
    return float(np.max(np.abs(expected.astype(np.float64) - actual.astype(np.float64))))


def tfa_case_wrapper(config):
    """`(mechanism, AttentionWrapper)` of one of TFA's own `_test_with_attention` cases
    (the `wrapper_tfa_*` files: a 9-unit LSTM cell)."""
    return make_wrapper(
        config["mechanism"],
        config["mechanism_kwargs"],
        {
            "attention_layer_size": config["attention_layer_size"],
            "alignment_history": config["alignment_history"],
        },
        config["depth"],
        query_layer=config["create_query_layer"],
        cell_units=9,
    )


def mechanism_outputs(arrays, config):
    """A golden mechanism case run on TFA's weights: `(mechanism, outputs by name)`."""
    config = dict(config)
    mechanism = getattr(seq2seq, config.pop("class"))(**config)
    memory, lengths = arrays["in_memory"], arrays["in_memory_sequence_length"]
    mechanism.setup_memory(memory, memory_sequence_length=lengths)
    mechanism([arrays["in_query"], arrays["in_state"]])
    shapes = [tuple(w.shape) for w in mechanism.weights]
    if shapes != [w.shape for w in golden_weights(arrays)]:
        raise AssertionError(f"weights' shapes differ from TFA's: {shapes}")
    mechanism.set_weights(golden_weights(arrays))
    mechanism.setup_memory(memory, memory_sequence_length=lengths)  # keys from the new weights
    alignments, next_state = mechanism([arrays["in_query"], arrays["in_state"]])
    return mechanism, {
        "alignments": alignments,
        "next_state": next_state,
        "keys": mechanism.keys,
        "values": mechanism.values,
        "initial_alignments": mechanism.initial_alignments(3, "float32"),
    }
