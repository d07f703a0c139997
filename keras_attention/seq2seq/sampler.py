"""TFA's `tfa.seq2seq.sampler` module path: every sampler and the sampling helpers."""

from keras_attention.seq2seq.embedding_sampler import (
    GreedyEmbeddingSampler,
    SampleEmbeddingSampler,
)
from keras_attention.seq2seq.sampling import (
    CustomSampler,
    InferenceSampler,
    Sampler,
    _check_sequence_is_right_padded,
    bernoulli_sample,
    categorical_sample,
)
from keras_attention.seq2seq.training_sampler import (
    ScheduledEmbeddingTrainingSampler,
    ScheduledOutputTrainingSampler,
    TrainingSampler,
)

__all__ = [
    "CustomSampler",
    "GreedyEmbeddingSampler",
    "InferenceSampler",
    "SampleEmbeddingSampler",
    "Sampler",
    "ScheduledEmbeddingTrainingSampler",
    "ScheduledOutputTrainingSampler",
    "TrainingSampler",
    "_check_sequence_is_right_padded",
    "bernoulli_sample",
    "categorical_sample",
]
