"""The parts of one `AttentionWrapper` step that a user may replace: the attention
layers (built from `attention_layer_size` or given), `compute_attention` (TFA's default
`attention_fn`) and `concat_inputs` (its default `cell_input_fn`)."""

import keras
from keras import ops


def compute_attention(attention_mechanism, cell_output, attention_state, attention_layer):
    """`(attention, alignments, next_attention_state)` of one mechanism for one step."""
    alignments, next_attention_state = attention_mechanism([cell_output, attention_state])
    # (batch, 1, max_time) @ (batch, max_time, depth) -> (batch, depth)
    context = ops.squeeze(ops.matmul(ops.expand_dims(alignments, 1), attention_mechanism.values), 1)
    if attention_layer is not None:
        attention = attention_layer(ops.concatenate([cell_output, context], 1))
        return attention, alignments, next_attention_state
    return context, alignments, next_attention_state


def concat_inputs(inputs, attention):
    """The step's inputs and the previous attention, concatenated."""
    return ops.concatenate([inputs, attention], -1)


def _one_per_mechanism(value, mechanism_count, name, what):
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(values) != mechanism_count:
        raise ValueError(
            f"If provided, {name} must contain exactly one {what} per attention_mechanism. "
            f"Received: {len(values)} vs {mechanism_count}"
        )
    return values


def attention_layers(attention_layer_size, attention_layer, mechanism_count, dtype_policy):
    """One layer per mechanism: `Dense(size, use_bias=False)` for each of
    `attention_layer_size`, or the given `attention_layer`s, or `None` (no layer)."""
    if attention_layer_size is not None and attention_layer is not None:
        raise ValueError("Only one of attention_layer_size and attention_layer should be set")
    if attention_layer_size is not None:
        sizes = _one_per_mechanism(
            attention_layer_size, mechanism_count, "attention_layer_size", "integer"
        )
        return [
            keras.layers.Dense(size, name="attention_layer", use_bias=False, dtype=dtype_policy)
            for size in sizes
        ]
    if attention_layer is not None:
        return _one_per_mechanism(attention_layer, mechanism_count, "attention_layer", "layer")
    return None
