"""Reading sentence pairs from corpus files with `tf.data`, in bounded memory.

Every training pair goes through these functions, from files of any size:
lines are read by `tf.data.TextLineDataset` (TSV or aligned plain text,
plain or gzip, shards interleaved), split into columns, normalized in the
graph (`keras_attention.text.normalize`, what `normalize_text` does in
Python), and malformed lines (not 2 or 3 TSV columns, or an empty side) are
dropped. Held-out pairs are chosen by a keyed hash of the normalized source
sentence (`held_out_split`): every translation of one source lands in the
same split, on every pass, worker and resume, without a list of all pairs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import tensorflow as tf

from keras_attention.data.corpus_scan import CorpusScan
from keras_attention.text import normalize

HASH_BUCKETS = 1_000_000
"""Resolution of the held-out split: a source's bucket is in [0, HASH_BUCKETS)."""
TRAIN, VALIDATION, TEST = 0, 1, 2
"""The split ids `held_out_split` gives."""
_LINES_PER_BATCH = 1024  # lines parsed and normalized per op call


@dataclasses.dataclass(frozen=True)
class HeldOut:
    """Which sources are held out of training: shares of the hash space, and its key.

    A source is in the test split when its bucket
    (`tf.strings.to_hash_bucket_strong(source, HASH_BUCKETS, key)`) is below
    `test_fraction * HASH_BUCKETS`, in the validation split when it is below
    `(test_fraction + validation_fraction) * HASH_BUCKETS`, else in training.
    The key is `(seed, 0)`: another seed holds out other sentences.

    `excluded_sources` are the sources of user-given validation or test files:
    `training_pairs` never trains on them, whatever their bucket
    (`held_out_split` reads only the shares and the key).
    """

    validation_fraction: float = 0.02
    test_fraction: float = 0.02
    seed: int = 0
    excluded_sources: tuple[str, ...] = ()

    def __post_init__(self):
        for name in ("validation_fraction", "test_fraction"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
                raise ValueError(f"`{name}` must be a number in [0, 1). Received: {name}={value!r}")
        if self.validation_fraction + self.test_fraction >= 1:
            raise ValueError(
                "`validation_fraction + test_fraction` must be below 1 to leave training data. "
                f"Received: validation_fraction={self.validation_fraction}, "
                f"test_fraction={self.test_fraction}"
            )


def held_out_split(sources, held_out: HeldOut):
    """The split id (`TRAIN`, `VALIDATION`, `TEST`) of each normalized source sentence.

    Args:
        sources: string tensor of any shape.
        held_out: the `HeldOut` shares and key.

    Returns:
        An int32 tensor of the same shape.
    """
    buckets = tf.strings.to_hash_bucket_strong(sources, HASH_BUCKETS, key=[held_out.seed, 0])
    test_end = round(held_out.test_fraction * HASH_BUCKETS)
    validation_end = test_end + round(held_out.validation_fraction * HASH_BUCKETS)
    return tf.where(
        buckets < test_end,
        TEST,
        tf.where(buckets < validation_end, VALIDATION, TRAIN),
    )


def _lines(
    scan: CorpusScan, stride: int, order_seed: int | None, part: tuple[int, int] = (0, 1)
) -> tf.data.Dataset:
    """The corpus's lines: `(line,)` for TSV, `(source, target)` for aligned shards.

    With `order_seed`, an endless stream: each pass visits the shards in
    another seeded order, interleaving up to 8 of them line by line. Without,
    one pass in file order. `stride` keeps every `stride`-th line of each
    shard; `part` `(i, n)` then every `n`-th of those from the `i`-th on
    (worker `i` of `n` reads its own lines).
    """
    index, count = part
    compression = {f.path: "GZIP" if f.gzip else "" for f in scan.files}
    shards = scan.corpus.shards
    columns = tuple(
        tf.constant([[path, compression[path]] for path in column])
        for column in zip(*shards, strict=True)
    )

    def read(*files):
        readers = tuple(tf.data.TextLineDataset(f[0], compression_type=f[1]) for f in files)
        lines = readers[0] if len(readers) == 1 else tf.data.Dataset.zip(readers)
        lines = lines.shard(stride, 0) if stride > 1 else lines
        return lines.shard(count, index) if count > 1 else lines

    if order_seed is None:
        return tf.data.Dataset.from_tensor_slices(columns).flat_map(read)

    def one_pass(index):
        # The order of pass `index` is a stateless function of (seed, index):
        # every iterator of the stream, in any process, visits the same orders.
        order = tf.random.experimental.stateless_shuffle(
            tf.range(len(shards)), seed=tf.stack([tf.constant(order_seed, tf.int64), index])
        )
        return tf.data.Dataset.from_tensor_slices(tuple(tf.gather(c, order) for c in columns))

    paths = tf.data.Dataset.counter().flat_map(one_pass)
    return paths.interleave(read, cycle_length=min(len(shards), 8), block_length=1)


def corpus_pairs(
    scan: CorpusScan,
    held_out: HeldOut,
    reverse: bool = False,
    stride: int = 1,
    order_seed: int | None = None,
    part: tuple[int, int] = (0, 1),
) -> tf.data.Dataset:
    """Batches of `(sources, targets, splits, skipped)` from a corpus's files, normalized.

    Args:
        scan: the checked corpus (`scan_corpus`).
        held_out: decides each pair's split (`held_out_split` of its source).
        reverse: swap the sides (translate the corpus's second column or
            target files into the first).
        stride: keep every `stride`-th line of each shard.
        order_seed: `None` for one pass in file order; an int for an endless
            stream of passes with seeded shard orders.
        part: `(i, n)`: only every `n`-th line (after `stride`), from the
            `i`-th: the lines worker `i` of `n` reads.

    Returns:
        A dataset of string tensors `(n,)`, `(n,)`, int32 `(n,)` and the
        int32 count of malformed lines left out of the batch (blank lines not
        counted); `n` is up to 1024.
    """
    lines = _lines(scan, stride, order_seed, part).batch(_LINES_PER_BATCH)

    def parse(*batch):
        if len(batch) == 1:
            columns = tf.strings.split(batch[0], "\t")
            counts = columns.row_lengths()
            well_formed = (counts == 2) | (counts == 3)
            table = columns.to_tensor(default_value="", shape=[None, 2])
            sources, targets = table[:, 0], table[:, 1]
        else:
            sources, targets = batch
            well_formed = tf.ones_like(sources, dtype=tf.bool)
        sources, targets = normalize(sources), normalize(targets)
        if reverse:
            sources, targets = targets, sources
        keep = well_formed & (tf.strings.length(sources) > 0) & (tf.strings.length(targets) > 0)
        blank = tf.equal(tf.strings.strip(batch[0]), "")
        if len(batch) == 2:
            blank &= tf.equal(tf.strings.strip(batch[1]), "")
        skipped = tf.reduce_sum(tf.cast(~keep & ~blank, tf.int32))
        sources, targets = tf.boolean_mask(sources, keep), tf.boolean_mask(targets, keep)
        return sources, targets, held_out_split(sources, held_out), skipped

    return lines.map(parse, num_parallel_calls=tf.data.AUTOTUNE)


def training_pairs(
    scans: Sequence[CorpusScan],
    held_out: HeldOut,
    strides: Sequence[int],
    shuffle_buffer: int,
    seed: int,
    reverse: bool = False,
    part: tuple[int, int] = (0, 1),
) -> tf.data.Dataset:
    """An endless, seeded stream of `(source, target)` training pairs mixed from `scans`.

    Each corpus is read as an endless stream (`corpus_pairs` with a seeded
    shard order per pass), its training pairs kept (`held_out_split` is
    `TRAIN` and the source is not in `held_out.excluded_sources`) and shuffled in a
    buffer of its share of `shuffle_buffer` pairs (its weight's share, at
    least 1,000). The corpora are mixed by weight
    (`tf.data.Dataset.sample_from_datasets`, seeded). The same arguments give
    the same stream in any process and from every iterator of the returned
    dataset: `skip(n)` resumes it exactly.

    Args:
        scans: the checked corpora; their `corpus.weight` sets the mix.
        held_out: the held-out shares and key, and the excluded sources.
        strides: keep every `strides[i]`-th line of corpus `i`'s shards.
        shuffle_buffer: pairs held in all the shuffle buffers together.
        seed: the shard-order, shuffle and mixing seed.
        reverse: swap the sides.
        part: `(i, n)`: the stream of worker `i` of `n`, from its own lines
            of every shard (`corpus_pairs`), with its share of the shuffle
            buffer; the workers' streams are disjoint.

    Returns:
        A dataset of scalar string pairs.
    """
    excluded = None
    if held_out.excluded_sources:
        keys = tf.constant(sorted(set(held_out.excluded_sources)))
        excluded = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(keys, tf.ones_like(keys, dtype=tf.int32)), 0
        )

    def trainable(sources, targets, splits, skipped):
        keep = tf.equal(splits, TRAIN)
        if excluded is not None:
            keep &= tf.equal(excluded.lookup(sources), 0)
        return tf.boolean_mask(sources, keep), tf.boolean_mask(targets, keep)

    total_weight = sum(scan.corpus.weight for scan in scans)
    streams = []
    for index, (scan, stride) in enumerate(zip(scans, strides, strict=True)):
        share = scan.corpus.weight / total_weight / part[1]
        buffer = max(1000, round(shuffle_buffer * share))
        stream = (
            corpus_pairs(scan, held_out, reverse, stride, order_seed=seed + index, part=part)
            .map(trainable)
            .unbatch()
            # The stream is endless, so one iterator never reshuffles; without
            # reshuffling, every iterator yields the same pairs.
            .shuffle(buffer, seed=seed + index, reshuffle_each_iteration=False)
        )
        streams.append(stream)
    if len(streams) == 1:
        return streams[0]
    weights = [scan.corpus.weight / total_weight for scan in scans]
    return tf.data.Dataset.sample_from_datasets(
        streams, weights=weights, seed=seed, rerandomize_each_iteration=False
    )
