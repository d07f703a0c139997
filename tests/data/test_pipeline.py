import numpy as np
import pytest
import tensorflow as tf

from keras_attention.data import DatasetOptions, make_dataset
from keras_attention.text import TextVectorizer

RESERVED = ["", "[UNK]", "[START]", "[END]"]
WORDS = [f"w{i}" for i in range(40)]
SOURCE = TextVectorizer(RESERVED + WORDS)
TARGET = TextVectorizer(RESERVED + [w.upper() for w in WORDS], french_spacing=True)


def sentence(n, offset, upper=False):
    words = [WORDS[(offset + k) % len(WORDS)] for k in range(n)]
    return " ".join(w.upper() if upper else w for w in words)


def make_pairs(count=60, seed=0):
    """Pair i: a source of 1..20 words and a target of a different length."""
    rng = np.random.default_rng(seed)
    pairs = []
    for i in range(count):
        n, m = int(rng.integers(1, 21)), int(rng.integers(1, 21))
        pairs.append((sentence(n, i), sentence(m, i, upper=True)))
    return pairs


def expected_ids(text, vocabulary):
    return [vocabulary.index(token) for token in text.split()]


def collect(dataset):
    return [(s.numpy(), t_in.numpy(), t_out.numpy()) for (s, t_in), t_out in dataset]


def rows(batches):
    """Every example of every batch, padding removed, as tuples of lists."""
    out = []
    for s, t_in, t_out in batches:
        for a, b, c in zip(s, t_in, t_out, strict=True):
            out.append((a[a != 0].tolist(), b[b != 0].tolist(), c[c != 0].tolist()))
    return out


def test_structure_dtypes_and_shapes():
    dataset = make_dataset(make_pairs(), SOURCE, TARGET, DatasetOptions(batch_size=8))
    assert dataset.element_spec == (
        (tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None, None], tf.int32)),
        tf.TensorSpec([None, None], tf.int32),
    )
    for s, t_in, t_out in collect(dataset):
        assert s.shape[0] == t_in.shape[0] == t_out.shape[0] <= 8
        assert t_in.shape == t_out.shape


def test_target_in_and_out_are_shifted_by_one():
    pairs = make_pairs()
    examples = rows(
        collect(make_dataset(pairs, SOURCE, TARGET, DatasetOptions(batch_size=8, shuffle=False)))
    )
    by_source = {tuple(s): (t_in, t_out) for s, t_in, t_out in examples}
    target_vocabulary = TARGET.get_vocabulary()
    for source, target in pairs:
        t_in, t_out = by_source[tuple(expected_ids(source, SOURCE.get_vocabulary()))]
        ids = expected_ids(target, target_vocabulary)
        assert t_in == [2] + ids
        assert t_out == ids + [3]
    assert len(examples) == len(pairs)


def test_padding_is_zero_and_only_at_the_end():
    for s, t_in, t_out in collect(
        make_dataset(make_pairs(), SOURCE, TARGET, DatasetOptions(batch_size=8))
    ):
        for matrix in (s, t_in, t_out):
            lengths = (matrix != 0).sum(axis=1)
            assert lengths.min() >= 1
            mask = np.arange(matrix.shape[1])[None, :] < lengths[:, None]
            assert ((matrix != 0) == mask).all()  # no 0 inside, no token in the padding
            assert lengths.max() == matrix.shape[1]  # padded to the batch's longest only
        # target_in and target_out have the same length row by row
        assert ((t_in != 0).sum(axis=1) == (t_out != 0).sum(axis=1)).all()


def test_bucketing_groups_similar_lengths():
    boundaries = [6, 11, 16]
    dataset = make_dataset(
        make_pairs(200), SOURCE, TARGET, DatasetOptions(batch_size=8, bucket_boundaries=boundaries)
    )
    for s, t_in, _ in collect(dataset):
        lengths = np.maximum((s != 0).sum(axis=1), (t_in != 0).sum(axis=1))
        buckets = np.searchsorted(boundaries, lengths, side="right")
        assert len(set(buckets.tolist())) == 1, lengths


def test_tokens_per_batch_shrinks_batches_of_long_sentences():
    boundaries = [6, 11, 16]
    dataset = make_dataset(
        make_pairs(800),
        SOURCE,
        TARGET,
        DatasetOptions(batch_size=32, bucket_boundaries=boundaries, tokens_per_batch=100),
    )
    # Bucket upper lengths 5, 10, 15 and (no length limit) 2 * 16 = 32:
    # 100 // upper sentences per batch.
    expected = [20, 10, 6, 3]
    largest = [0, 0, 0, 0]
    for s, t_in, _ in collect(dataset):
        lengths = np.maximum((s != 0).sum(axis=1), (t_in != 0).sum(axis=1))
        bucket = int(np.searchsorted(boundaries, lengths.max(), side="right"))
        assert s.shape[0] <= expected[bucket]
        largest[bucket] = max(largest[bucket], s.shape[0])
    assert largest == expected


def test_no_bucketing_keeps_data_order():
    pairs = make_pairs(20)
    batches = collect(
        make_dataset(
            pairs, SOURCE, TARGET, DatasetOptions(batch_size=8, shuffle=False, bucket_boundaries=[])
        )
    )
    assert [b[0].shape[0] for b in batches] == [8, 8, 4]
    sources = [row[0] for row in rows(batches)]
    assert sources == [expected_ids(s, SOURCE.get_vocabulary()) for s, _ in pairs]


def test_deterministic_with_a_seed():
    pairs = make_pairs(100)

    def epochs(seed):
        dataset = make_dataset(pairs, SOURCE, TARGET, DatasetOptions(batch_size=8, seed=seed))
        return [rows(collect(dataset)) for _ in range(2)]

    first, again, other = epochs(1), epochs(1), epochs(2)
    assert first == again
    assert first[0] != first[1]  # reshuffled every epoch
    assert first[0] != other[0]
    assert sorted(map(str, first[0])) == sorted(map(str, first[1]))  # same examples


def test_long_pairs_dropped_or_truncated():
    pairs = [(sentence(3, 0), sentence(3, 0, True)), (sentence(9, 0), sentence(2, 0, True))]
    pairs += [(sentence(2, 0), sentence(7, 0, True))]
    dropped = rows(
        collect(make_dataset(pairs, SOURCE, TARGET, DatasetOptions(batch_size=4, max_length=5)))
    )
    assert len(dropped) == 1 and len(dropped[0][0]) == 3

    truncated = rows(
        collect(
            make_dataset(
                pairs,
                SOURCE,
                TARGET,
                DatasetOptions(batch_size=4, max_length=5, long_pairs="truncate", shuffle=False),
            )
        )
    )
    assert sorted(len(s) for s, _, _ in truncated) == [2, 3, 5]
    for _, t_in, t_out in truncated:
        assert len(t_in) <= 5 and t_in[0] == 2 and t_out[-1] == 3


def test_vectorizer_max_length_is_the_default_limit():
    source = TextVectorizer(SOURCE.get_vocabulary(), max_length=4)
    target = TextVectorizer(TARGET.get_vocabulary(), max_length=4)
    examples = rows(
        collect(make_dataset(make_pairs(100), source, target, DatasetOptions(batch_size=8)))
    )
    assert examples
    assert all(len(s) <= 4 and len(t_in) <= 4 for s, t_in, _ in examples)


def test_empty_sides_are_dropped():
    pairs = [("w1 w2", "W1"), ("", "W2"), ("w3", "   ")]
    assert (
        len(rows(collect(make_dataset(pairs, SOURCE, TARGET, DatasetOptions(batch_size=4))))) == 1
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"batch_size": 0}, "batch_size=0"),
        ({"max_length": -1}, "max_length=-1"),
        ({"max_length": 1}, "max_length=1"),
        ({"long_pairs": "cut"}, "long_pairs='cut'"),
        ({"bucket_boundaries": [5, 3]}, "bucket_boundaries"),
        ({"tokens_per_batch": 0}, "tokens_per_batch=0"),
    ],
)
def test_bad_arguments(kwargs, match):
    arguments = {"batch_size": 4} | kwargs
    with pytest.raises(ValueError, match=match):
        make_dataset(make_pairs(4), SOURCE, TARGET, DatasetOptions(**arguments))
    with pytest.raises(ValueError, match="empty"):
        make_dataset([], SOURCE, TARGET, DatasetOptions(batch_size=4))


def test_repeated_stream_is_the_same_for_every_iterator_and_resumable():
    pairs = make_pairs(50)
    unbatched = dict(bucket_boundaries=[], batch_size=1, seed=3, repeat=True)
    stream = make_dataset(pairs, SOURCE, TARGET, DatasetOptions(**unbatched))
    first_three_passes = rows(collect(stream.take(150)))
    passes = [first_three_passes[i : i + 50] for i in (0, 50, 100)]
    for one_pass in passes:  # each pass is a permutation of all the pairs
        assert sorted(map(str, one_pass)) == sorted(map(str, rows(collect(
            make_dataset(pairs, SOURCE, TARGET, DatasetOptions(batch_size=1, shuffle=False, bucket_boundaries=[]))
        ))))  # fmt: skip
    assert passes[0] != passes[1] != passes[2]

    batched = make_dataset(pairs, SOURCE, TARGET, DatasetOptions(batch_size=8, seed=3, repeat=True))
    iterator = iter(batched)
    next(iterator)  # another iterator in use does not change what a new one yields
    a = rows(collect(batched.take(20)))
    assert a == rows(collect(batched.take(20)))
    assert rows(collect(batched.skip(7).take(13))) == a[len(rows(collect(batched.take(7)))) :]
    other_seed = make_dataset(
        pairs, SOURCE, TARGET, DatasetOptions(batch_size=8, seed=4, repeat=True)
    )
    assert rows(collect(other_seed.take(20))) != a
