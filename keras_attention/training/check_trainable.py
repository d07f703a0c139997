"""Refusing a corpus the endless training stream would wait on forever."""

from __future__ import annotations

import tensorflow as tf

from keras_attention.data import make_stream


def check_trainable(sample, source_vectorizer, target_vectorizer, options) -> None:
    """Raises when a corpus's sampled training pairs are all filtered out.

    The training stream is endless: a corpus none of whose pairs passes the
    filters (an empty side, the length limits, the length ratio) would make it
    wait for a pair forever.

    Raises:
        ValueError: naming the corpus and the limits.
    """
    for scan, pairs, stride in zip(
        sample.scans, sample.train_by_corpus(), sample.sample_strides, strict=True
    ):
        if not stride:  # only the stream reads it (`CorpusSample.add_streamed_corpora`)
            continue
        kept = None
        if pairs:
            sample = tf.data.Dataset.from_tensor_slices(
                ([s for s, _ in pairs[:10_000]], [t for _, t in pairs[:10_000]])
            )
            kept = next(
                iter(make_stream(sample, source_vectorizer, target_vectorizer, options)), None
            )
        if kept is None:
            raise ValueError(
                f"Corpus {scan.corpus.name!r} has no pair left to train on in its sample: each "
                "is held out, has a side with no token, or is over the length limits (--max-length "
                f"{options.max_length}, --max-length-ratio {options.max_length_ratio}). Check the "
                "corpus columns or the limits."
            )
