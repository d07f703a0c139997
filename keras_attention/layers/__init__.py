"""Attention layers: `BahdanauAttention` (additive) and `LuongAttention` (dot, general,
concat, scaled dot, cosine, location), sharing `BaseAttention`."""

from keras_attention.layers.bahdanau_attention import BahdanauAttention
from keras_attention.layers.base_attention import BaseAttention
from keras_attention.layers.luong_attention import LuongAttention

__all__ = ["BahdanauAttention", "BaseAttention", "LuongAttention"]
