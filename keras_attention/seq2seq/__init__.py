"""A Keras 3 successor to TensorFlow Addons' `tfa.seq2seq`: attention mechanisms bound to
a memory, `AttentionWrapper`, `BasicDecoder` with its samplers, `BeamSearchDecoder`, `dynamic_decode` and
`SequenceLoss`, with TFA's names, arguments, output structures and variable order.

TFA code runs after changing `tfa.seq2seq` to `keras_attention.seq2seq` and `tf.keras`
to `keras`; TFA's weights (`get_weights()`) give TFA's outputs. The mechanisms,
`AttentionWrapper` and `BasicDecoder` with `TrainingSampler` run on every Keras backend
(`backend_support` lists what needs TensorFlow).
"""

from keras_attention.seq2seq.attention_mechanism import AttentionMechanism
from keras_attention.seq2seq.attention_wrapper import AttentionWrapper, AttentionWrapperState
from keras_attention.seq2seq.bahdanau_attention import (
    BahdanauAttention,
    BahdanauMonotonicAttention,
)
from keras_attention.seq2seq.basic_decoder import BasicDecoder, BasicDecoderOutput
from keras_attention.seq2seq.beam_search_decoder import (
    BeamSearchDecoder,
    BeamSearchDecoderOutput,
    BeamSearchDecoderState,
    FinalBeamSearchDecoderOutput,
)
from keras_attention.seq2seq.beam_search_ops import (
    gather_tree,
    gather_tree_from_array,
    tile_batch,
)
from keras_attention.seq2seq.decoder import BaseDecoder, Decoder, dynamic_decode
from keras_attention.seq2seq.loss import SequenceLoss, sequence_loss
from keras_attention.seq2seq.luong_attention import LuongAttention, LuongMonotonicAttention
from keras_attention.seq2seq.probability import hardmax, monotonic_attention, safe_cumprod
from keras_attention.seq2seq.sampler import (
    CustomSampler,
    GreedyEmbeddingSampler,
    InferenceSampler,
    SampleEmbeddingSampler,
    Sampler,
    ScheduledEmbeddingTrainingSampler,
    ScheduledOutputTrainingSampler,
    TrainingSampler,
)

__all__ = [
    "AttentionMechanism",
    "AttentionWrapper",
    "AttentionWrapperState",
    "BahdanauAttention",
    "BahdanauMonotonicAttention",
    "BaseDecoder",
    "BasicDecoder",
    "BasicDecoderOutput",
    "BeamSearchDecoder",
    "BeamSearchDecoderOutput",
    "BeamSearchDecoderState",
    "CustomSampler",
    "Decoder",
    "FinalBeamSearchDecoderOutput",
    "GreedyEmbeddingSampler",
    "InferenceSampler",
    "LuongAttention",
    "LuongMonotonicAttention",
    "SampleEmbeddingSampler",
    "Sampler",
    "ScheduledEmbeddingTrainingSampler",
    "ScheduledOutputTrainingSampler",
    "SequenceLoss",
    "TrainingSampler",
    "dynamic_decode",
    "gather_tree",
    "gather_tree_from_array",
    "hardmax",
    "monotonic_attention",
    "safe_cumprod",
    "sequence_loss",
    "tile_batch",
]
