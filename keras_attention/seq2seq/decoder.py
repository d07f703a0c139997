"""`Decoder`, `BaseDecoder` and `dynamic_decode`: TFA's step-wise decoding loop, one
`tf.while_loop` over a decoder's `initialize` / `step` / `finalize`."""

import abc

import keras
import tensorflow as tf
from keras import ops

from keras_attention.decoding.decoding_strategy import in_xla_context
from keras_attention.seq2seq.backend_support import require_tensorflow
from keras_attention.seq2seq.litert_tracing import is_tracing_for_litert


class Decoder(metaclass=abc.ABCMeta):
    """An RNN decoder's contract for `dynamic_decode` (TFA's `Decoder`).

    `initialize()` returns `(finished, first_inputs, initial_state)`;
    `step(time, inputs, state, training)` returns `(outputs, next_state,
    next_inputs, finished)`; `finalize(outputs, final_state, sequence_lengths)`
    is optional. `batch_size`, `output_size` and `output_dtype` describe one
    step's outputs.
    """

    @property
    def batch_size(self):
        """The batch size of the input, a scalar."""
        raise NotImplementedError

    @property
    def output_size(self):
        """The shape of one step's output, without the batch dimension."""
        raise NotImplementedError

    @property
    def output_dtype(self):
        """The dtype (structure) of one step's output."""
        raise NotImplementedError

    @abc.abstractmethod
    def initialize(self, name=None):
        """Returns `(finished, initial_inputs, initial_state)`."""
        raise NotImplementedError

    @abc.abstractmethod
    def step(self, time, inputs, state, training=None, name=None):
        """Returns `(outputs, next_state, next_inputs, finished)`."""
        raise NotImplementedError

    def finalize(self, outputs, final_state, sequence_lengths):
        raise NotImplementedError

    @property
    def tracks_own_finished(self):
        """Whether the decoder keeps finished entries finished itself (beam search)."""
        return False


class BaseDecoder(keras.layers.Layer):
    """A decoder as a Keras layer: `decoder(inputs, initial_state=..., **kwargs)` runs
    `dynamic_decode` with `initialize(inputs, initial_state=..., **kwargs)`.

    Args:
        output_time_major: Boolean, outputs `(time, batch, ...)` instead of
            `(batch, time, ...)`. Defaults to `False`.
        impute_finished: Boolean, zero the outputs and copy the state through for
            finished entries. Defaults to `False`.
        maximum_iterations: Optional limit on the number of steps.
        parallel_iterations: The `tf.while_loop`'s `parallel_iterations`.
        swap_memory: The `tf.while_loop`'s `swap_memory`.
        **kwargs: Base layer keyword arguments.
    """

    def __init__(
        self,
        output_time_major=False,
        impute_finished=False,
        maximum_iterations=None,
        parallel_iterations=32,
        swap_memory=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.output_time_major = output_time_major
        self.impute_finished = impute_finished
        self.maximum_iterations = maximum_iterations
        self.parallel_iterations = parallel_iterations
        self.swap_memory = swap_memory

    def build(self, input_shape=None):
        """The sublayers build themselves in `initialize()`."""

    def __call__(self, inputs, initial_state=None, training=None, **kwargs):
        # Keras' `Layer.__call__` refuses a state that mixes tensors and TensorArrays
        # (an `AttentionWrapper`'s `alignment_history`); decoding needs none of its
        # conversions.
        if not self.built:
            self.build(None)
        if inputs is not None:
            inputs = keras.tree.map_structure(ops.convert_to_tensor, inputs)
        return self.call(inputs, initial_state=initial_state, training=training, **kwargs)

    def call(self, inputs, initial_state=None, training=None, **kwargs):
        init_kwargs = dict(kwargs)
        init_kwargs["initial_state"] = initial_state
        return dynamic_decode(
            self,
            output_time_major=self.output_time_major,
            impute_finished=self.impute_finished,
            maximum_iterations=self.maximum_iterations,
            parallel_iterations=self.parallel_iterations,
            swap_memory=self.swap_memory,
            training=training,
            decoder_init_input=inputs,
            decoder_init_kwargs=init_kwargs,
        )

    @property
    def batch_size(self):
        raise NotImplementedError

    @property
    def output_size(self):
        raise NotImplementedError

    @property
    def output_dtype(self):
        raise NotImplementedError

    def initialize(self, inputs, initial_state=None, **kwargs):
        """Returns `(finished, initial_inputs, initial_state)`."""
        raise NotImplementedError

    def step(self, time, inputs, state, training):
        """Returns `(outputs, next_state, next_inputs, finished)`."""
        raise NotImplementedError

    def finalize(self, outputs, final_state, sequence_lengths):
        raise NotImplementedError

    @property
    def tracks_own_finished(self):
        return False

    def get_config(self):
        config = super().get_config()
        maximum_iterations = self.maximum_iterations
        if isinstance(maximum_iterations, (tf.Tensor, tf.Variable)):
            maximum_iterations = int(maximum_iterations.numpy())
        config.update(
            {
                "output_time_major": self.output_time_major,
                "impute_finished": self.impute_finished,
                "maximum_iterations": maximum_iterations,
                "parallel_iterations": self.parallel_iterations,
                "swap_memory": self.swap_memory,
            }
        )
        return config


def _prepend_batch(batch_size, shape):
    static = tf.get_static_value(batch_size) if isinstance(batch_size, tf.Tensor) else batch_size
    if static is None:
        return tf.concat(([batch_size], shape), axis=0)
    return [static] + list(shape)


def transpose_batch_time(tensor):
    """Swaps the first two axes of a tensor of rank 2 or more."""
    if tensor.shape.rank is not None and tensor.shape.rank < 2:
        return tensor
    perm = tf.concat(([1, 0], tf.range(2, tf.rank(tensor))), axis=0)
    return tf.transpose(tensor, perm)


def _output_arrays(decoder, maximum_iterations, tflite, fixed_size):
    """One `TensorArray` per output, written one step at a time (flat for
    `enable_tflite_convertible`; of `maximum_iterations` elements with `fixed_size`)."""

    def create(shape, dtype):
        shape = tf.TensorShape(shape)
        if tflite:
            return tf.TensorArray(
                dtype=dtype,
                size=maximum_iterations,
                dynamic_size=False,
                element_shape=(1,) if shape.ndims == 0 else shape,
            )
        static_batch = tf.get_static_value(tf.convert_to_tensor(decoder.batch_size))
        return tf.TensorArray(
            dtype=dtype,
            size=maximum_iterations if fixed_size else 0,
            dynamic_size=not fixed_size,
            element_shape=tf.TensorShape([static_batch]).concatenate(shape),
        )

    return tf.nest.map_structure(create, decoder.output_size, decoder.output_dtype)


def dynamic_decode(
    decoder,
    output_time_major=False,
    impute_finished=False,
    maximum_iterations=None,
    parallel_iterations=32,
    swap_memory=False,
    training=None,
    **kwargs,
):
    """Runs `decoder` step by step in one `tf.while_loop` until every entry has finished
    or `maximum_iterations` steps have run (TFA's `dynamic_decode`).

    Args:
        decoder: A `Decoder` or `BaseDecoder`.
        output_time_major: Boolean, time-major outputs. Defaults to `False`.
        impute_finished: Boolean, zero finished entries' outputs and keep their state.
        maximum_iterations: Optional scalar limit on the number of steps.
        parallel_iterations: The `tf.while_loop`'s `parallel_iterations`.
        swap_memory: The `tf.while_loop`'s `swap_memory`.
        training: Passed to `decoder.step`.
        **kwargs: Keyword arguments as TFA's: `scope` (optional name scope),
            `enable_tflite_convertible` (boolean, fixed-size flat `TensorArray`s for
            LiteRT conversion: batch size 1 and `maximum_iterations` required), and
            `decoder_init_input` / `decoder_init_kwargs` for a `BaseDecoder`'s
            `initialize`.

    Returns:
        `(final_outputs, final_state, final_sequence_lengths)`.
    """
    require_tensorflow(
        f"dynamic_decode (decoding with {type(decoder).__name__})",
        "a tf.while_loop over TensorArrays",
    )
    scope = kwargs.pop("scope", None)
    enable_tflite_convertible = kwargs.pop("enable_tflite_convertible", False)
    with tf.name_scope(scope or "decoder"):
        is_xla = in_xla_context()
        if maximum_iterations is None and is_xla:
            raise ValueError("maximum_iterations is required for XLA compilation.")
        if maximum_iterations is not None:
            maximum_iterations = tf.convert_to_tensor(
                maximum_iterations, dtype=tf.int32, name="maximum_iterations"
            )
            if maximum_iterations.shape.ndims != 0:
                raise ValueError("maximum_iterations must be a scalar")
            tf.debugging.assert_greater(
                maximum_iterations, 0, message="maximum_iterations should be greater than 0"
            )
        if hasattr(decoder, "run_search"):
            # A decoder that runs keras_attention.decoding's one loop itself
            # (`BeamSearchDecoder`).
            return decoder.run_search(
                maximum_iterations,
                output_time_major,
                training,
                kwargs.pop("decoder_init_input", None),
                kwargs.pop("decoder_init_kwargs", {}),
            )
        if isinstance(decoder, Decoder):
            initial_finished, initial_inputs, initial_state = decoder.initialize()
        else:
            initial_finished, initial_inputs, initial_state = decoder.initialize(
                kwargs.pop("decoder_init_input", None), **kwargs.pop("decoder_init_kwargs", {})
            )
        if enable_tflite_convertible:
            tf.debugging.assert_equal(
                decoder.batch_size, 1, message="TFLite conversion requires a batch size of 1"
            )

        def zeros(shape, dtype):
            value = tf.zeros(_prepend_batch(decoder.batch_size, tf.TensorShape(shape)), dtype)
            return tf.reshape(value, [-1]) if enable_tflite_convertible else value

        zero_outputs = tf.nest.map_structure(zeros, decoder.output_size, decoder.output_dtype)
        if maximum_iterations is not None:
            initial_finished = tf.logical_or(initial_finished, 0 >= maximum_iterations)
        initial_sequence_lengths = tf.zeros_like(initial_finished, dtype=tf.int32)
        # XLA needs arrays of a fixed size and element shape; so does LiteRT's converter,
        # to lower them to builtin ops, from a static `maximum_iterations` and batch size
        # (the outputs are then cut to the steps run, as a growing array's are).
        # Elsewhere the arrays grow: they hold only the steps run.
        fixed_size = is_xla or (
            is_tracing_for_litert()
            and tf.get_static_value(maximum_iterations) is not None
            and tf.get_static_value(tf.convert_to_tensor(decoder.batch_size)) is not None
        )
        initial_outputs_ta = _output_arrays(
            decoder, maximum_iterations, enable_tflite_convertible, fixed_size=fixed_size
        )

        def condition(time, outputs_ta, state, inputs, finished, sequence_lengths):
            return tf.logical_not(tf.reduce_all(finished))

        def body(time, outputs_ta, state, inputs, finished, sequence_lengths):
            next_outputs, decoder_state, next_inputs, decoder_finished = decoder.step(
                time, inputs, state, training
            )
            lengths_from_state = False
            if decoder.tracks_own_finished:
                next_finished = decoder_finished
                lengths = getattr(decoder_state, "lengths", None)
                if lengths is not None:
                    lengths_from_state = True
                    sequence_lengths = tf.cast(lengths, tf.int32)
            else:
                next_finished = tf.logical_or(decoder_finished, finished)
            if lengths_from_state:
                next_sequence_lengths = sequence_lengths
            else:
                next_sequence_lengths = tf.where(
                    tf.logical_not(finished),
                    tf.fill(tf.shape(sequence_lengths), time + 1),
                    sequence_lengths,
                )
            tf.nest.assert_same_structure(state, decoder_state)
            tf.nest.assert_same_structure(outputs_ta, next_outputs)
            tf.nest.assert_same_structure(inputs, next_inputs)
            if impute_finished:

                def zero_out_finished(out, zero):
                    if finished.shape.rank < zero.shape.rank:
                        where = tf.broadcast_to(tf.expand_dims(finished, -1), tf.shape(zero))
                        return tf.where(where, zero, out)
                    return tf.where(finished, zero, out)

                def maybe_copy_state(new, current):
                    if isinstance(current, tf.TensorArray):
                        return new
                    new.set_shape(current.shape)
                    if new.shape.ndims == 0:
                        return new
                    where = tf.broadcast_to(tf.expand_dims(finished, -1), tf.shape(new))
                    return tf.where(where, current, new)

                emit = tf.nest.map_structure(zero_out_finished, next_outputs, zero_outputs)
                next_state = tf.nest.map_structure(maybe_copy_state, decoder_state, state)
            else:
                emit, next_state = next_outputs, decoder_state
            if enable_tflite_convertible:
                emit = tf.nest.map_structure(lambda x: tf.reshape(x, [-1]), emit)
            outputs_ta = tf.nest.map_structure(
                lambda ta, out: ta.write(time, out), outputs_ta, emit
            )
            return (
                time + 1,
                outputs_ta,
                next_state,
                next_inputs,
                next_finished,
                next_sequence_lengths,
            )

        result = tf.while_loop(
            condition,
            body,
            loop_vars=(
                tf.constant(0, dtype=tf.int32),
                initial_outputs_ta,
                initial_state,
                initial_inputs,
                initial_finished,
                initial_sequence_lengths,
            ),
            parallel_iterations=parallel_iterations,
            maximum_iterations=maximum_iterations,
            swap_memory=swap_memory,
        )
        final_state, final_sequence_lengths = result[2], result[5]
        final_outputs = tf.nest.map_structure(lambda ta: ta.stack(), result[1])
        if fixed_size and not is_xla and not enable_tflite_convertible:
            final_outputs = tf.nest.map_structure(lambda x: x[: result[0]], final_outputs)
        try:
            final_outputs, final_state = decoder.finalize(
                final_outputs, final_state, final_sequence_lengths
            )
        except NotImplementedError:
            pass
        if not output_time_major:
            if enable_tflite_convertible:
                final_outputs = tf.nest.map_structure(lambda x: tf.expand_dims(x, 1), final_outputs)
            final_outputs = tf.nest.map_structure(transpose_batch_time, final_outputs)
    return final_outputs, final_state, final_sequence_lengths
