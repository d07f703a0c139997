"""`AttentionWrapper`: an RNN cell with attention over a bound memory (TFA's API).

This module also gives TFA's `attention_wrapper` module path its names: the state, the
step's parts, the attention mechanisms and the probability functions live in their own
modules.
"""

import keras
import tensorflow as tf
from keras import ops

from keras_attention.seq2seq.attention_mechanism import AttentionMechanism
from keras_attention.seq2seq.attention_step import (
    attention_layers,
    compute_attention,
    concat_inputs,
)
from keras_attention.seq2seq.attention_wrapper_state import AttentionWrapperState
from keras_attention.seq2seq.backend_support import is_tensorflow, require_tensorflow
from keras_attention.seq2seq.bahdanau_attention import (
    BahdanauAttention,
    BahdanauMonotonicAttention,
)
from keras_attention.seq2seq.luong_attention import LuongAttention, LuongMonotonicAttention
from keras_attention.seq2seq.probability import hardmax, monotonic_attention, safe_cumprod

__all__ = [
    "AttentionMechanism",
    "AttentionWrapper",
    "AttentionWrapperState",
    "BahdanauAttention",
    "BahdanauMonotonicAttention",
    "LuongAttention",
    "LuongMonotonicAttention",
    "hardmax",
    "monotonic_attention",
    "safe_cumprod",
]


@keras.saving.register_keras_serializable(package="keras_attention.seq2seq")
class AttentionWrapper(keras.layers.Layer):
    """Wraps an RNN cell with attention, TFA's `AttentionWrapper`.

    Each step: 1. `cell_inputs = cell_input_fn(inputs, previous attention)` (a
    concatenation by default); 2. `cell_output, cell_state = cell(cell_inputs,
    state.cell_state)`; 3. each mechanism scores `cell_output` into alignments;
    4. `context = alignments @ mechanism.values`; 5. `attention =
    attention_layer([cell_output, context])` (or the context without a layer);
    6. the output is `attention` (`output_attention=True`, Luong style) or
    `cell_output` (Bahdanau style). Works with `BasicDecoder` and inside
    `keras.layers.RNN`, on every Keras backend (`alignment_history` on TensorFlow only).

    Variables, in order: the attention layers', the cell's, then each mechanism's.

    The memory is no part of the config: a wrapper reloaded from a `.keras` file
    creates its weights from its build config, and its memory is bound again with
    `wrapper.attention_mechanisms[i].setup_memory(...)`.

    Args:
        cell: An RNN cell (`keras.layers.LSTMCell`, `GRUCell`, ...).
        attention_mechanism: An `AttentionMechanism` or a list of them.
        attention_layer_size: Optional depth (or list, one per mechanism) of a
            `Dense(use_bias=False)` attention layer. Not with `attention_layer`.
        alignment_history: Boolean, keep every step's alignments in the state (a
            `TensorArray`, so TensorFlow backend only). Defaults to `False`.
        cell_input_fn: Optional callable `(inputs, attention) -> cell_inputs`.
        output_attention: Boolean, output the attention (default) or the cell output.
        initial_cell_state: Optional cell state for `get_initial_state`.
        name: Layer name.
        attention_layer: Optional layer (or list) mapping `[cell_output, context]`.
        attention_fn: Optional callable `(mechanism, cell_output, attention_state,
            attention_layer) -> (attention, alignments, next_attention_state)`.
        **kwargs: Base layer keyword arguments.
    """

    def __init__(
        self,
        cell,
        attention_mechanism,
        attention_layer_size=None,
        alignment_history=False,
        cell_input_fn=None,
        output_attention=True,
        initial_cell_state=None,
        name=None,
        attention_layer=None,
        attention_fn=None,
        **kwargs,
    ):
        super().__init__(name=name, **kwargs)
        if alignment_history:
            require_tensorflow("AttentionWrapper(alignment_history=True)", "a tf.TensorArray")
        self._is_multi = isinstance(attention_mechanism, (list, tuple))
        mechanisms = list(attention_mechanism) if self._is_multi else [attention_mechanism]
        self._attention_layers = attention_layers(
            attention_layer_size, attention_layer, len(mechanisms), self.dtype_policy
        )
        self._cell = cell
        self._attention_mechanisms = mechanisms
        self.attention_layer_size = attention_layer_size
        self._has_custom_attention_layer = attention_layer is not None
        self._attention_fn = attention_fn or compute_attention
        self._cell_input_fn = cell_input_fn or concat_inputs
        self._custom_functions = cell_input_fn is not None or attention_fn is not None
        self._output_attention = output_attention
        self._alignment_history = alignment_history
        self._attention_layer_size = None
        self._initial_cell_state = initial_cell_state
        self._memory_depths = None

    @property
    def cell(self):
        return self._cell

    @property
    def attention_mechanisms(self):
        """The mechanisms, a tuple: a reloaded wrapper's memory is bound with their
        `setup_memory`."""
        return tuple(self._attention_mechanisms)

    def _attention_mechanisms_checks(self):
        for mechanism in self._attention_mechanisms:
            if not mechanism.memory_initialized:
                raise ValueError(
                    "The AttentionMechanism instances passed to this AttentionWrapper should "
                    "be initialized with a memory first, either by passing it to the "
                    "AttentionMechanism constructor or calling attention_mechanism.setup_memory()"
                )

    def _check_batch_size(self, tensors, batch_size, error_message):
        """`tensors` once `batch_size` is checked against the memories' (in the graph on
        TensorFlow, where it may be known only at run time)."""
        self._attention_mechanisms_checks()
        if is_tensorflow():
            checks = [
                tf.debugging.assert_equal(batch_size, mechanism.batch_size, message=error_message)
                for mechanism in self._attention_mechanisms
            ]
            with tf.control_dependencies(checks):
                return keras.tree.map_structure(tf.identity, tensors)
        for mechanism in self._attention_mechanisms:
            if batch_size != mechanism.batch_size:
                raise ValueError(
                    f"{error_message} Received: {batch_size} vs {mechanism.batch_size}"
                )
        return tensors

    def _get_attention_layer_size(self):
        if self._attention_layer_size is not None:
            return self._attention_layer_size
        if self.attention_layer_size is not None:  # known before a memory is bound
            sizes = self.attention_layer_size
            self._attention_layer_size = sum(sizes) if isinstance(sizes, (list, tuple)) else sizes
            return self._attention_layer_size
        self._attention_mechanisms_checks()
        depths = [mechanism.values.shape[-1] for mechanism in self._attention_mechanisms]
        self._attention_layer_size = self._attention_depth(depths)
        return self._attention_layer_size

    def _attention_depth(self, memory_depths):
        if self._attention_layers is None:
            return sum(memory_depths)
        return sum(
            layer.compute_output_shape((None, self._cell_output_size() + depth))[-1]
            for layer, depth in zip(self._attention_layers, memory_depths, strict=True)
        )

    def _cell_output_size(self):
        size = getattr(self._cell, "output_size", None)
        if size is None:
            state_size = self._cell.state_size
            size = state_size[0] if isinstance(state_size, (list, tuple)) else state_size
        return size

    def _item_or_tuple(self, seq):
        items = tuple(seq)
        return items if self._is_multi else items[0]

    @property
    def output_size(self):
        if self._output_attention:
            return self._get_attention_layer_size()
        return self._cell_output_size()

    @property
    def state_size(self):
        """An `AttentionWrapperState` of the sizes of the state's parts."""
        return AttentionWrapperState(
            cell_state=self._cell.state_size,
            attention=self._get_attention_layer_size(),
            alignments=self._item_or_tuple(m.alignments_size for m in self._attention_mechanisms),
            attention_state=self._item_or_tuple(m.state_size for m in self._attention_mechanisms),
            alignment_history=self._item_or_tuple(
                m.alignments_size if self._alignment_history else ()
                for m in self._attention_mechanisms
            ),
        )

    def build(self, input_shape):
        """Builds the cell, the mechanisms' query layers and the attention layers
        from the step input's shape (needs the memory bound)."""
        self._attention_mechanisms_checks()
        depths = [mechanism.values.shape[-1] for mechanism in self._attention_mechanisms]
        self._build_parts(input_shape[-1], depths)

    def _build_parts(self, input_depth, memory_depths):
        self._memory_depths = list(memory_depths)
        self._attention_layer_size = self._attention_depth(memory_depths)
        if not self._cell.built:
            self._cell.build((None, self._cell_input_depth(input_depth)))
        cell_output = self._cell_output_size()
        for i, mechanism in enumerate(self._attention_mechanisms):
            if mechanism.query_layer is not None and not mechanism.query_layer.built:
                mechanism.query_layer.build((None, cell_output))
            if self._attention_layers is not None and not self._attention_layers[i].built:
                self._attention_layers[i].build((None, cell_output + memory_depths[i]))

    def _cell_input_depth(self, input_depth):
        """The depth of `cell_input_fn(inputs, attention)`: the two concatenated by
        default, found by calling a custom function on one row of zeros."""
        if self._cell_input_fn is concat_inputs:
            return input_depth + self._attention_layer_size
        inputs = ops.zeros((1, input_depth), dtype=self.compute_dtype)
        attention = ops.zeros((1, self._attention_layer_size), dtype=self.compute_dtype)
        return int(self._cell_input_fn(inputs, attention).shape[-1])

    def get_build_config(self):
        """The step input's shape and the memories' depths: a reloaded wrapper creates
        every weight before a memory is bound."""
        config = super().get_build_config()
        if config and self._memory_depths:
            config["memory_depths"] = self._memory_depths
        return config

    def build_from_config(self, config):
        depths = config.get("memory_depths")
        if depths and config.get("input_shape"):
            self._build_parts(config["input_shape"][-1], depths)
            self.built = True
        elif all(m.memory_initialized for m in self._attention_mechanisms):
            super().build_from_config(config)

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        """The zero `AttentionWrapperState` (the cell's own zero state, or
        `initial_cell_state`), with empty `TensorArray`s for the history.

        Under `BeamSearchDecoder`, `batch_size` is `batch_size * beam_width` and the
        memory must be tiled with `tile_batch`.
        """
        if inputs is not None:
            batch_size = ops.shape(inputs)[0]
            dtype = inputs.dtype
        dtype = keras.backend.standardize_dtype(dtype or self.compute_dtype)
        if self._initial_cell_state is not None:
            cell_state = self._initial_cell_state
        else:
            cell_state = self._cell.get_initial_state(batch_size=batch_size)
            cell_state = keras.tree.map_structure(lambda s: ops.cast(s, dtype), cell_state)
        message = (
            f"When calling get_initial_state of AttentionWrapper {self.name}: Non-matching "
            "batch sizes between the memory (encoder output) and the requested batch size. "
            "Under BeamSearchDecoder, tile the memory with tile_batch and pass "
            "batch_size * beam_width."
        )
        cell_state = self._check_batch_size(cell_state, batch_size, message)
        initial_alignments = [
            mechanism.initial_alignments(batch_size, dtype)
            for mechanism in self._attention_mechanisms
        ]
        return AttentionWrapperState(
            cell_state=cell_state,
            attention=ops.zeros((batch_size, self._get_attention_layer_size()), dtype=dtype),
            alignments=self._item_or_tuple(initial_alignments),
            attention_state=self._item_or_tuple(
                mechanism.initial_state(batch_size, dtype)
                for mechanism in self._attention_mechanisms
            ),
            alignment_history=self._item_or_tuple(
                tf.TensorArray(dtype, size=0, dynamic_size=True, element_shape=alignment.shape)
                if self._alignment_history
                else ()
                for alignment in initial_alignments
            ),
        )

    def __call__(self, inputs, states, training=None, **kwargs):
        # Keras' `Layer.__call__` refuses a state that mixes tensors and TensorArrays
        # (`alignment_history`); the step needs none of its conversions.
        if not self.built:
            self.build(tuple(inputs.shape))
        return self.call(inputs, states, training=training)

    def call(self, inputs, states, training=None):
        """One step: returns `(attention or cell output, next AttentionWrapperState)`."""
        state = states
        if not isinstance(state, AttentionWrapperState):
            try:
                state = AttentionWrapperState(*state)
            except TypeError as error:
                raise TypeError(
                    "Expected state to be an AttentionWrapperState or values that can "
                    f"construct one. Received: {type(state)}"
                ) from error
        cell_inputs = self._cell_input_fn(inputs, state.attention)
        cell_state = state.cell_state
        cell_output, next_cell_state = self._cell(cell_inputs, cell_state, training=training)
        next_cell_state = keras.tree.pack_sequence_as(
            cell_state, keras.tree.flatten(next_cell_state)
        )
        message = (
            f"When applying AttentionWrapper {self.name}: Non-matching batch sizes between "
            "the memory (encoder output) and the query (decoder output). Under "
            "BeamSearchDecoder, tile the memory with tile_batch."
        )
        batch_size = ops.shape(cell_output)[0]
        cell_output = self._check_batch_size(cell_output, batch_size, message)
        previous_states = state.attention_state if self._is_multi else [state.attention_state]
        previous_histories = (
            state.alignment_history if self._is_multi else [state.alignment_history]
        )
        attentions, alignments_all, states_all, histories = [], [], [], []
        for i, mechanism in enumerate(self._attention_mechanisms):
            layer = self._attention_layers[i] if self._attention_layers else None
            attention, alignments, next_attention_state = self._attention_fn(
                mechanism, cell_output, previous_states[i], layer
            )
            history = previous_histories[i]
            histories.append(
                history.write(history.size(), alignments) if self._alignment_history else ()
            )
            attentions.append(attention)
            alignments_all.append(alignments)
            states_all.append(next_attention_state)
        attention = ops.concatenate(attentions, 1)
        next_state = AttentionWrapperState(
            cell_state=next_cell_state,
            attention=attention,
            attention_state=self._item_or_tuple(states_all),
            alignments=self._item_or_tuple(alignments_all),
            alignment_history=self._item_or_tuple(histories),
        )
        if not isinstance(states, AttentionWrapperState):
            # `keras.layers.RNN` passes a list, and JAX's scan needs the same type back.
            next_state = type(states)(next_state)
        return (attention if self._output_attention else cell_output), next_state

    def get_config(self):
        if self._custom_functions or self._initial_cell_state is not None:
            raise NotImplementedError(
                "An AttentionWrapper with cell_input_fn, attention_fn or initial_cell_state "
                "cannot be serialized: pass them again when rebuilding it."
            )
        serialize = keras.saving.serialize_keras_object
        mechanisms = [serialize(m) for m in self._attention_mechanisms]
        config = super().get_config()
        config.update(
            {
                "cell": serialize(self._cell),
                "attention_mechanism": mechanisms if self._is_multi else mechanisms[0],
                "attention_layer_size": self.attention_layer_size,
                "alignment_history": self._alignment_history,
                "output_attention": self._output_attention,
            }
        )
        if self._has_custom_attention_layer:
            layers = [serialize(layer) for layer in self._attention_layers]
            config["attention_layer"] = layers if self._is_multi else layers[0]
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        deserialize = keras.saving.deserialize_keras_object
        for key in ("cell", "attention_mechanism", "attention_layer"):
            value = config.get(key)
            if isinstance(value, list):
                config[key] = [deserialize(item) for item in value]
            elif value is not None:
                config[key] = deserialize(value)
        return cls(**config)
