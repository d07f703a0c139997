"""The `Sampler` contract of `BasicDecoder`, the samplers built from callables, and
the sampling helpers (TFA's `tfa.seq2seq.sampler`)."""

import abc

import keras
import tensorflow as tf


class Sampler(metaclass=abc.ABCMeta):
    """How `BasicDecoder` turns a step's outputs into sample ids and next inputs.

    `initialize(inputs, **kwargs)` returns `(finished, next_inputs)`;
    `sample(time, outputs, state)` returns the sample ids;
    `next_inputs(time, outputs, state, sample_ids)` returns
    `(finished, next_inputs, next_state)`.
    """

    @abc.abstractmethod
    def initialize(self, inputs, **kwargs):
        """Returns `(initial_finished, initial_inputs)`."""

    @abc.abstractmethod
    def sample(self, time, outputs, state):
        """Returns the sample ids of a step."""

    @abc.abstractmethod
    def next_inputs(self, time, outputs, state, sample_ids):
        """Returns `(finished, next_inputs, next_state)`."""

    @property
    @abc.abstractmethod
    def batch_size(self):
        """The batch size, known after `initialize()`."""

    @property
    @abc.abstractmethod
    def sample_ids_shape(self):
        """The shape of one entry's sample ids (`TensorShape([])` for token ids)."""

    @property
    @abc.abstractmethod
    def sample_ids_dtype(self):
        """The dtype of the sample ids."""

    def get_config(self):
        """The constructor's arguments (a Keras layer as `embedding_fn`), for
        `keras.saving`; a sampler built from other callables raises
        `NotImplementedError`."""
        raise NotImplementedError(
            f"A {type(self).__name__} holds callables and cannot be serialized: pass it "
            "again when rebuilding the decoder."
        )

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if config.get("embedding_fn") is not None:
            config["embedding_fn"] = keras.saving.deserialize_keras_object(config["embedding_fn"])
        return cls(**config)


def serialize_embedding_fn(sampler, embedding_fn):
    """`embedding_fn` for a sampler's config: a serialized Keras layer, or `None`."""
    if embedding_fn is None:
        return None
    if isinstance(embedding_fn, keras.layers.Layer):
        return keras.saving.serialize_keras_object(embedding_fn)
    raise NotImplementedError(
        f"A {type(sampler).__name__} whose embedding_fn is not a Keras layer cannot be "
        "serialized: pass an Embedding layer, or the sampler again when rebuilding the decoder."
    )


def serialize_value(sampling_probability):
    """A number held as a tensor or variable (a probability, a temperature) as a float
    or a list of floats."""
    return keras.ops.convert_to_numpy(sampling_probability).tolist()


class _BatchSizeSampler(Sampler):
    """A sampler whose batch size is set by `initialize()`."""

    _batch_size = None

    @property
    def batch_size(self):
        if self._batch_size is None:
            raise ValueError("batch_size accessed before initialize was called")
        return self._batch_size


class CustomSampler(_BatchSizeSampler):
    """A sampler from three callables (TFA's `CustomSampler`).

    Args:
        initialize_fn: `(inputs, **kwargs) -> (finished, next_inputs)`.
        sample_fn: `(time, outputs, state) -> sample_ids`.
        next_inputs_fn: `(time, outputs, state, sample_ids) -> (finished,
            next_inputs, next_state)`.
        sample_ids_shape: Shape of one entry's sample ids. Defaults to `[]`.
        sample_ids_dtype: Dtype of the sample ids. Defaults to `int32`.
    """

    def __init__(
        self,
        initialize_fn,
        sample_fn,
        next_inputs_fn,
        sample_ids_shape=None,
        sample_ids_dtype=None,
    ):
        self._initialize_fn = initialize_fn
        self._sample_fn = sample_fn
        self._next_inputs_fn = next_inputs_fn
        self._batch_size = None
        self._sample_ids_shape = tf.TensorShape(sample_ids_shape or [])
        self._sample_ids_dtype = sample_ids_dtype or tf.int32

    @property
    def sample_ids_shape(self):
        return self._sample_ids_shape

    @property
    def sample_ids_dtype(self):
        return self._sample_ids_dtype

    def initialize(self, inputs, **kwargs):
        finished, next_inputs = self._initialize_fn(inputs, **kwargs)
        if self._batch_size is None:
            self._batch_size = tf.size(finished)
        return finished, next_inputs

    def sample(self, time, outputs, state):
        return self._sample_fn(time=time, outputs=outputs, state=state)

    def next_inputs(self, time, outputs, state, sample_ids):
        return self._next_inputs_fn(time=time, outputs=outputs, state=state, sample_ids=sample_ids)


class InferenceSampler(_BatchSizeSampler):
    """A sampler for inference with a sampling function of one's own (TFA's
    `InferenceSampler`), e.g. multi-label outputs.

    Args:
        sample_fn: `outputs -> sample_ids`.
        sample_shape: Shape of one entry's sample ids.
        sample_dtype: Dtype of the sample ids.
        end_fn: `sample_ids -> finished` (boolean `(batch_size,)`).
        next_inputs_fn: Optional `sample_ids -> next_inputs`; the ids themselves if
            `None`.
    """

    def __init__(self, sample_fn, sample_shape, sample_dtype, end_fn, next_inputs_fn=None):
        self.sample_fn = sample_fn
        self.sample_shape = tf.TensorShape(sample_shape)
        self.sample_dtype = sample_dtype
        self.end_fn = end_fn
        self.next_inputs_fn = next_inputs_fn
        self._batch_size = None

    @property
    def sample_ids_shape(self):
        return self.sample_shape

    @property
    def sample_ids_dtype(self):
        return self.sample_dtype

    def initialize(self, start_inputs):
        self.start_inputs = tf.convert_to_tensor(start_inputs, name="start_inputs")
        self._batch_size = tf.shape(start_inputs)[0]
        return tf.tile([False], [self._batch_size]), self.start_inputs

    def sample(self, time, outputs, state):
        return self.sample_fn(outputs)

    def next_inputs(self, time, outputs, state, sample_ids):
        next_inputs = sample_ids if self.next_inputs_fn is None else self.next_inputs_fn(sample_ids)
        return self.end_fn(sample_ids), next_inputs, state


def _call_sampler(sample_n_fn, sample_shape):
    """Reshapes `sample_n_fn(n)`'s draws to `sample_shape + batch_event_shape`."""
    sample_shape = tf.convert_to_tensor(sample_shape, dtype=tf.int32, name="sample_shape")
    pad = tf.cast(tf.equal(tf.rank(sample_shape), 0), tf.int32)
    sample_shape = tf.reshape(
        sample_shape, tf.pad(tf.shape(sample_shape), paddings=[[pad, 0]], constant_values=1)
    )
    samples = sample_n_fn(tf.reduce_prod(sample_shape))
    final_shape = tf.concat([sample_shape, tf.shape(samples)[1:]], 0)
    return tf.reshape(samples, final_shape)


def bernoulli_sample(probs=None, logits=None, dtype=tf.int32, sample_shape=(), seed=None):
    """Independent Bernoulli draws with probabilities `probs` (or `sigmoid(logits)`)."""
    if probs is None:
        probs = tf.sigmoid(logits, name="probs")
    else:
        probs = tf.convert_to_tensor(probs, name="probs")
    batch_shape = tf.shape(probs)

    def sample_n(n):
        uniform = tf.random.uniform(tf.concat([[n], batch_shape], 0), seed=seed, dtype=probs.dtype)
        return tf.cast(tf.less(uniform, probs), dtype)

    return _call_sampler(sample_n, sample_shape)


def categorical_sample(logits, dtype=tf.int32, sample_shape=(), seed=None):
    """Categorical draws from `logits` `(..., num_classes)`."""
    logits = tf.convert_to_tensor(logits, name="logits")
    event_size = tf.shape(logits)[-1]
    batch_shape = tf.shape(logits)[:-1]

    def sample_n(n):
        logits_2d = logits if logits.shape.ndims == 2 else tf.reshape(logits, [-1, event_size])
        sample_dtype = tf.int64 if logits.dtype.size > 4 else tf.int32
        draws = tf.random.categorical(logits_2d, n, dtype=sample_dtype, seed=seed)
        draws = tf.reshape(tf.transpose(draws), tf.concat([[n], batch_shape], 0))
        return tf.cast(draws, dtype)

    return _call_sampler(sample_n, sample_shape)


def unstack_ta(inp):
    """`inp` `(time, ...)` as a `TensorArray` of its steps."""
    return tf.TensorArray(
        dtype=inp.dtype, size=tf.shape(inp)[0], element_shape=inp.shape[1:]
    ).unstack(inp)


def check_sequence_is_right_padded(mask, time_major):
    """An assertion that the boolean `mask` is True then False along time in every row."""
    if time_major:
        mask = tf.transpose(mask)
    sequence_length = tf.math.reduce_sum(tf.cast(mask, tf.int32), axis=1)
    right_padded = tf.sequence_mask(sequence_length, maxlen=tf.shape(mask)[1], dtype=tf.bool)
    condition = tf.math.reduce_all(tf.math.equal(mask, right_padded))
    return tf.Assert(condition, ["The input sequence should be right padded."])


_check_sequence_is_right_padded = check_sequence_is_right_padded
