"""Samplers for training: teacher forcing, and scheduled sampling (Bengio et al., 2015)."""

import keras
import tensorflow as tf
from keras import ops

from keras_attention.seq2seq.backend_support import is_tensorflow, require_tensorflow
from keras_attention.seq2seq.decoder import transpose_batch_time
from keras_attention.seq2seq.sampling import (
    _BatchSizeSampler,
    bernoulli_sample,
    categorical_sample,
    check_sequence_is_right_padded,
    serialize_embedding_fn,
    serialize_value,
    unstack_ta,
)

_register = keras.saving.register_keras_serializable(package="keras_attention.seq2seq")


def _probability(sampling_probability):
    if not isinstance(sampling_probability, tf.Variable):
        sampling_probability = tf.convert_to_tensor(
            sampling_probability, name="sampling_probability"
        )
    if sampling_probability.shape.ndims not in (0, 1):
        raise ValueError(
            "sampling_probability must be either a scalar or a vector. "
            f"Received: shape={sampling_probability.shape}"
        )
    return sampling_probability


@_register
class TrainingSampler(_BatchSizeSampler):
    """Teacher forcing (TFA's `TrainingSampler`): step `t + 1`'s input is
    `inputs[:, t + 1]`; an entry finishes after its length. Sample ids are the
    argmax of the outputs.

    `initialize(inputs, sequence_length=None, mask=None)`: the lengths, or a
    right-padded boolean mask, or neither (every entry runs the full length).

    On JAX and PyTorch the inputs stay one tensor read at Python-integer steps
    (`max_time` of them) by `BasicDecoder`'s unrolled loop, and the mask's right
    padding is not checked.

    Args:
        time_major: Boolean, `inputs` are `(time, batch, ...)`. Defaults to `False`.
    """

    def __init__(self, time_major=False):
        self.time_major = time_major
        self._batch_size = None

    def get_config(self):
        return {"time_major": self.time_major}

    @property
    def sample_ids_shape(self):
        return tf.TensorShape([])

    @property
    def sample_ids_dtype(self):
        return tf.int32

    def initialize(self, inputs, sequence_length=None, mask=None):
        if sequence_length is not None and mask is not None:
            raise ValueError("sequence_length and mask can't be provided at the same time.")
        if not is_tensorflow():
            return self._initialize_unrolled(inputs, sequence_length, mask)
        inputs = tf.nest.map_structure(tf.convert_to_tensor, inputs)
        self.inputs = inputs
        if not self.time_major:
            inputs = tf.nest.map_structure(transpose_batch_time, inputs)
        self._batch_size = tf.shape(tf.nest.flatten(inputs)[0])[1]
        self.input_tas = tf.nest.map_structure(unstack_ta, inputs)
        if sequence_length is not None:
            self.sequence_length = tf.convert_to_tensor(sequence_length, name="sequence_length")
            if self.sequence_length.shape.ndims != 1:
                raise ValueError(
                    "Expected sequence_length to be a vector. "
                    f"Received: shape={self.sequence_length.shape}"
                )
        elif mask is not None:
            mask = tf.convert_to_tensor(mask)
            if mask.shape.ndims != 2:
                raise ValueError(f"Expected mask to be a 2D tensor. Received: shape={mask.shape}")
            if not mask.dtype.is_bool:
                raise ValueError(f"Expected mask to be a boolean tensor. Received: {mask.dtype!r}")
            axis = 0 if self.time_major else 1
            with tf.control_dependencies([check_sequence_is_right_padded(mask, self.time_major)]):
                self.sequence_length = tf.math.reduce_sum(tf.cast(mask, tf.int32), axis=axis)
        else:
            max_length = tf.shape(tf.nest.flatten(inputs)[0])[0]
            self.sequence_length = tf.fill([self.batch_size], max_length)
        self.zero_inputs = tf.nest.map_structure(lambda inp: tf.zeros_like(inp[0, :]), inputs)
        finished = tf.equal(0, self.sequence_length)
        next_inputs = tf.cond(
            tf.reduce_all(finished),
            lambda: self.zero_inputs,
            lambda: tf.nest.map_structure(lambda inp: inp.read(0), self.input_tas),
        )
        return finished, next_inputs

    def _initialize_unrolled(self, inputs, sequence_length, mask):
        """`initialize` on JAX and PyTorch: `max_time` (a Python integer) and the
        first step's inputs, read from the batch-major or time-major tensors."""
        self.inputs = keras.tree.map_structure(ops.convert_to_tensor, inputs)
        time_axis = 0 if self.time_major else 1
        first = keras.tree.flatten(self.inputs)[0]
        self._batch_size = ops.shape(first)[1 - time_axis]
        self.max_time = ops.shape(first)[time_axis]
        if sequence_length is not None:
            lengths = ops.convert_to_tensor(sequence_length, dtype="int32")
            if len(lengths.shape) != 1:
                raise ValueError(
                    f"Expected sequence_length to be a vector. Received: shape={lengths.shape}"
                )
        elif mask is not None:
            lengths = ops.sum(ops.cast(mask, "int32"), axis=time_axis)
        else:
            lengths = ops.full((self._batch_size,), self.max_time, dtype="int32")
        self.sequence_length = lengths
        self.zero_inputs = keras.tree.map_structure(ops.zeros_like, self._read_step(0))
        return ops.equal(lengths, 0), self._read_step(0)

    def _read_step(self, time):
        axis = 0 if self.time_major else 1
        return keras.tree.map_structure(lambda inp: ops.take(inp, time, axis=axis), self.inputs)

    def sample(self, time, outputs, state):
        return ops.cast(ops.argmax(outputs, axis=-1), "int32")

    def next_inputs(self, time, outputs, state, sample_ids):
        next_time = time + 1
        finished = next_time >= self.sequence_length
        if not is_tensorflow():  # Python-integer steps (`_initialize_unrolled`)
            last = next_time >= self.max_time
            return finished, self.zero_inputs if last else self._read_step(next_time), state
        next_inputs = tf.cond(
            tf.reduce_all(finished),
            lambda: self.zero_inputs,
            lambda: tf.nest.map_structure(lambda inp: inp.read(next_time), self.input_tas),
        )
        return finished, next_inputs, state


def _merge(where_sampling, sampled, where_not_sampling, not_sampled, shape):
    """Scatters the sampled rows and the others back into one `(batch, ...)` tensor."""
    return tf.scatter_nd(indices=where_sampling, updates=sampled, shape=shape) + tf.scatter_nd(
        indices=where_not_sampling, updates=not_sampled, shape=shape
    )


@_register
class ScheduledEmbeddingTrainingSampler(TrainingSampler):
    """Scheduled sampling over embeddings (TFA's
    `ScheduledEmbeddingTrainingSampler`): with probability `sampling_probability` an
    entry's next input is the embedding of a token drawn from its outputs (its
    sample id), else the teacher-forced input (sample id `-1`).

    `initialize(inputs, sequence_length=None, mask=None, embedding=None)`.

    Args:
        sampling_probability: Scalar or `(batch_size,)` probability of sampling.
        embedding_fn: Optional callable `ids -> embeddings`; else `embedding=` in
            `initialize`.
        time_major: Boolean, time-major inputs.
        seed: Optional seed of the token draws.
        scheduling_seed: Optional seed of the sampling decisions.
    """

    def __init__(
        self,
        sampling_probability,
        embedding_fn=None,
        time_major=False,
        seed=None,
        scheduling_seed=None,
    ):
        self.embedding_fn = embedding_fn
        self._configured_embedding_fn = embedding_fn
        self.sampling_probability = _probability(sampling_probability)
        self.seed = seed
        self.scheduling_seed = scheduling_seed
        super().__init__(time_major=time_major)

    def get_config(self):
        return {
            "sampling_probability": serialize_value(self.sampling_probability),
            "embedding_fn": serialize_embedding_fn(self, self._configured_embedding_fn),
            "time_major": self.time_major,
            "seed": self.seed,
            "scheduling_seed": self.scheduling_seed,
        }

    def initialize(self, inputs, sequence_length=None, mask=None, embedding=None):
        require_tensorflow(type(self).__name__, "tf.random and dynamic_decode's tf.while_loop")
        if self.embedding_fn is None:
            if embedding is None:
                raise ValueError(
                    "embedding is required as a keyword argument for "
                    "ScheduledEmbeddingTrainingSampler"
                )
            self.embedding_fn = lambda ids: tf.nn.embedding_lookup(embedding, ids)
        return super().initialize(inputs, sequence_length=sequence_length, mask=mask)

    def sample(self, time, outputs, state):
        select_sample = bernoulli_sample(
            probs=self.sampling_probability,
            dtype=tf.bool,
            sample_shape=self.batch_size,
            seed=self.scheduling_seed,
        )
        return tf.where(
            select_sample,
            categorical_sample(logits=outputs, seed=self.seed),
            tf.fill([self.batch_size], -1),
        )

    def next_inputs(self, time, outputs, state, sample_ids):
        finished, base_next_inputs, state = super().next_inputs(time, outputs, state, sample_ids)

        def maybe_sample():
            where_sampling = tf.cast(tf.where(sample_ids > -1), tf.int32)
            where_not_sampling = tf.cast(tf.where(sample_ids <= -1), tf.int32)
            inputs_not_sampling = tf.gather_nd(base_next_inputs, where_not_sampling)
            sampled = self.embedding_fn(tf.gather_nd(sample_ids, where_sampling))
            sampled = tf.cast(sampled, inputs_not_sampling.dtype)
            return _merge(
                where_sampling,
                sampled,
                where_not_sampling,
                inputs_not_sampling,
                tf.shape(base_next_inputs),
            )

        next_inputs = tf.cond(tf.reduce_all(finished), lambda: base_next_inputs, maybe_sample)
        return finished, next_inputs, state


@_register
class ScheduledOutputTrainingSampler(TrainingSampler):
    """Scheduled sampling over outputs (TFA's `ScheduledOutputTrainingSampler`): with
    probability `sampling_probability` an entry's next input is its output (through
    `next_inputs_fn`), with the auxiliary inputs of the next step appended.

    `initialize(inputs, sequence_length=None, mask=None, auxiliary_inputs=None)`.

    Args:
        sampling_probability: Scalar or `(batch_size,)` probability of sampling.
        time_major: Boolean, time-major inputs.
        seed: Optional seed of the sampling decisions.
        next_inputs_fn: Optional callable `outputs -> next inputs`.
    """

    def __init__(self, sampling_probability, time_major=False, seed=None, next_inputs_fn=None):
        self.sampling_probability = _probability(sampling_probability)
        self.seed = seed
        self.next_inputs_fn = next_inputs_fn
        super().__init__(time_major=time_major)

    def get_config(self):
        if self.next_inputs_fn is not None:
            return super(TrainingSampler, self).get_config()  # raises: a callable
        return {
            "sampling_probability": serialize_value(self.sampling_probability),
            "time_major": self.time_major,
            "seed": self.seed,
        }

    def initialize(self, inputs, sequence_length=None, mask=None, auxiliary_inputs=None):
        require_tensorflow(type(self).__name__, "tf.random and dynamic_decode's tf.while_loop")
        if auxiliary_inputs is None:
            maybe_concatenated_inputs = inputs
            self._auxiliary_input_tas = None
        else:
            inputs = tf.convert_to_tensor(inputs)
            auxiliary_inputs = tf.convert_to_tensor(auxiliary_inputs)
            maybe_concatenated_inputs = tf.concat((inputs, auxiliary_inputs), -1)
            if not self.time_major:
                auxiliary_inputs = transpose_batch_time(auxiliary_inputs)
            self._auxiliary_input_tas = unstack_ta(auxiliary_inputs)
        return super().initialize(
            maybe_concatenated_inputs, sequence_length=sequence_length, mask=mask
        )

    def sample(self, time, outputs, state):
        return bernoulli_sample(
            probs=self.sampling_probability, sample_shape=self.batch_size, seed=self.seed
        )

    def _with_auxiliary_inputs(self, time, outputs, indices=None):
        if self._auxiliary_input_tas is None:
            return outputs
        auxiliary_inputs = self._auxiliary_input_tas.read(time + 1)
        if indices is not None:
            auxiliary_inputs = tf.gather_nd(auxiliary_inputs, indices)
        return tf.concat((outputs, auxiliary_inputs), -1)

    def next_inputs(self, time, outputs, state, sample_ids):
        finished, base_next_inputs, state = super().next_inputs(time, outputs, state, sample_ids)
        sample_ids = tf.cast(sample_ids, tf.bool)

        def maybe_sample():
            if self.next_inputs_fn is None:
                return tf.where(
                    tf.broadcast_to(tf.expand_dims(sample_ids, -1), tf.shape(base_next_inputs)),
                    self._with_auxiliary_inputs(time, outputs),
                    base_next_inputs,
                )
            where_sampling = tf.cast(tf.where(sample_ids), tf.int32)
            where_not_sampling = tf.cast(tf.where(tf.logical_not(sample_ids)), tf.int32)
            sampled = self._with_auxiliary_inputs(
                time,
                self.next_inputs_fn(tf.gather_nd(outputs, where_sampling)),
                where_sampling,
            )
            return _merge(
                where_sampling,
                sampled,
                where_not_sampling,
                tf.gather_nd(base_next_inputs, where_not_sampling),
                tf.shape(base_next_inputs),
            )

        no_samples = tf.logical_not(tf.reduce_any(sample_ids))
        next_inputs = tf.cond(
            tf.logical_or(tf.reduce_all(finished), no_samples),
            lambda: base_next_inputs,
            maybe_sample,
        )
        return finished, next_inputs, state
