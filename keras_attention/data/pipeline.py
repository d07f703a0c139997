"""The `tf.data` input pipeline for teacher-forced sequence-to-sequence training."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

import tensorflow as tf

from keras_attention.data.dataset_options import DatasetOptions
from keras_attention.text import END_ID, START_ID, BaseVectorizer

logger = logging.getLogger(__name__)

# Default bucket boundaries (sequence lengths); those at or above the length
# limit are dropped. Tatoeba sentences are mostly 4-15 tokens long.
DEFAULT_BUCKET_BOUNDARIES = (6, 8, 10, 12, 14, 16, 20, 24, 32, 48, 64, 96, 128, 192, 256)
_VECTORIZE_BATCH = 1024  # sentences tokenized per call while vectorizing


def make_dataset(
    pairs: Sequence[tuple[str, str]],
    source_vectorizer: BaseVectorizer,
    target_vectorizer: BaseVectorizer,
    options: DatasetOptions,
) -> tf.data.Dataset:
    """Builds batches of `((source_ids, target_in), target_out)` for `model.fit`.

    The computation:

    1. Both sides are vectorized in large batches (each vectorizer's
       `token_ids`: words or subwords) into ragged int32 ids; the result is
       cached in memory (`cache=True`), so later epochs skip tokenization.
    2. Pairs with an empty side are dropped, and with `max_length_ratio`
       pairs whose longer side has more than that many times the tokens of
       the shorter. Pairs longer than the limits
       are dropped (`long_pairs="drop"`, the default: a cut sentence would
       teach the model a wrong translation) or cut (`long_pairs="truncate"`:
       the target keeps `[END]` after its cut tokens).
    3. With `shuffle`, the pairs are shuffled (whole-dataset buffer, seeded,
       reshuffled every epoch; the same seed gives the same sequence of
       epochs). With `repeat`, the dataset is an endless stream of passes
       over the pairs and pass `p` is shuffled with a seed derived from
       `(seed, p)`: every iterator of the dataset, in any process, yields
       the same batches in the same order, so `skip(n)` resumes a stream
       exactly and data-parallel workers agree on every global batch.
    4. `target_in = [START] + target` and `target_out = target + [END]`, so
       `target_out[t]` is the token to predict after reading
       `target_in[: t + 1]`.
    5. Pairs are grouped into length buckets (the bucket of a pair is set by
       its longer sequence) and each batch is padded with 0 to its own
       longest sequence, so little compute is spent on padding. With
       `tokens_per_batch`, long buckets get fewer sentences per batch, so
       batches hold about the same number of tokens.
    6. `prefetch(AUTOTUNE)`.

    Length limits: `source_ids` has at most `max_length` ids and
    `target_in` / `target_out` at most `max_length` ids (so at most
    `max_length - 1` target tokens). With `max_length=None` each side uses
    its vectorizer's `max_length` (no limit if that is `None` too).

    Args:
        pairs: `(source, target)` string pairs (e.g. `split_corpus(...).train`).
        source_vectorizer: the source language's vectorizer (`TextVectorizer`
            or `SubwordVectorizer`).
        target_vectorizer: the target language's vectorizer.
        options: `DatasetOptions`: batch size, shuffling, buckets, length
            limits, caching and repetition.

    Raises:
        ValueError: `pairs` is empty, or (with `repeat`) no pair is left
            after step 2.

    Returns:
        A `tf.data.Dataset` of `((source_ids, target_in), target_out)`, int32
        tensors of shapes `(batch, S)`, `(batch, T)` and `(batch, T)`, padded
        with 0.

    Example:

    >>> from keras_attention.text import TextVectorizer, build_vocabulary
    >>> pairs = [("I am cold.", "J'ai froid."), ("Go!", "Va !"), ("Hi.", "Salut.")]
    >>> source_vectorizer = TextVectorizer(build_vocabulary((s for s, _ in pairs), 100))
    >>> target_vectorizer = TextVectorizer(build_vocabulary((t for _, t in pairs), 100))
    >>> dataset = make_dataset(
    ...     pairs, source_vectorizer, target_vectorizer, DatasetOptions(batch_size=64)
    ... )
    >>> (source_ids, target_in), target_out = next(iter(dataset))
    >>> source_ids.shape[0], source_ids.dtype.name
    (3, 'int32')
    >>> bool((target_in[:, 0] == START_ID).numpy().all())
    True
    """
    pairs = list(pairs)
    if not pairs:
        raise ValueError("`pairs` is empty: there is nothing to make a dataset of.")
    limits = _Limits.of(source_vectorizer, target_vectorizer, options)
    sources = [source for source, _ in pairs]
    targets = [target for _, target in pairs]
    dataset = _vectorized(
        tf.data.Dataset.from_tensor_slices((sources, targets)),
        source_vectorizer,
        target_vectorizer,
        options,
        limits,
    )
    shuffle, seed = options.shuffle, options.seed
    if options.cache and not options.repeat:
        dataset = dataset.cache()
    if options.repeat:
        # A permutation per pass from a stateless function of (seed, pass), not
        # a seed generator per dataset: `shuffle(...).repeat()` starts every
        # new iterator at a different permutation.
        kept = next(iter(dataset.ragged_batch(len(pairs))), None)
        if kept is None:
            raise ValueError(
                f"None of the {len(pairs)} pairs is left to train on: each has a side with no "
                "token or is longer than the length limits (source "
                f"{limits.source}, target {limits.target} with [END]). Check the corpus columns "
                "or raise --max-length."
            )
        sources_ids, targets_ids = kept
        count = sources_ids.nrows()

        def one_pass(index):
            order = tf.data.Dataset.range(count)
            if shuffle:
                pass_seed = tf.stack([tf.constant(seed, tf.int64), index])
                order = order.map(
                    lambda i: tf.random.experimental.index_shuffle(i, pass_seed, count - 1)
                )
            return order.map(lambda i: (sources_ids[i], targets_ids[i]))

        dataset = tf.data.Dataset.counter().flat_map(one_pass)
    elif shuffle:
        dataset = dataset.shuffle(len(pairs), seed=seed, reshuffle_each_iteration=True)
    return _batched(dataset, options, limits)


def make_stream(
    pairs: tf.data.Dataset,
    source_vectorizer: BaseVectorizer,
    target_vectorizer: BaseVectorizer,
    options: DatasetOptions,
) -> tf.data.Dataset:
    """Training batches from a stream of string pairs, as `make_dataset` batches a list.

    Steps 1, 2, 4, 5 and 6 of `make_dataset` (vectorizing, filtering,
    shifting, bucketing, prefetching) on `pairs` as it comes: no caching, no
    shuffling and no repetition here (the stream shuffles and repeats
    itself: `keras_attention.data.corpus_stream.training_pairs`), so memory
    does not grow with the corpus.

    Args:
        pairs: a `tf.data.Dataset` of scalar `(source, target)` strings.
        source_vectorizer: the source language's vectorizer.
        target_vectorizer: the target language's vectorizer.
        options: `DatasetOptions`; `shuffle`, `cache` and `repeat` are not used.

    Returns:
        A `tf.data.Dataset` of `((source_ids, target_in), target_out)`, as
        `make_dataset` gives.
    """
    limits = _Limits.of(source_vectorizer, target_vectorizer, options)
    dataset = _vectorized(pairs, source_vectorizer, target_vectorizer, options, limits)
    return _batched(dataset, options, limits)


@dataclasses.dataclass(frozen=True)
class _Limits:
    """The length limits of a dataset: per side, the larger one, and the bucket boundaries."""

    source: int | None
    target: int | None
    boundaries: tuple[int, ...]

    @property
    def longest(self) -> int | None:
        return max(self.source or 0, self.target or 0) or None

    @classmethod
    def of(cls, source_vectorizer, target_vectorizer, options: DatasetOptions) -> _Limits:
        max_length = options.max_length
        source = max_length if max_length is not None else source_vectorizer.max_length
        target = max_length if max_length is not None else target_vectorizer.max_length
        if target is not None and target < 2:
            raise ValueError(
                "The target length limit must be >= 2 ([START] or [END] plus one token). "
                f"Received: max_length={target}"
            )
        longest = max(source or 0, target or 0) or None
        if options.bucket_boundaries is None:
            boundaries = [b for b in DEFAULT_BUCKET_BOUNDARIES if longest is None or b <= longest]
        else:
            boundaries = list(options.bucket_boundaries)
        return cls(source, target, tuple(boundaries))


def _vectorized(pairs, source_vectorizer, target_vectorizer, options, limits):
    """Steps 1-2 of `make_dataset`: token ids of each pair, filtered or cut to the limits."""
    source_limit, target_limit = limits.source, limits.target
    long_pairs, ratio = options.long_pairs, options.max_length_ratio

    def vectorize(source, target):
        return source_vectorizer.token_ids(source), target_vectorizer.token_ids(target)

    def within_limits(source_ids, target_ids):
        source_length, target_length = tf.size(source_ids), tf.size(target_ids)
        keep = tf.logical_and(source_length > 0, target_length > 0)
        if long_pairs == "drop" and source_limit is not None:
            keep = tf.logical_and(keep, source_length <= source_limit)
        if long_pairs == "drop" and target_limit is not None:
            keep = tf.logical_and(keep, target_length + 1 <= target_limit)
        if ratio is not None:
            longer = tf.cast(tf.maximum(source_length, target_length), tf.float32)
            shorter = tf.cast(tf.minimum(source_length, target_length), tf.float32)
            keep = tf.logical_and(keep, longer <= ratio * shorter)
        return keep

    def truncate(source_ids, target_ids):
        if source_limit is not None:
            source_ids = source_ids[:source_limit]
        if target_limit is not None:
            target_ids = target_ids[: target_limit - 1]
        return source_ids, target_ids

    dataset = (
        pairs.batch(_VECTORIZE_BATCH)
        .map(vectorize, num_parallel_calls=tf.data.AUTOTUNE)
        .unbatch()
        .filter(within_limits)
    )
    if long_pairs == "truncate":
        dataset = dataset.map(truncate)
    return dataset


def _batched(dataset, options, limits):
    """Steps 4-6 of `make_dataset`: shifted targets, length buckets, prefetching."""

    def shift(source_ids, target_ids):
        target_in = tf.concat([[START_ID], target_ids], axis=0)
        target_out = tf.concat([target_ids, [END_ID]], axis=0)
        return source_ids, target_in, target_out

    dataset = dataset.map(shift, num_parallel_calls=tf.data.AUTOTUNE)
    boundaries, batch_size = list(limits.boundaries), options.batch_size
    if boundaries:
        uppers = [b - 1 for b in boundaries] + [limits.longest or 2 * boundaries[-1]]
        if options.tokens_per_batch is None:
            batch_sizes = [batch_size] * len(uppers)
        else:
            per_batch = options.tokens_per_batch
            batch_sizes = [max(1, min(batch_size, per_batch // u)) for u in uppers]
        dataset = dataset.bucket_by_sequence_length(
            element_length_func=lambda s, t_in, t_out: tf.maximum(tf.size(s), tf.size(t_in)),
            bucket_boundaries=boundaries,
            bucket_batch_sizes=batch_sizes,
        )
    else:
        dataset = dataset.padded_batch(batch_size)
    dataset = dataset.map(lambda s, t_in, t_out: ((s, t_in), t_out))
    return dataset.prefetch(tf.data.AUTOTUNE)
