"""A trained run's data as plain files for another toolkit: its training pairs and its test set.

Everything is decided by the library, as the run's own training and evaluation
decide it:

- the training pairs are those the run's training stream reads
  (`keras_attention.training.trainer`): one pass over the run's corpora in file
  order (`corpus_pairs`: parsed and normalized in the graph), the pairs whose
  source hashes into the training share (`held_out_split` with the run's
  `HeldOut`) and is not a source of a user-given validation or test file, then
  the pipeline's length filters with the run's own vectorizers (`max_length`
  tokens per side, the target with `[END]`, and `max_length_ratio`). The kept
  count is checked against the count `make_stream` keeps of the same pairs.
- the test set is what `keras-attention evaluate` scores: the run's test
  split, each distinct source once with all its references
  (`harness.test_sources`), in the order of its first pair.

`write_run_data(run_dir, work)` writes `train.src` / `train.tgt` (one sentence a
line, aligned), `test.src` and `test.references.json`, and returns a summary.
"""

from __future__ import annotations

import dataclasses
import json
import types
from pathlib import Path

import harness
import tensorflow as tf

from keras_attention.data import DatasetOptions, load_corpus, make_stream
from keras_attention.data.corpus_files import corpus_list
from keras_attention.data.corpus_scan import scan_corpora
from keras_attention.data.corpus_stream import TRAIN, corpus_pairs
from keras_attention.runs.backup_files import read_json
from keras_attention.runs.run_data import excluded_sources, held_out
from keras_attention.runs.run_directory import RunDirectory
from keras_attention.runs.run_vectorizers import load_vectorizers
from keras_attention.runs.train_config import TrainConfig

_BATCH = 4096  # pairs vectorized per call


def stream_training_pairs(run_dir: str | Path) -> tuple[list[tuple[str, str]], dict]:
    """The run's training pairs before the length filters, and where they came from."""
    run = RunDirectory(run_dir)
    config = TrainConfig.load(run.path)
    record = read_json(run.data_summary) or {}
    scans = scan_corpora(corpus_list(config.data))
    strides = record.get("strides") or [1] * len(scans)
    given = types.SimpleNamespace(
        validation=load_corpus(run.validation_split).pairs if config.validation_data else [],
        test=load_corpus(run.test_split).pairs if config.test_data else [],
    )
    excluded = set(excluded_sources(config, given))
    pairs = []
    for scan, stride in zip(scans, strides, strict=True):
        stream = corpus_pairs(scan, held_out(config), config.reverse, stride)
        for sources, targets, splits, _ in stream.as_numpy_iterator():
            for source, target, split in zip(sources, targets, splits, strict=True):
                source = source.decode("utf-8")
                if split == TRAIN and source not in excluded:
                    pairs.append((source, target.decode("utf-8")))
    origin = {
        "corpora": [scan.corpus.name for scan in scans],
        "strides": strides,
        "held_out": dataclasses.asdict(held_out(config)),
        "excluded_sources": len(excluded),
    }
    return pairs, origin


def within_limits(pairs: list[tuple[str, str]], config: TrainConfig, vectorizers) -> list[bool]:
    """Which pairs the training pipeline keeps: the conditions of its length filter
    (`keras_attention.data.pipeline`, `long_pairs="drop"`) on the run's token counts."""
    source_vectorizer, target_vectorizer = vectorizers
    limit, ratio = config.max_length, config.max_length_ratio
    keep = []
    for start in range(0, len(pairs), _BATCH):
        chunk = pairs[start : start + _BATCH]
        sources = source_vectorizer.token_ids(tf.constant([s for s, _ in chunk])).row_lengths()
        targets = target_vectorizer.token_ids(tf.constant([t for _, t in chunk])).row_lengths()
        for s, t in zip(sources.numpy().tolist(), targets.numpy().tolist(), strict=True):
            ok = s > 0 and t > 0 and s <= limit and t + 1 <= limit
            if ratio is not None:
                ok = ok and max(s, t) <= ratio * min(s, t)
            keep.append(ok)
    return keep


def pipeline_count(pairs: list[tuple[str, str]], config: TrainConfig, vectorizers) -> int:
    """How many of `pairs` the library's own training pipeline (`make_stream`) keeps."""
    options = DatasetOptions(
        batch_size=config.batch_size,
        shuffle=False,
        max_length=config.max_length,
        max_length_ratio=config.max_length_ratio,
        bucket_boundaries=(),
    )
    dataset = tf.data.Dataset.from_tensor_slices(([s for s, _ in pairs], [t for _, t in pairs]))
    batches = make_stream(dataset, *vectorizers, options)
    return sum(int(target_out.shape[0]) for _, target_out in batches)


def write_lines(path: Path, lines) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            if "\n" in line or "\r" in line:
                raise ValueError(f"a sentence holds a line break: {line!r}")
            f.write(line + "\n")


def write_run_data(run_dir: str | Path, work: str | Path) -> dict:
    """Writes the run's training pairs and test set under `work`; returns their summary.

    Raises:
        RuntimeError: the length filter here keeps another number of pairs than
            the library's pipeline.
    """
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    run = RunDirectory(run_dir)
    config = TrainConfig.load(run.path)
    vectorizers = load_vectorizers(run, config)
    pairs, origin = stream_training_pairs(run.path)
    keep = within_limits(pairs, config, vectorizers)
    kept = [pair for pair, ok in zip(pairs, keep, strict=True) if ok]
    expected = pipeline_count(pairs, config, vectorizers)
    if expected != len(kept):
        raise RuntimeError(
            f"the length filter kept {len(kept)} of {len(pairs)} pairs, the training pipeline "
            f"{expected}"
        )
    write_lines(work / "train.src", (s for s, _ in kept))
    write_lines(work / "train.tgt", (t for _, t in kept))
    sources, references = harness.test_sources(run.path)  # as `evaluate` scores them
    write_lines(work / "test.src", sources)
    (work / "test.references.json").write_text(
        json.dumps(references, ensure_ascii=False), encoding="utf-8"
    )
    return {
        **origin,
        "tokenizer": config.tokenizer,
        "max_length": config.max_length,
        "max_length_ratio": config.max_length_ratio,
        "training_pairs_in_share": len(pairs),
        "training_pairs": len(kept),
        "test_sources": len(sources),
        "test_references": sum(len(r) for r in references),
    }
