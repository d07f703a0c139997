"""The RNN encoder of the sequence-to-sequence model."""

import keras

from keras_attention.models.arguments import check_choice, check_positive_ints, check_rate

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
       concatenated into the annotations `h_1..h_n`.
    3. The final states of the last layer (forward and backward hidden states
       concatenated) summarize the sentence.

    Args:
        vocabulary_size: int, number of source token ids.
        embedding_dim: int, size of the token embeddings.
        units: int, RNN units per direction.
        num_layers: int, number of stacked RNN layers.
        cell: `"gru"` or `"lstm"`.
        bidirectional: bool, read the source in both directions.
        dropout: float, dropout on embeddings and between layers.

    Call arguments:
        source_ids: int tensor `(batch_size, Ts)`, 0 = padding.
        training: bool.

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
        x = self.dropout_layer(self.embedding(source_ids), training=training)
        for i, rnn in enumerate(self.rnns):
            outputs = rnn(x, mask=mask, training=training)
            x, states = outputs[0], outputs[1:]
            if i < self.num_layers - 1:
                x = self.dropout_layer(x, training=training)
        if self.cell == "lstm":
            # LSTM states are (h, c) per direction: keep the hidden states h.
            states = states[0::2]
        summary = keras.ops.concatenate(list(states), axis=-1)
        return x, summary

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
