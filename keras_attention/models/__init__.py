"""The sequence-to-sequence model: `Encoder`, `AttentionDecoder`, `Seq2Seq`."""

from keras_attention.models.attention_decoder import AttentionDecoder
from keras_attention.models.encoder import Encoder
from keras_attention.models.seq2seq import Seq2Seq

__all__ = ["AttentionDecoder", "Encoder", "Seq2Seq"]
