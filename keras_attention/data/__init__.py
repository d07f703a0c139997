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
        "corpus_files": ["CorpusFiles", "corpus_list", "parse_corpus_spec", "read_data_file"],
        "corpus_scan": ["CorpusScan", "scan_corpora", "scan_corpus"],
        "corpus_stream": ["HeldOut", "corpus_pairs", "held_out_split", "training_pairs"],
        "pipeline": ["DEFAULT_BUCKET_BOUNDARIES", "make_dataset", "make_stream"],
        "split": ["CorpusSplits", "group_references", "split_corpus"],
    },
)
