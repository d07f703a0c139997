"""`BasicDecoder`: an RNN cell, an optional output layer and a `Sampler`, decoded by
`dynamic_decode` (TFA's API)."""

import collections

import keras
import tensorflow as tf

from keras_attention.seq2seq.backend_support import is_tensorflow
from keras_attention.seq2seq.decoder import BaseDecoder
from keras_attention.seq2seq.unrolled_decode import unrolled_decode


class BasicDecoderOutput(collections.namedtuple("BasicDecoderOutput", ("rnn_output", "sample_id"))):
    """One step's (or, stacked, every step's) outputs of a `BasicDecoder`.

    Attributes:
        rnn_output: The cell's output (through the output layer, if any).
        sample_id: The sampler's ids.
    """


@keras.saving.register_keras_serializable(package="keras_attention.seq2seq")
class BasicDecoder(BaseDecoder):
    """A decoder that steps `cell`, applies `output_layer` and asks `sampler` for the
    sample ids and next inputs (TFA's `BasicDecoder`).

    `decoder(inputs, initial_state=..., **sampler_kwargs)` returns
    `(BasicDecoderOutput, final_state, sequence_lengths)`; `inputs` and the keyword
    arguments go to `sampler.initialize` (e.g. `sequence_length=` for
    `TrainingSampler`, `start_tokens=` and `end_token=` for
    `GreedyEmbeddingSampler`).

    Variables, in order: the cell's, then the output layer's.

    On JAX and PyTorch it decodes with `TrainingSampler` (teacher forcing) in an
    unrolled loop over the inputs' time steps (`unrolled_decode`); the other samplers
    need TensorFlow's `dynamic_decode`.

    `get_config` holds the cell, the sampler and the output layer; a sampler built from
    callables (`CustomSampler`, `InferenceSampler`, an `embedding_fn` that is not a
    Keras layer) has no config. A sampler's embedding layer is saved with the decoder
    in a `.keras` file, though its weights are not in `weights`.

    Args:
        cell: An RNN cell (e.g. an `AttentionWrapper`).
        sampler: A `Sampler`.
        output_layer: Optional layer applied to the cell's output (e.g. the
            vocabulary projection).
        **kwargs: `BaseDecoder` arguments (`output_time_major`, `impute_finished`,
            `maximum_iterations`, ...) and base layer keyword arguments.

    Example:

    >>> import numpy as np
    >>> from keras_attention.seq2seq import TrainingSampler
    >>> cell = keras.layers.LSTMCell(8)
    >>> decoder = BasicDecoder(cell, TrainingSampler())
    >>> inputs = np.random.rand(2, 4, 3).astype("float32")
    >>> state = cell.get_initial_state(batch_size=2)
    >>> outputs, _, lengths = decoder(inputs, initial_state=state, sequence_length=[4, 2])
    >>> outputs.rnn_output.shape, lengths.numpy().tolist()
    (TensorShape([2, 4, 8]), [4, 2])
    """

    def __init__(self, cell, sampler, output_layer=None, **kwargs):
        if "state_size" not in dir(cell) or not callable(cell):  # no property evaluated
            raise TypeError(f"`cell` must be an RNN cell. Received: cell={cell!r}")
        super().__init__(**kwargs)
        self.cell = cell
        self.sampler = sampler
        self.output_layer = output_layer
        self._cell_dtype = None

    @property
    def _sampler_embedding(self):
        # The sampler's embedding layer, for `keras.saving`'s walk over attributes
        # (its weights are saved and loaded), without adding it to `weights`.
        layer = getattr(self.sampler, "_configured_embedding_fn", None)
        return layer if isinstance(layer, keras.layers.Layer) else None

    def get_config(self):
        config = super().get_config()
        serialize = keras.saving.serialize_keras_object
        config.update(
            {
                "cell": serialize(self.cell),
                "sampler": serialize(self.sampler),
                "output_layer": serialize(self.output_layer),
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("cell", "sampler", "output_layer"):
            if config.get(key) is not None:
                config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)

    def call(self, inputs, initial_state=None, training=None, **kwargs):
        if is_tensorflow():
            return super().call(inputs, initial_state=initial_state, training=training, **kwargs)
        return unrolled_decode(self, inputs, initial_state, training, kwargs)

    def _build_sublayers(self, inputs):
        """Creates the cell's and the output layer's variables before the loop."""
        depth = inputs.shape[-1]
        if not self.cell.built:
            self.cell.build((None, depth))
        if self.output_layer is not None and not self.output_layer.built:
            self.output_layer.build((None,) + tuple(self._cell_output_shape()))

    def _cell_output_shape(self):
        size = getattr(self.cell, "output_size", None)
        if size is None:
            state_size = self.cell.state_size
            size = state_size[0] if isinstance(state_size, (list, tuple)) else state_size
        return tf.TensorShape(size)

    def initialize(self, inputs, initial_state=None, **kwargs):
        """Returns `(finished, first_inputs, initial_state)` (`sampler.initialize`
        with `inputs` and `kwargs`)."""
        self._cell_dtype = keras.tree.flatten(initial_state)[0].dtype
        finished, first_inputs = self.sampler.initialize(inputs, **kwargs)
        self._build_sublayers(keras.tree.flatten(first_inputs)[0])
        return finished, first_inputs, initial_state

    @property
    def batch_size(self):
        return self.sampler.batch_size

    def _rnn_output_size(self):
        size = self._cell_output_shape()
        if self.output_layer is None:
            return size
        output_shape = self.output_layer.compute_output_shape((None,) + tuple(size))
        return tf.TensorShape(output_shape[1:])

    @property
    def output_size(self):
        return BasicDecoderOutput(
            rnn_output=self._rnn_output_size(), sample_id=self.sampler.sample_ids_shape
        )

    @property
    def output_dtype(self):
        dtype = self._cell_dtype or tf.as_dtype(self.compute_dtype)
        return BasicDecoderOutput(
            tf.nest.map_structure(lambda _: dtype, self._rnn_output_size()),
            self.sampler.sample_ids_dtype,
        )

    def step(self, time, inputs, state, training=None):
        """Returns `(BasicDecoderOutput, next_state, next_inputs, finished)`."""
        cell_outputs, cell_state = self.cell(inputs, state, training=training)
        cell_state = keras.tree.pack_sequence_as(state, keras.tree.flatten(cell_state))
        if self.output_layer is not None:
            cell_outputs = self.output_layer(cell_outputs)
        sample_ids = self.sampler.sample(time=time, outputs=cell_outputs, state=cell_state)
        finished, next_inputs, next_state = self.sampler.next_inputs(
            time=time, outputs=cell_outputs, state=cell_state, sample_ids=sample_ids
        )
        return BasicDecoderOutput(cell_outputs, sample_ids), next_state, next_inputs, finished
