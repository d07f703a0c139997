"""The sequence-to-sequence model: `Encoder`, the decoders, `Seq2Seq`, the `Ensemble`
of several such models decoded as one, and the `WeightSlices` scope through which it
reads the slices of its weights."""

from keras_attention.models.bahdanau_decoder import BahdanauDecoder
from keras_attention.models.base_decoder import BaseDecoder
from keras_attention.models.encoder import Encoder
from keras_attention.models.ensemble import Ensemble
from keras_attention.models.luong_decoder import LuongDecoder
from keras_attention.models.seq2seq import Seq2Seq
from keras_attention.models.weight_slices import WeightSlices

__all__ = [
    "BahdanauDecoder",
    "BaseDecoder",
    "Encoder",
    "Ensemble",
    "LuongDecoder",
    "Seq2Seq",
    "WeightSlices",
]
