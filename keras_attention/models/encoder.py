"""The RNN encoder of the sequence-to-sequence model."""

import keras
import tensorflow as tf

from keras_attention.models.arguments import check_choice, check_positive_ints, check_rate
from keras_attention.models.fused_gru import gru_layer_weights, gru_sequence
from keras_attention.models.weight_slices import embedding_lookup

RNN_CELLS = ("gru", "lstm")


def make_rnn(cell, units, **kwargs):
    """A `keras.layers.GRU` or `LSTM` returning sequences and states."""
    check_choice("cell", cell, RNN_CELLS)
    layer_class = keras.layers.GRU if cell == "gru" else keras.layers.LSTM
    return layer_class(units, return_sequences=True, return_state=True, **kwargs)


@keras.saving.register_keras_serializable(package="keras_attention")
class Encoder(keras.layers.Layer):
    """Embeds source tokens and reads them with a stack of (bidirectional) RNNs.

    1. `x = Embedding(source_ids)`, id 0 is padding.
    2. Each layer runs a GRU/LSTM forward (and backward, when bidirectional)
       over the masked sequence; forward and backward outputs are
       concatenated into the annotations `h_1..h_n` (zero on padding). The
       layers are Keras' `GRU`/`LSTM` (in `Bidirectional`). In training a
       GRU's weights are run by `fused_gru.gru_sequence` (the same math, both
       directions in one loop, the input projection before it, the backward
       pass written out). Inference runs it too in a compute dtype other than
       float32 (Keras' layers cast their kernels at every step there), and
       calls Keras' layers in float32, whose two directions run side by side.
       Measurements: docs/research/model-notes.md.
    3. The final states of the last layer (forward and backward hidden states
       concatenated) summarize the sentence.

    Args:
        vocabulary_size: int, number of source token ids (required).
        embedding_dim: int, size of the token embeddings. Defaults to `256`.
        units: int, RNN units per direction. Defaults to `256`.
        num_layers: int, number of stacked RNN layers. Defaults to `1`.
        cell: `"gru"` or `"lstm"`. Defaults to `"gru"`.
        bidirectional: bool, read the source in both directions. Defaults to
            `True`.
        dropout: float, dropout on embeddings and between layers. Defaults to
            `0.0`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        source_ids: int tensor `(batch_size, Ts)`, 0 = padding.
        training: bool, whether dropout is applied (and, for a GRU, whether
            `fused_gru.gru_sequence` runs it). Defaults to `False`.

    The embedding rows of `source_ids` are read through the current
    `WeightSlices` scope (an export's stored weights), if any.

    Returns:
        `(annotations, summary)`: `(batch_size, Ts, output_dim)` and
        `(batch_size, output_dim)`, with `output_dim = units * (2 if
        bidirectional else 1)`.
    """

    def __init__(
        self,
        vocabulary_size,
        embedding_dim=256,
        units=256,
        num_layers=1,
        cell="gru",
        bidirectional=True,
        dropout=0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_ints(
            vocabulary_size=vocabulary_size,
            embedding_dim=embedding_dim,
            units=units,
            num_layers=num_layers,
        )
        check_rate("dropout", dropout)
        self.vocabulary_size = vocabulary_size
        self.embedding_dim = embedding_dim
        self.units = units
        self.num_layers = num_layers
        self.cell = cell
        self.bidirectional = bidirectional
        self.dropout = dropout

        self.embedding = keras.layers.Embedding(
            vocabulary_size, embedding_dim, dtype=self.dtype_policy, name="embedding"
        )
        self.rnns = []
        for i in range(num_layers):
            rnn = make_rnn(cell, units, dtype=self.dtype_policy, name=f"{cell}_{i}")
            if bidirectional:
                rnn = keras.layers.Bidirectional(
                    rnn, merge_mode="concat", dtype=self.dtype_policy, name=f"bidirectional_{i}"
                )
            self.rnns.append(rnn)
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    @property
    def output_dim(self):
        return self.units * (2 if self.bidirectional else 1)

    def call(self, source_ids, training=False):
        mask = keras.ops.not_equal(source_ids, 0)
        embedded = embedding_lookup(self.embedding, source_ids)
        x = self.dropout_layer(embedded, training=training)
        for i, rnn in enumerate(self.rnns):
            if self.cell == "gru" and (training or self._fused_inference):
                x, states = self._run_gru(rnn, x, mask, training)
            else:
                x, states = self._run_keras_rnn(rnn, x, mask, training)
            if i < self.num_layers - 1:
                x = self.dropout_layer(x, training=training)
        if self.cell == "lstm":
            # LSTM states are (h, c) per direction: keep the hidden states h.
            states = states[0::2]
        summary = keras.ops.concatenate(list(states), axis=-1)
        return x, summary

    def _run_keras_rnn(self, rnn, x, mask, training=False):
        """`(outputs, [final states])` of Keras' own (bidirectional) RNN layer;
        outputs zero on padding (a unidirectional Keras RNN repeats its last
        output there)."""
        outputs = rnn(x, mask=mask, training=training)
        x = outputs[0] * keras.ops.cast(mask[..., None], outputs[0].dtype)
        return x, list(outputs[1:])

    @property
    def _fused_inference(self):
        """Whether inference runs the GRUs as `gru_sequence` too: in a compute dtype
        other than float32, where Keras' layers cast their kernels at every step."""
        return self.compute_dtype != "float32"

    def _run_gru(self, rnn, x, mask, training=True):
        """What `rnn(x, mask=mask)` returns for a (bidirectional) Keras GRU,
        `(outputs, [final state per direction])`, through `gru_sequence` (for
        training); outputs are zero on padding."""
        if not rnn.built:
            rnn.build(tuple(x.shape))
        layers = [rnn.forward_layer, rnn.backward_layer] if self.bidirectional else [rnn]
        kernels, recurrent_kernels, input_biases, recurrent_biases = zip(
            *(gru_layer_weights(layer) for layer in layers), strict=True
        )
        dtype = self.compute_dtype
        directions, units = len(layers), self.units
        steps, batch_size = tf.shape(x)[1], tf.shape(x)[0]
        # The input projection of every direction and step in one matmul,
        # time-major: (T B, E) -> (T, B, D 3U) -> (T, D, B, 3U).
        kernel = tf.cast(tf.concat(kernels, axis=-1), dtype)
        bias = tf.cast(tf.concat(input_biases, axis=-1), dtype)
        x = tf.reshape(tf.transpose(tf.cast(x, dtype), [1, 0, 2]), [steps * batch_size, -1])
        projected = tf.reshape(
            tf.matmul(x, kernel) + bias, [steps, batch_size, directions, 3 * units]
        )
        projected = tf.transpose(projected, [0, 2, 1, 3])
        time_mask = tf.transpose(mask)  # (T, B)
        # The backward direction reads the padded sequence from its end, as
        # Keras' `go_backwards` does (the padding first, masked).
        outputs, final_states = gru_sequence(
            _reverse_backward(projected),
            tf.stack(recurrent_kernels),
            tf.stack(recurrent_biases),
            _reverse_backward(tf.stack([time_mask] * directions, axis=1)),
            tf.zeros([directions, batch_size, units], dtype),
            training=training,
        )
        outputs = _reverse_backward(outputs)  # (T, D, B, U)
        outputs = tf.concat(tf.unstack(outputs, num=directions, axis=1), axis=-1)
        return tf.transpose(outputs, [1, 0, 2]), tf.unstack(final_states, num=directions)

    def compute_mask(self, source_ids, mask=None):
        return None

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "embedding_dim": self.embedding_dim,
                "units": self.units,
                "num_layers": self.num_layers,
                "cell": self.cell,
                "bidirectional": self.bidirectional,
                "dropout": self.dropout,
            }
        )
        return config


def _reverse_backward(sequences):
    """Time-major `(T, D, ...)` sequences with the second direction's steps, if
    any, in reverse order."""
    if sequences.shape[1] == 1:
        return sequences
    forward, backward = tf.unstack(sequences, num=2, axis=1)
    return tf.stack([forward, tf.reverse(backward, axis=[0])], axis=1)
