"""The streamed corpus: in-graph parsing and normalization, hashed held-out splits, weighted mixing."""

import collections
import gzip
import itertools

import numpy as np
import pytest

from keras_attention.data import load_corpus
from keras_attention.data.corpus_files import corpus_list, parse_corpus_spec
from keras_attention.data.corpus_sample import sample_corpora
from keras_attention.data.corpus_scan import scan_corpora, scan_corpus
from keras_attention.data.corpus_stream import (
    HASH_BUCKETS,
    TEST,
    TRAIN,
    VALIDATION,
    HeldOut,
    corpus_pairs,
    held_out_split,
    training_pairs,
)


def read_all(scan, held_out=None, **kwargs):
    pairs = []
    held_out = held_out or HeldOut()
    for sources, targets, splits, _ in corpus_pairs(scan, held_out, **kwargs).as_numpy_iterator():
        pairs += [
            (s.decode(), t.decode(), int(k))
            for s, t, k in zip(sources, targets, splits, strict=True)
        ]
    return pairs


def scan_of(spec):
    (corpus,) = parse_corpus_spec(spec)
    return scan_corpus(corpus)


def test_graph_reading_equals_load_corpus_on_the_bundled_corpus():
    """Every pair, normalized in the graph, equals `load_corpus`'s Python normalization."""
    (scan,) = scan_corpora(corpus_list(None))
    streamed = [(s, t) for s, t, _ in read_all(scan)]
    assert streamed == load_corpus().pairs


def test_malformed_lines_are_skipped_as_load_corpus_skips_them(tmp_path):
    text = (
        "Hi.\tSalut.\n\nonly one column\nA\u202f!\tB\tattribution\n\t empty source\nx\ty\tz\tw\n"
        + "More.\tPlus.\n" * 3
    )
    path = tmp_path / "c.tsv"
    path.write_text(text, encoding="utf-8")
    assert (
        [(s, t) for s, t, _ in read_all(scan_of(str(path)))]
        == load_corpus(path).pairs
        == [
            ("Hi.", "Salut."),
            ("A !", "B"),
        ]
        + [("More.", "Plus.")] * 3
    )
    skipped = [int(k) for *_, k in corpus_pairs(scan_of(str(path)), HeldOut()).as_numpy_iterator()]
    assert skipped == [3]


def test_aligned_shards_read_like_the_same_pairs_in_tsv(tmp_path):
    pairs = load_corpus(max_pairs=300).pairs
    (tmp_path / "all.tsv.gz").write_bytes(
        gzip.compress("".join(f"{s}\t{t}\n" for s, t in pairs).encode())
    )
    for index in range(3):
        part = pairs[index * 100 : (index + 1) * 100]
        (tmp_path / f"p{index}.en").write_text("".join(s + "\n" for s, _ in part))
        (tmp_path / f"p{index}.fr").write_text("".join(t + "\n" for _, t in part))
    tsv = read_all(scan_of(str(tmp_path / "all.tsv.gz")))
    aligned = read_all(scan_of(f"src={tmp_path}/p*.en,tgt={tmp_path}/p*.fr"))
    assert aligned == tsv and len(tsv) == 300
    reversed_ = read_all(scan_of(f"src={tmp_path}/p*.en,tgt={tmp_path}/p*.fr"), reverse=True)
    assert [(t, s) for s, t, _ in reversed_] == [(s, t) for s, t, _ in tsv]


def test_held_out_split_is_a_keyed_hash_of_the_source():
    import tensorflow as tf

    sources = [f"sentence {i}" for i in range(20000)]
    held_out = HeldOut(validation_fraction=0.05, test_fraction=0.1, seed=3)
    splits = held_out_split(tf.constant(sources), held_out).numpy()
    buckets = tf.strings.to_hash_bucket_strong(sources, HASH_BUCKETS, key=[3, 0]).numpy()
    expected = np.where(buckets < 100_000, TEST, np.where(buckets < 150_000, VALIDATION, TRAIN))
    np.testing.assert_array_equal(splits, expected)
    shares = collections.Counter(splits.tolist())
    assert abs(shares[TEST] / 20000 - 0.1) < 0.01 and abs(shares[VALIDATION] / 20000 - 0.05) < 0.01
    other_seed = held_out_split(tf.constant(sources), HeldOut(0.05, 0.1, seed=4)).numpy()
    assert (other_seed != splits).any()


def test_training_stream_never_yields_a_held_out_source_and_every_reference_stays_together():
    (scan,) = scan_corpora(corpus_list(None))
    held_out = HeldOut(0.02, 0.02, seed=0)
    everything = read_all(scan, held_out)
    split_of_source = collections.defaultdict(set)
    for source, _, split in everything:
        split_of_source[source].add(split)
    assert all(len(splits) == 1 for splits in split_of_source.values())
    held = {source for source, splits in split_of_source.items() if splits != {TRAIN}}
    stream = training_pairs([scan], held_out, [1], shuffle_buffer=5000, seed=0)
    drawn = [s.decode() for s, _ in itertools.islice(stream.as_numpy_iterator(), 30000)]
    assert not held.intersection(drawn)
    assert len(set(drawn)) > 15000  # shuffled across the corpus, not its first lines


def test_training_stream_skips_the_excluded_sources_whatever_their_bucket(tmp_path):
    """`HeldOut.excluded_sources` (a user-given validation or test file's sources) never
    reach training, though with no held-out share every hash bucket is `TRAIN`."""
    path = tmp_path / "c.tsv"
    path.write_text("".join(f"s{i}.\tt{i}.\n" for i in range(20)), encoding="utf-8")
    scan = scan_of(str(path))
    held_out = HeldOut(0.0, 0.0, excluded_sources=("s3.", "s7.", "not in the corpus"))
    stream = training_pairs([scan], held_out, [1], shuffle_buffer=1000, seed=0)
    drawn = {s.decode() for s, _ in itertools.islice(stream.as_numpy_iterator(), 400)}
    assert drawn == {f"s{i}." for i in range(20)} - {"s3.", "s7."}


def test_training_stream_is_the_same_in_every_process_and_differs_by_seed(tmp_path):
    (scan,) = scan_corpora(corpus_list(None))

    def first(seed, n=2000):
        stream = training_pairs([scan], HeldOut(), [1], shuffle_buffer=3000, seed=seed)
        return list(itertools.islice(stream.as_numpy_iterator(), n))

    assert first(5) == first(5)
    assert first(5) != first(6)


def test_every_iterator_of_a_stream_yields_the_same_pairs(tmp_path):
    """Keras' `fit` under a distribution strategy draws a batch from a first iterator to
    build the model, then starts training on a second: both must see the same pairs,
    or a strategy run trains on other batches than a one-process run."""
    for index in range(3):
        (tmp_path / f"s{index}.tsv").write_text(
            "".join(f"shard {index} line {i}\tfragment {i}\n" for i in range(300))
        )
    (tmp_path / "other.tsv").write_text("".join(f"other {i}\tautre {i}\n" for i in range(500)))
    scans = scan_corpora(
        corpus_list([f"path={tmp_path}/s*.tsv,weight=0.6", f"path={tmp_path}/other.tsv,weight=0.4"])
    )
    for corpora in (scans[:1], scans):
        stream = training_pairs(corpora, HeldOut(), [1] * len(corpora), shuffle_buffer=1000, seed=2)
        first = list(itertools.islice(stream.as_numpy_iterator(), 5))
        again = list(itertools.islice(stream.as_numpy_iterator(), 3000))  # several passes
        assert again[:5] == first
        fresh = training_pairs(corpora, HeldOut(), [1] * len(corpora), shuffle_buffer=1000, seed=2)
        assert list(itertools.islice(fresh.as_numpy_iterator(), 3000)) == again
        # Each pass still visits the shards in another order.
        shards_in_order = [s.decode().split()[1] for s, _ in again if s.startswith(b"shard")]
        assert len(set(shards_in_order[:5])) == 3


def test_each_worker_reads_its_own_lines(tmp_path):
    """Worker i of n reads every n-th line from the i-th: the parts are disjoint and whole."""
    for index in range(3):
        (tmp_path / f"s{index}.tsv").write_text(
            "".join(f"shard {index} line {i}\tfragment {i}\n" for i in range(301))
        )
    scan = scan_of(f"{tmp_path}/s*.tsv")
    whole = read_all(scan)
    parts = [read_all(scan, part=(i, 2)) for i in range(2)]
    assert sorted(parts[0] + parts[1]) == sorted(whole) and len(whole) == 903
    assert not set(parts[0]) & set(parts[1])
    assert parts[0][:2] == [whole[0], whole[2]] and parts[1][:2] == [whole[1], whole[3]]
    streams = [
        training_pairs([scan], HeldOut(), [1], shuffle_buffer=1000, seed=0, part=(i, 2))
        for i in range(2)
    ]
    drawn = [set(itertools.islice(stream.as_numpy_iterator(), 400)) for stream in streams]
    assert not drawn[0] & drawn[1] and len(drawn[0]) > 250


def test_weighted_corpora_mix_in_their_proportions(tmp_path):
    """Two corpora at 30 % / 70 %: within 1 percentage point over 100,000 pairs after filtering."""
    small = tmp_path / "small.tsv"
    small.write_text("".join(f"in-domain {i}\tdomaine {i}\n" for i in range(2000)))
    large = tmp_path / "large"
    large.mkdir()
    for shard in range(4):
        (large / f"g{shard}.tsv").write_text(
            "".join(f"general {shard} {i}\tgénéral {i}\n" for i in range(5000))
            + "malformed line\n" * 100
        )
    scans = scan_corpora(
        corpus_list([f"path={small},weight=0.3", f"path={large}/g*.tsv,weight=0.7"])
    )
    stream = training_pairs(scans, HeldOut(0.02, 0.02), [1, 1], shuffle_buffer=4000, seed=1)
    drawn = [s.decode() for s, _ in itertools.islice(stream.as_numpy_iterator(), 100_000)]
    share = sum(source.startswith("in-domain") for source in drawn) / len(drawn)
    assert abs(share - 0.3) < 0.01
    general_shards = collections.Counter(s.split()[1] for s in drawn if s.startswith("general"))
    assert set(general_shards) == {"0", "1", "2", "3"}  # every shard is read


def test_sample_spans_the_corpus_and_is_bounded(tmp_path):
    (scan,) = scan_corpora(corpus_list(None))
    sample = sample_corpora([scan], HeldOut(), sample_pairs=10_000)
    assert sample.sample_strides == [17] and sample.sampled == len(range(0, 167130, 17))
    assert len(sample.train) + len(sample.validation) + len(sample.test) == sample.sampled
    # The bundled file is sorted by length: a stride sample reaches its long sentences.
    assert max(len(s.split()) for s, _ in sample.train) > 20
    whole = sample_corpora([scan], HeldOut(), sample_pairs=300_000)
    assert whole.sampled == 167130 and whole.sample_strides == [1]
    assert sample.lines == whole.lines == 167130


def test_max_pairs_trains_on_every_kth_line(tmp_path):
    (scan,) = scan_corpora(corpus_list(None))
    sample = sample_corpora([scan], HeldOut(), sample_pairs=300_000, max_pairs=50_000)
    assert sample.strides == [4] and sample.lines == 167130 // 4
    assert sample.sampled == len(range(0, 167130, 4))


def test_a_corpus_of_mostly_malformed_lines_is_refused(tmp_path):
    from keras_attention.data.corpus import CorpusError

    path = tmp_path / "c.tsv"
    path.write_text("a\tb\n" + "no tab here\n" * 3)
    with pytest.raises(CorpusError, match="3 of 4 sampled lines are malformed"):
        sample_corpora(scan_corpora(corpus_list(str(path))), HeldOut(0, 0))


def test_checking_and_sampling_report_their_progress(tmp_path, monkeypatch, caplog):
    from keras_attention.data import progress

    monkeypatch.setattr(progress, "PROGRESS_SECONDS", 0.0)  # a line at every step
    path = tmp_path / "c.tsv"
    path.write_text("".join(f"s {i}\tt {i}\n" for i in range(5000)), encoding="utf-8")
    with caplog.at_level("INFO", logger="keras_attention.progress"):
        sample_corpora(scan_corpora(corpus_list(str(path))), HeldOut(), sample_pairs=5000)
    lines = [r.getMessage() for r in caplog.records if r.name == "keras_attention.progress"]
    assert any(line.startswith("Checking the corpus files: ") for line in lines), lines
    sampling = [line for line in lines if line.startswith("Sampling ")]
    assert [line.split(": ")[1].split(" (")[0] for line in sampling] == [
        "1024 of 5000 pairs",
        "2048 of 5000 pairs",
        "3072 of 5000 pairs",
        "4096 of 5000 pairs",
    ]  # a line after each batch of 1,024 lines but the last
