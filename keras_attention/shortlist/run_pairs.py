"""A trained run's training pairs, as the run tokenized them, for a shortlist's counts."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import NamedTuple

from keras_attention.data import DatasetOptions, make_dataset
from keras_attention.runs.run_data import sample_splits
from keras_attention.runs.run_directory import RunDirectory
from keras_attention.runs.run_vectorizers import load_vectorizers
from keras_attention.runs.train_config import TrainConfig


class RunPairs(NamedTuple):
    """A run's training pairs and the sizes of its vocabularies (`run_pairs`)."""

    pairs: Iterator  # (source_ids, target_out) int arrays, one pair at a time
    source_vocabulary_size: int
    target_vocabulary_size: int
    special_ids: tuple[int, ...]  # the target vectorizer's padding, [UNK], [START], [END]


def run_pairs(run_dir: str | os.PathLike) -> RunPairs:
    """The training split of a trained run, tokenized and filtered as training did.

    The run's corpus is split again with its config (`sample_splits`: the
    same seed and fractions give the same training pairs), tokenized by the
    run's vectorizers and filtered as training filters it (`make_dataset`
    with the run's `max_length`: pairs with an empty side or over the length
    limit are left out). The corpus is read when `pairs` is first iterated.
    A run adapted from another (`TrainConfig.adapt_from`) adds that run's pairs,
    read as it tokenized them (its ids are the adapted run's: old ids are kept),
    since the adapted model keeps translating its original's domain.

    Raises:
        FileNotFoundError: the run is missing or not trained (its corpus,
            when `pairs` is read).
    """
    run = RunDirectory(run_dir)
    run.require_trained()
    config = TrainConfig.load(run.path)
    source_vectorizer, target_vectorizer = load_vectorizers(run, config)

    def pairs():
        dataset = make_dataset(
            sample_splits(config).train,
            source_vectorizer,
            target_vectorizer,
            DatasetOptions(
                batch_size=1024,
                shuffle=False,
                bucket_boundaries=[],
                max_length=config.max_length,
                cache=False,
            ),
        )
        for (source_ids, _), target_out in dataset.as_numpy_iterator():
            yield from zip(source_ids, target_out, strict=True)
        if config.adapt_from:
            yield from run_pairs(config.adapt_from).pairs

    return RunPairs(
        pairs(),
        source_vectorizer.vocabulary_size,
        target_vectorizer.vocabulary_size,
        (
            target_vectorizer.pad_id,
            target_vectorizer.unk_id,
            target_vectorizer.start_id,
            target_vectorizer.end_id,
        ),
    )
