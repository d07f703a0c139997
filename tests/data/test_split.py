import collections

import pytest

from keras_attention.data import CorpusSplits, group_references, split_corpus


def make_pairs(n_sources=200):
    """Sources sorted by "length" like the bundled file; source i has 1 + i % 3 translations."""
    return [(f"source {i}", f"target {i}.{k}") for i in range(n_sources) for k in range(1 + i % 3)]


def sources(pairs):
    return {source for source, _ in pairs}


def test_no_source_sentence_in_two_splits():
    pairs = make_pairs()
    splits = split_corpus(pairs, validation_fraction=0.1, test_fraction=0.1, seed=3)
    train, validation, test = (
        sources(splits.train),
        sources(splits.validation),
        sources(splits.test),
    )
    assert not train & validation and not train & test and not validation & test
    assert train | validation | test == sources(pairs)


def test_every_translation_is_kept_with_its_source():
    pairs = make_pairs()
    splits = split_corpus(pairs, validation_fraction=0.1, test_fraction=0.1)
    together = splits.train + splits.validation + splits.test
    assert collections.Counter(together) == collections.Counter(pairs)
    for split in (splits.train, splits.validation, splits.test):
        for source, references in group_references(split):
            i = int(source.split()[1])
            assert references == [f"target {i}.{k}" for k in range(1 + i % 3)]


def test_fractions_count_source_sentences():
    splits = split_corpus(make_pairs(200), validation_fraction=0.1, test_fraction=0.05)
    assert len(sources(splits.validation)) == 20
    assert len(sources(splits.test)) == 10
    assert len(sources(splits.train)) == 170


def test_deterministic_and_seed_dependent():
    pairs = make_pairs()
    first = split_corpus(pairs, seed=7, validation_fraction=0.1, test_fraction=0.1)
    again = split_corpus(list(pairs), seed=7, validation_fraction=0.1, test_fraction=0.1)
    other = split_corpus(pairs, seed=8, validation_fraction=0.1, test_fraction=0.1)
    assert first == again
    assert first.test != other.test


def test_shuffled_before_splitting():
    # The input is sorted by index; a test split of the last sources would be all >= 180.
    splits = split_corpus(make_pairs(200), validation_fraction=0.1, test_fraction=0.1)
    indices = sorted(int(s.split()[1]) for s in sources(splits.test))
    assert indices[0] < 100 < indices[-1]


def test_max_pairs_samples_whole_sources_first():
    pairs = make_pairs(300)
    splits = split_corpus(pairs, validation_fraction=0.1, test_fraction=0.1, max_pairs=100)
    together = splits.train + splits.validation + splits.test
    assert len(together) == 100
    assert set(together) <= set(pairs)
    indices = sorted(int(s.split()[1]) for s in sources(together))
    assert indices[-1] > 100  # a random sample, not the first (shortest) pairs
    # Only the last source taken may lose some of its translations.
    counts = collections.Counter(source for source, _ in together)
    incomplete = [s for s, n in counts.items() if n != 1 + int(s.split()[1]) % 3]
    assert len(incomplete) <= 1
    assert split_corpus(pairs, max_pairs=100) == split_corpus(pairs, max_pairs=100)


def test_zero_fractions_and_tiny_corpora():
    pairs = make_pairs(3)
    splits = split_corpus(pairs, validation_fraction=0.0, test_fraction=0.0)
    assert splits.validation == [] and splits.test == [] and len(splits.train) == len(pairs)
    tiny = split_corpus(pairs, validation_fraction=0.02, test_fraction=0.02)
    assert all(len(sources(s)) == 1 for s in (tiny.train, tiny.validation, tiny.test))
    with pytest.raises(ValueError, match="too few"):
        split_corpus(make_pairs(2), validation_fraction=0.02, test_fraction=0.02)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"validation_fraction": -0.1}, "validation_fraction=-0.1"),
        ({"validation_fraction": 1.0}, "validation_fraction=1.0"),
        ({"test_fraction": "0.1"}, "test_fraction='0.1'"),
        ({"validation_fraction": 0.5, "test_fraction": 0.5}, "below 1"),
        ({"max_pairs": 0}, "max_pairs=0"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        split_corpus(make_pairs(), **kwargs)


def test_group_references_keeps_first_seen_order():
    pairs = [("Hi.", "Salut."), ("Run!", "Cours !"), ("Hi.", "Bonjour."), ("Run!", "Courez !")]
    assert group_references(pairs) == [
        ("Hi.", ["Salut.", "Bonjour."]),
        ("Run!", ["Cours !", "Courez !"]),
    ]
    splits = CorpusSplits(train=pairs, validation=[], test=pairs[:1])
    assert splits.references("test") == [("Hi.", ["Salut."])]
    with pytest.raises(ValueError, match="split='dev'"):
        splits.references("dev")


def test_bundled_corpus_split_has_no_leakage():
    from keras_attention.data import load_corpus

    pairs = load_corpus().pairs
    splits = split_corpus(pairs)
    train, validation, test = (
        sources(splits.train),
        sources(splits.validation),
        sources(splits.test),
    )
    assert not train & validation and not train & test and not validation & test
    assert len(splits.train) + len(splits.validation) + len(splits.test) == len(pairs)
    # Many English sentences have several French translations: test sources keep them all.
    references = group_references(splits.test)
    assert len(references) < len(splits.test)
