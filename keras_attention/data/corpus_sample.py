"""A bounded sample of a corpus's pairs: the held-out splits, vocabularies and tokenizer choice.

Training reads every pair as a stream (`corpus_stream.training_pairs`); what
must be held in memory comes from a sample of at most `sample_pairs` pairs,
every `k`-th line of each shard (so it spans the whole corpus, not its first
lines), shared between the corpora by weight:

- the training pairs of the sample: vocabularies, subword models, the
  tokenizer choice and the spacing rules are learned from them;
- the held-out pairs of the sample (`held_out_split` is `VALIDATION` or
  `TEST`): the run's validation and test splits. The stream leaves out every
  held-out source, sampled or not, so the test set never leaks into training.

A corpus smaller than its share is read whole: the bundled corpus (167,130
pairs) is, by default.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Sequence

from keras_attention.data import progress
from keras_attention.data.corpus import CorpusError
from keras_attention.data.corpus_scan import CorpusScan
from keras_attention.data.corpus_stream import TEST, TRAIN, VALIDATION, HeldOut, corpus_pairs
from keras_attention.data.split import CorpusSplits

logger = logging.getLogger(__name__)

DEFAULT_SAMPLE_PAIRS = 300_000
"""Pairs read into memory before training (`TrainConfig.sample_pairs`)."""


@dataclasses.dataclass
class CorpusSample(CorpusSplits):
    """The sampled pairs by split, and how they were drawn.

    `train`, `validation` and `test` are as in `CorpusSplits` (every pair's
    source is in one split only), from the sample; the training stream reads
    the corpora whole (every `strides[i]`-th line of corpus `i`).

    Attributes:
        scans: the checked corpora.
        strides: the training stride of each corpus (1, or more with
            `max_pairs`).
        sample_strides: the sampling stride of each corpus; 0 for a corpus only the
            training stream reads (`add_streamed_corpora`).
        sampled: pairs read for the sample (all splits).
        train_counts: how many of `train` each corpus gave.
        recorded: read back from a run directory (`runs.run_data.recorded_sample`)
            for a resumed run: `train` is then empty (its counts are kept), since
            what it gave (vocabularies, tokenizer choice) is saved in the run.
    """

    scans: list[CorpusScan] = dataclasses.field(default_factory=list)
    strides: list[int] = dataclasses.field(default_factory=list)
    sample_strides: list[int] = dataclasses.field(default_factory=list)
    sampled: int = 0
    train_counts: list[int] = dataclasses.field(default_factory=list)
    recorded: bool = False

    def train_by_corpus(self) -> list[list[tuple[str, str]]]:
        """`train` cut into each corpus's sampled training pairs (they are in corpus order)."""
        parts, start = [], 0
        for count in self.train_counts:
            parts.append(self.train[start : start + count])
            start += count
        return parts

    def add_streamed_corpora(self, scans: Sequence[CorpusScan]) -> None:
        """Adds corpora that only the training stream reads, none of their pairs sampled
        (an adapted run mixes in its original run's corpora so:
        `keras_attention.runs.run_adaptation`)."""
        self.scans += scans
        self.strides += [1] * len(scans)
        self.sample_strides += [0] * len(scans)
        self.train_counts += [0] * len(scans)

    def training_lines(self) -> int:
        """About how many training pairs one pass over the sampled corpora reads (for an
        epoch's size; corpora only the training stream reads, `add_streamed_corpora`, are
        left out: the sample says nothing of their share)."""
        if not self.sampled:
            return 0
        sampled_lines = sum(
            scan.lines // stride
            for scan, stride, sample_stride in zip(
                self.scans, self.strides, self.sample_strides, strict=True
            )
            if sample_stride
        )
        return round(sampled_lines * sum(self.train_counts) / self.sampled)

    @property
    def lines(self) -> int:
        """Lines of all corpora, as read for training (after `max_pairs`' strides)."""
        return sum(
            scan.lines // stride for scan, stride in zip(self.scans, self.strides, strict=True)
        )

    def describe(self) -> str:
        """One line: the sample's size and what it spans."""
        whole = all(stride <= 1 for stride in self.sample_strides)
        return (
            f"{self.sampled:,} sampled pairs "
            f"({'the whole corpus' if whole else f'of {self.lines:,} lines'}): "
            f"train/validation/test = {sum(self.train_counts):,}/{len(self.validation):,}/"
            f"{len(self.test):,}"
        )

    def summary(self) -> dict:
        """A JSON-able record of the corpora and the sample (the run's data.json)."""
        return {
            "corpora": [scan.summary() for scan in self.scans],
            "strides": self.strides,
            "sample_strides": self.sample_strides,
            "sampled": self.sampled,
            "train_counts": self.train_counts,
            "sample_split_pairs": {
                "train": sum(self.train_counts),
                "validation": len(self.validation),
                "test": len(self.test),
            },
        }


def _check_well_formed(scan: CorpusScan, pairs: int, skipped: int) -> None:
    """Refuses a corpus whose sampled lines are mostly not pairs; warns about any skipped."""
    what = "aligned source/target" if scan.corpus.aligned else "source<TAB>target"
    if skipped > pairs:
        raise CorpusError(
            f"Corpus {scan.corpus.name!r} is not a {what} corpus: {skipped} of "
            f"{skipped + pairs} sampled lines are malformed (not 2 or 3 tab-separated columns, "
            "or an empty side)."
        )
    if skipped:
        logger.warning(
            "%s: skipped %d of %d sampled lines (not 2 or 3 tab-separated columns, or an empty "
            "side); training skips such lines too",
            scan.corpus.name,
            skipped,
            skipped + pairs,
        )


def _shares(total: int, scans: Sequence[CorpusScan]) -> list[int]:
    weight = sum(scan.corpus.weight for scan in scans)
    return [max(1, math.floor(total * scan.corpus.weight / weight)) for scan in scans]


def sample_corpora(
    scans: Sequence[CorpusScan],
    held_out: HeldOut,
    sample_pairs: int = DEFAULT_SAMPLE_PAIRS,
    reverse: bool = False,
    max_pairs: int | None = None,
) -> CorpusSample:
    """Reads a sample of at most about `sample_pairs` pairs from `scans`, split by `held_out`.

    Args:
        scans: the checked corpora (`scan_corpora`).
        held_out: the held-out shares and key.
        sample_pairs: the sample's size, shared between the corpora by weight.
        reverse: swap the sides.
        max_pairs: int or `None`: train on about this many lines (shared by
            weight), every `k`-th line of each corpus.

    Returns:
        A `CorpusSample`.
    """
    for name, value in (("sample_pairs", sample_pairs), ("max_pairs", max_pairs)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ValueError(f"`{name}` must be a positive int. Received: {name}={value!r}")
    if max_pairs is None:
        strides = [1] * len(scans)
    else:
        strides = [
            max(1, math.ceil(s.lines / n))
            for s, n in zip(scans, _shares(max_pairs, scans), strict=True)
        ]
    sample = CorpusSample(train=[], validation=[], test=[], scans=list(scans), strides=strides)
    by_split = {TRAIN: sample.train, VALIDATION: sample.validation, TEST: sample.test}
    every = progress.Every()
    for scan, stride, share in zip(scans, strides, _shares(sample_pairs, scans), strict=True):
        lines = scan.lines // stride
        sample_stride = stride * max(1, math.ceil(lines / share))
        sample.sample_strides.append(sample_stride)
        expected = min(share, math.ceil(scan.lines / sample_stride))
        taken, skipped, trained_before = 0, 0, len(sample.train)
        for sources, targets, splits, malformed in corpus_pairs(
            scan, held_out, reverse, sample_stride
        ).as_numpy_iterator():
            skipped += int(malformed)
            for source, target, split in zip(sources, targets, splits, strict=True):
                if taken >= share:
                    break
                by_split[int(split)].append((source.decode("utf-8"), target.decode("utf-8")))
                taken += 1
            if taken >= share:
                break
            if every():
                progress.logger.info(
                    "Sampling %s: %d of %d pairs (%.0f s)",
                    scan.corpus.name,
                    taken,
                    expected,
                    every.elapsed,
                )
        _check_well_formed(scan, taken, skipped)
        sample.sampled += taken
        sample.train_counts.append(len(sample.train) - trained_before)
    logger.info("sample: %s", sample.describe())
    return sample
