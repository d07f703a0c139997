"""Corpus loading, leak-free splitting and the `tf.data` training pipeline."""

from keras_attention.data.alignment_task import (
    AlignmentTask,
    alignment_accuracy,
    alignment_offsets,
    make_alignment_task,
)
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
    "AlignmentTask",
    "BUNDLED_CORPUS",
    "DEFAULT_BUCKET_BOUNDARIES",
    "alignment_accuracy",
    "alignment_offsets",
    "Corpus",
    "CorpusError",
    "CorpusSplits",
    "group_references",
    "load_corpus",
    "make_alignment_task",
    "make_dataset",
    "normalize_text",
    "split_corpus",
]
