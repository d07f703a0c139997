"""The base of TFA-style attention mechanisms: memory bound once, queried per step."""

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_attention.seq2seq.backend_support import is_tensorflow
from keras_attention.seq2seq.probability import hardmax

PROBABILITY_FNS = {"softmax": ops.softmax, "hardmax": hardmax}


def sequence_mask(lengths, max_length):
    """Boolean `(batch_size, max_length)`: True before each entry's length."""
    lengths = ops.cast(ops.convert_to_tensor(lengths), "int32")
    return ops.arange(max_length, dtype="int32")[None, :] < ops.expand_dims(lengths, -1)


def prepare_memory(memory, memory_sequence_length=None, memory_mask=None):
    """`memory` as a tensor, zeroed at the positions past each length (or where the
    boolean `memory_mask` `(batch_size, max_time)` is False)."""
    memory = ops.convert_to_tensor(memory)
    if memory_sequence_length is not None and memory_mask is not None:
        raise ValueError(
            "memory_sequence_length and memory_mask can't be provided at the same time."
        )
    if len(memory.shape) < 3 or any(dim is None for dim in memory.shape[2:]):
        raise ValueError(
            "Expected memory of shape (batch_size, max_time, ...) with fully defined inner "
            f"dims. Received: shape={memory.shape}"
        )
    if memory_sequence_length is not None:
        mask = sequence_mask(memory_sequence_length, ops.shape(memory)[1])
    elif memory_mask is not None:
        mask = memory_mask
    else:
        return memory
    mask = ops.cast(mask, memory.dtype)
    for _ in range(len(memory.shape) - 2):
        mask = ops.expand_dims(mask, -1)
    return memory * mask


def mask_score(score, memory_sequence_length=None, memory_mask=None):
    """`score` with the positions past each length (or outside the mask) set to the
    dtype's minimum, so softmax, hardmax and sigmoid give them 0."""
    if memory_sequence_length is None and memory_mask is None:
        return score
    if memory_sequence_length is not None:
        if is_tensorflow():
            message = "All values in memory_sequence_length must be greater than zero."
            with tf.control_dependencies(
                [tf.debugging.assert_positive(memory_sequence_length, message=message)]
            ):
                memory_sequence_length = tf.identity(memory_sequence_length)
        memory_mask = sequence_mask(memory_sequence_length, ops.shape(score)[1])
    lowest = np.finfo(keras.backend.standardize_dtype(score.dtype)).min
    return ops.where(ops.cast(memory_mask, "bool"), score, ops.full_like(score, lowest))


@keras.saving.register_keras_serializable(package="keras_attention.seq2seq")
class AttentionMechanism(keras.layers.Layer):
    """Base class of the attention mechanisms of `AttentionWrapper` (TFA's API).

    The memory (e.g. encoder outputs, or image feature cells) is bound once, at
    construction (`memory=`) or with `setup_memory()`; `values` is the memory with
    padded positions zeroed and `keys` is `memory_layer(values)`. Each call
    `mechanism([query, state])` then scores one decoder step and returns
    `(alignments, next_state)`, both `(batch_size, max_time)`.

    A subclass creates its own weights in `build()` and implements
    `_calculate_attention(query, state)`. Variables: the subclass's own, then
    `query_layer`'s, then `memory_layer`'s (TFA's `get_weights()` order).

    Args:
        memory: Optional memory `(batch_size, max_time, ...)`; binds it now.
        probability_fn: Callable `probabilities = probability_fn(score, state)`.
        query_layer: Optional layer applied to the query.
        memory_layer: Optional layer applied to the memory to make the keys.
        memory_sequence_length: Optional lengths `(batch_size,)` of the memory.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.
    """

    def __init__(
        self,
        memory=None,
        probability_fn=None,
        query_layer=None,
        memory_layer=None,
        memory_sequence_length=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.query_layer = query_layer
        self.memory_layer = memory_layer
        self.default_probability_fn = probability_fn
        self.probability_fn = probability_fn
        self.keys = None
        self.values = None
        self.batch_size = None
        self._alignments_size = None
        self._memory_initialized = False
        self._own_weights_built = False
        self.supports_masking = True
        if memory is not None:
            self.setup_memory(memory, memory_sequence_length)

    @property
    def memory_initialized(self):
        """Whether a memory has been bound (`memory=` or `setup_memory()`)."""
        return self._memory_initialized

    @staticmethod
    def _process_probability_fn(name):
        if name not in PROBABILITY_FNS:
            raise ValueError(
                f"`probability_fn` must be one of {tuple(PROBABILITY_FNS)}. "
                f"Received: probability_fn={name!r}"
            )
        return PROBABILITY_FNS[name]

    def _build_own_weights(self):
        """Creates the mechanism's own weights once (a subclass adds them here)."""

    def build(self, input_shape=None):
        """Creates the own weights; before the memory is bound, also builds
        `memory_layer` for a memory of `input_shape`, after it `query_layer` for a
        query of `input_shape[0]` (TFA's two-phase build)."""
        if not self._own_weights_built:
            self._build_own_weights()
            self._own_weights_built = True
        first = _first_shape(input_shape)
        if first is None:
            return
        if not self._memory_initialized:
            if self.memory_layer is not None and not self.memory_layer.built:
                self.memory_layer.build(first)
        elif self.query_layer is not None and not self.query_layer.built:
            self.query_layer.build(first)

    def get_build_config(self):
        """The memory's shape (`input_shape`) and, once built, `query_layer`'s build
        config: a reloaded mechanism creates every weight before the memory comes."""
        config = super().get_build_config() or {}
        if self.query_layer is not None and self.query_layer.built:
            query = self.query_layer.get_build_config()
            if query:
                config["query_layer"] = query
        return config or None

    def build_from_config(self, config):
        self.build(config.get("input_shape"))
        query = config.get("query_layer")
        if query and self.query_layer is not None and not self.query_layer.built:
            self.query_layer.build_from_config(query)

    def setup_memory(self, memory, memory_sequence_length=None, memory_mask=None):
        """Binds `memory`: computes `values` (padding zeroed) and `keys` once.

        Args:
            memory: `(batch_size, max_time, ...)`.
            memory_sequence_length: Optional `(batch_size,)` lengths.
            memory_mask: Optional boolean `(batch_size, max_time)`; not with
                `memory_sequence_length`.
        """
        if memory_sequence_length is not None and memory_mask is not None:
            raise ValueError(
                "memory_sequence_length and memory_mask cannot be used at the same time "
                "for attention."
            )
        self.values = prepare_memory(memory, memory_sequence_length, memory_mask)
        if keras.backend.standardize_dtype(self.values.dtype) != self.compute_dtype:
            self.values = ops.cast(self.values, self.compute_dtype)
        if not self.built:
            self.build(tuple(self.values.shape))
        self.keys = self.memory_layer(self.values) if self.memory_layer else self.values
        self.batch_size = ops.shape(self.keys)[0]
        self._alignments_size = ops.shape(self.keys)[1]
        self.probability_fn = self.default_probability_fn
        if memory_mask is not None or memory_sequence_length is not None:
            unmasked = self.default_probability_fn

            def _mask_probability_fn(score, previous):
                return unmasked(mask_score(score, memory_sequence_length, memory_mask), previous)

            self.probability_fn = _mask_probability_fn
        self._memory_initialized = True

    def __call__(self, inputs, mask=None, setup_memory=False, **kwargs):
        """`mechanism([query, state])` scores a step; `mechanism(memory,
        setup_memory=True, mask=...)` (or `[memory, memory_sequence_length]`) binds
        the memory and returns `values`."""
        if setup_memory:
            if isinstance(inputs, (list, tuple)):
                if len(inputs) not in (1, 2):
                    raise ValueError(f"Expected inputs of 1 or 2 tensors. Received: {len(inputs)}")
                length = inputs[1] if len(inputs) == 2 else None
                self.setup_memory(inputs[0], length, mask)
            else:
                self.setup_memory(inputs, None, mask)
            return self.values
        if not self._memory_initialized:
            raise ValueError("Cannot query the attention before the setup of memory.")
        if not isinstance(inputs, (list, tuple)) or len(inputs) not in (2, 3):
            raise ValueError("Expected inputs `[query, state]` (and optionally the values).")
        query, state = inputs[0], inputs[1]
        if not self.built:
            self.build(None)
        return super().__call__(query, state, **kwargs)

    def call(self, query, state):
        return self._calculate_attention(query, state)

    def _calculate_attention(self, query, state):
        raise NotImplementedError(
            f"{self.__class__.__name__} must implement `_calculate_attention()`."
        )

    def compute_mask(self, *args, **kwargs):
        return None

    @property
    def alignments_size(self):
        if isinstance(self._alignments_size, int):
            return self._alignments_size
        return tf.TensorShape([None])

    @property
    def state_size(self):
        return self.alignments_size

    def initial_alignments(self, batch_size, dtype):
        """Zeros `(batch_size, max_time)`: the alignments before the first step."""
        return ops.zeros((batch_size, self._alignments_size), dtype=dtype)

    def initial_state(self, batch_size, dtype):
        """The mechanism's state before the first step (the initial alignments)."""
        return self.initial_alignments(batch_size, dtype)

    def get_config(self):
        config = super().get_config()
        for name in ("query_layer", "memory_layer"):
            layer = getattr(self, name)
            if layer is not None:
                # Without its build config: the layer builds when the memory (or the
                # first query) comes, so weights set in between match TFA's order.
                serialized = keras.saving.serialize_keras_object(layer)
                serialized.pop("build_config", None)
                config[name] = serialized
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for name in ("query_layer", "memory_layer"):
            if config.get(name) is not None:
                config[name] = keras.saving.deserialize_keras_object(config[name])
        return cls(**config)


def _first_shape(input_shape):
    """The first shape of `input_shape`: a shape, or a list of shapes (a shape read
    back from a config is a list of dimensions)."""
    if input_shape is None:
        return None
    if isinstance(input_shape, tf.TensorShape):
        return tuple(input_shape) if input_shape.rank is not None else None
    if not isinstance(input_shape, (list, tuple)) or not input_shape:
        return None
    if all(isinstance(dim, int) or dim is None for dim in input_shape):
        return tuple(input_shape)
    return _first_shape(input_shape[0])


def dirac_alignments(batch_size, alignments_size, dtype):
    """`[1, 0, ..., 0]` for every batch entry: the first alignments of monotonic attention."""
    return ops.one_hot(ops.zeros((batch_size,), dtype="int32"), alignments_size, dtype=dtype)
