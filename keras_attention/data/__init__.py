"""Corpus loading, leak-free splitting and the `tf.data` training pipeline.

Names are imported lazily (through `lazy_loader`), so reading and splitting a
corpus does not load TensorFlow.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "alignment_task": [
            "AlignmentTask",
            "alignment_accuracy",
            "alignment_offsets",
            "make_alignment_task",
        ],
        "corpus": ["BUNDLED_CORPUS", "Corpus", "CorpusError", "load_corpus", "normalize_text"],
        "dataset_options": ["DatasetOptions"],
        "pipeline": ["DEFAULT_BUCKET_BOUNDARIES", "make_dataset"],
        "split": ["CorpusSplits", "group_references", "split_corpus"],
    },
)
