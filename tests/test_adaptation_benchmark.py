"""`benchmarks/adaptation.py`'s topic split: which pairs it holds out, and where they go."""

import gzip
import zlib

import pytest
from helpers.benchmark_scripts import load_benchmark

PAIRS = [
    ("I eat bread.", "Je mange du pain."),
    ("I eat bread.", "Je mange le pain."),  # a second translation: the same side
    ("Eat!", "Mange !"),
    ("The COFFEE is hot.", "Le café est chaud."),
    ("We ate an apple.", "Nous avons mangé une pomme."),
    ("He was beaten.", "Il a été battu."),  # "eat" inside a word: not the topic
    ("I read a book.", "Je lis un livre."),
    ("Coffeehouses close early.", "Les cafés ferment tôt."),
]
WORDS = ["eat", "ate", "bread", "coffee", "apple"]


@pytest.fixture(scope="module")
def adaptation():
    return load_benchmark("adaptation")


def test_topic_pairs_are_held_out_by_whole_word_and_split_by_source(adaptation, tmp_path):
    corpus = tmp_path / "corpus.tsv.gz"
    with gzip.open(corpus, "wt", encoding="utf-8") as file:
        file.writelines(f"{source}\t{target}\n" for source, target in PAIRS)
    counts = adaptation.split_topic(corpus, WORDS, tmp_path / "out")

    written = {
        name: (tmp_path / "out" / f"{name}.tsv").read_text(encoding="utf-8").splitlines()
        for name in ("general", "topic-train", "topic-test")
    }
    assert counts == {name: len(lines) for name, lines in written.items()}
    general_sources = {line.split("\t")[0] for line in written["general"]}
    assert general_sources == {"He was beaten.", "I read a book.", "Coffeehouses close early."}
    topic = written["topic-train"] + written["topic-test"]
    assert sorted(topic + written["general"]) == sorted(f"{s}\t{t}" for s, t in PAIRS)
    # One English source in TEST_MODULUS by its CRC-32, every translation on one side.
    assert written["topic-test"] and written["topic-train"]  # both sides are checked
    for line in topic:
        source = line.split("\t")[0]
        in_test = zlib.crc32(source.encode("utf-8")) % adaptation.TEST_MODULUS == 0
        assert (line in written["topic-test"]) == in_test, source


def test_every_topic_word_is_one_lowercase_word(adaptation):
    for words in adaptation.TOPICS.values():
        assert len(words) == len(set(words))
        assert all(word.isalpha() and word == word.lower() for word in words)
