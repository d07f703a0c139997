"""Corpus loading, leak-free splitting and the `tf.data` training pipeline."""

from keras_attention.data.corpus import (
    BUNDLED_CORPUS,
    Corpus,
    CorpusError,
    load_corpus,
    normalize_text,
)
from keras_attention.data.pipeline import DEFAULT_BUCKET_BOUNDARIES, make_dataset
from keras_attention.data.split import CorpusSplits, group_references, split_corpus

__all__ = [
    "BUNDLED_CORPUS",
    "DEFAULT_BUCKET_BOUNDARIES",
    "Corpus",
    "CorpusError",
    "CorpusSplits",
    "group_references",
    "load_corpus",
    "make_dataset",
    "normalize_text",
    "split_corpus",
]
