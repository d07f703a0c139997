"""Samplers that feed back the embedding of a step's chosen token: greedy and sampled."""

import keras
import tensorflow as tf

from keras_attention.seq2seq.backend_support import require_tensorflow
from keras_attention.seq2seq.sampling import (
    _BatchSizeSampler,
    categorical_sample,
    serialize_embedding_fn,
    serialize_value,
)

_register = keras.saving.register_keras_serializable(package="keras_attention.seq2seq")


@_register
class GreedyEmbeddingSampler(_BatchSizeSampler):
    """Greedy decoding (TFA's `GreedyEmbeddingSampler`): the argmax of the outputs,
    embedded, is the next input; an entry finishes at `end_token`.

    `initialize(embedding, start_tokens, end_token)`: `embedding` is the matrix looked
    up when `embedding_fn` is not given.

    Args:
        embedding_fn: Optional callable `ids -> embeddings` (e.g. an `Embedding`
            layer).
    """

    def __init__(self, embedding_fn=None):
        self.embedding_fn = embedding_fn
        self._configured_embedding_fn = embedding_fn
        self._batch_size = None

    def get_config(self):
        return {"embedding_fn": serialize_embedding_fn(self, self._configured_embedding_fn)}

    @property
    def sample_ids_shape(self):
        return tf.TensorShape([])

    @property
    def sample_ids_dtype(self):
        return tf.int32

    def initialize(self, embedding, start_tokens=None, end_token=None):
        require_tensorflow(type(self).__name__, "dynamic_decode's tf.while_loop")
        if self.embedding_fn is None:
            self.embedding_fn = lambda ids: tf.nn.embedding_lookup(embedding, ids)
        self.start_tokens = tf.convert_to_tensor(start_tokens, dtype=tf.int32, name="start_tokens")
        self.end_token = tf.convert_to_tensor(end_token, dtype=tf.int32, name="end_token")
        if self.start_tokens.shape.ndims != 1:
            raise ValueError("start_tokens must be a vector")
        self._batch_size = tf.size(start_tokens)
        if self.end_token.shape.ndims != 0:
            raise ValueError("end_token must be a scalar")
        self.start_inputs = self.embedding_fn(self.start_tokens)
        return tf.tile([False], [self._batch_size]), self.start_inputs

    def sample(self, time, outputs, state):
        if not isinstance(outputs, tf.Tensor):
            raise TypeError(f"Expected outputs to be a single Tensor, got: {type(outputs)}")
        return tf.argmax(outputs, axis=-1, output_type=tf.int32)

    def next_inputs(self, time, outputs, state, sample_ids):
        finished = tf.equal(sample_ids, self.end_token)
        next_inputs = tf.cond(
            tf.reduce_all(finished),
            lambda: self.start_inputs,
            lambda: self.embedding_fn(sample_ids),
        )
        return finished, next_inputs, state


@_register
class SampleEmbeddingSampler(GreedyEmbeddingSampler):
    """Sampling decoding (TFA's `SampleEmbeddingSampler`): a draw from
    `softmax(outputs / softmax_temperature)`, embedded, is the next input.

    Args:
        embedding_fn: Optional callable `ids -> embeddings`.
        softmax_temperature: Optional temperature (1 if `None`).
        seed: Optional seed of the draws.
    """

    def __init__(self, embedding_fn=None, softmax_temperature=None, seed=None):
        super().__init__(embedding_fn)
        self.softmax_temperature = softmax_temperature
        self.seed = seed

    def get_config(self):
        temperature = self.softmax_temperature
        if temperature is not None and not isinstance(temperature, (int, float)):
            temperature = serialize_value(temperature)
        return {
            **super().get_config(),
            "softmax_temperature": temperature,
            "seed": self.seed,
        }

    def sample(self, time, outputs, state):
        if not isinstance(outputs, tf.Tensor):
            raise TypeError(f"Expected outputs to be a single Tensor, got: {type(outputs)}")
        logits = outputs if self.softmax_temperature is None else outputs / self.softmax_temperature
        return categorical_sample(logits=logits, seed=self.seed)
