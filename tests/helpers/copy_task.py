"""A tiny encoder-decoder on a copy task, with `AttentionWrapper` inside
`keras.layers.RNN`, trained with `model.fit` (the seq2seq tests on every backend and
under mixed precision)."""

import keras
import numpy as np
from keras import ops

from keras_attention import seq2seq


class CopyModel(keras.Model):
    """A tiny encoder-decoder: the target is the source; the decoder is
    `keras.layers.RNN(AttentionWrapper(LSTMCell, mechanism))`, the memory bound in
    `call`."""

    def __init__(self, mechanism, vocabulary=8):
        super().__init__()
        self.source_embedding = keras.layers.Embedding(vocabulary, 8)
        self.target_embedding = keras.layers.Embedding(vocabulary, 8)
        self.encoder = keras.layers.GRU(8, return_sequences=True)
        self.mechanism = mechanism
        cell = seq2seq.AttentionWrapper(keras.layers.LSTMCell(8), mechanism, attention_layer_size=8)
        self.decoder = keras.layers.RNN(cell, return_sequences=True)
        self.projection = keras.layers.Dense(vocabulary)

    def call(self, inputs):
        source, target_in = inputs
        memory = self.encoder(self.source_embedding(source))
        self.mechanism.setup_memory(memory, memory_mask=ops.not_equal(source, 0))
        return self.projection(self.decoder(self.target_embedding(target_in)))


def train_copy_model(mechanism, epochs=4):
    """Trains a `CopyModel` on 32 random sequences; the loss of each epoch."""
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    source = rng.integers(1, 8, size=(32, 5)).astype("int32")
    target_in = np.concatenate([np.ones((32, 1), "int32"), source[:, :-1]], 1)
    model = CopyModel(mechanism)
    model((source[:2], target_in[:2]))  # built eagerly, on real ids
    model.compile(
        optimizer=keras.optimizers.Adam(0.02),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    history = model.fit((source, target_in), source, batch_size=16, epochs=epochs, verbose=0)
    return history.history["loss"]
