"""`VocabularyShortlist`: the Dice table of a hand-worked corpus, candidates against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from keras_attention.shortlist.vocabulary_shortlist import VocabularyShortlist

# Source ids 4 "cat", 5 "dog", 6 "the"; target ids 4 "chat", 5 "chien", 6 "le", 7 "noir",
# 8 "toutou"; 0-3 are padding, [UNK], [START], [END].
TOY_PAIRS = [
    ([6, 4], [6, 4]),  # the cat -> le chat
    ([6, 5], [6, 5]),  # the dog -> le chien
    ([4], [4, 7, 7]),  # cat -> chat noir noir (a repeated word counts once per pair)
    ([6, 4, 4, 0], [6, 4, 3, 0]),  # padded, [END]: neither is counted
    ([5], [8]),  # dog -> toutou
]
# N = 5 pairs. Pairs holding each id: c(s4)=3, c(s5)=2, c(s6)=3; c(t4)=3, c(t5)=1,
# c(t6)=3, c(t7)=1, c(t8)=1. Together: (4,4)=3, (4,6)=2, (4,7)=1, (5,5)=1, (5,6)=1,
# (5,8)=1, (6,4)=2, (6,5)=1, (6,6)=3.
# LMI c(s,t) ln(N c(s,t) / (c(s) c(t))):
#   s4: t4 3 ln(15/9)=1.53, t7 ln(5/3)=0.51, t6 2 ln(10/9)=0.21
#   s5: t5 ln(5/2)=0.92, t8 ln(5/2) (a tie: the lower id first), t6 ln(5/6)=-0.18
#   s6: t6 3 ln(15/9)=1.53, t5 ln(5/3)=0.51, t4 2 ln(10/9)=0.21
# Dice 2 c(s,t) / (c(s) + c(t)):
#   s4: t4 6/6=1, t6 4/6, t7 2/4
#   s5: t5 2/3, t8 2/3 (a tie), t6 2/5
#   s6: t6 6/6=1, t4 4/6, t5 2/4
# Three targets co-occur with each source: the fourth column is padding.
EXPECTED_TABLES = {
    "lmi": [[0, 0, 0, 0]] * 4 + [[4, 7, 6, 0], [5, 8, 6, 0], [6, 5, 4, 0]],
    "dice": [[0, 0, 0, 0]] * 4 + [[4, 6, 7, 0], [5, 8, 6, 0], [6, 4, 5, 0]],
}
# Occurrences: t4 3, t6 3, t7 2, t5 1, t8 1.


@pytest.mark.parametrize("measure", ("lmi", "dice"))
def test_build_on_a_hand_worked_corpus(measure):
    shortlist = VocabularyShortlist.build(TOY_PAIRS, 7, 9, k=4, frequent=3, measure=measure)
    assert shortlist.table.tolist() == EXPECTED_TABLES[measure]
    assert shortlist.table.dtype == np.int32
    assert shortlist.frequent_ids.tolist() == [4, 6, 7]
    assert shortlist.describe() == {
        "k": 4,
        "frequent": 3,
        "measure": measure,
        "pairs": 5,
        "special_ids": [0, 1, 2, 3],
        "table_shape": [7, 4],
        "table_bytes": 7 * 4 * 4,
    }
    top = VocabularyShortlist.build(TOY_PAIRS, 7, 9, k=1, frequent=0, measure=measure)
    assert top.table[4:, 0].tolist() == [4, 5, 6]
    assert top.frequent_ids.size == 0


def test_a_generator_of_pairs_and_more_frequent_ids_than_targets():
    shortlist = VocabularyShortlist.build(iter(TOY_PAIRS), 7, 9, k=2, frequent=300)
    assert shortlist.measure == "lmi"  # the default
    assert shortlist.table.tolist() == [row[:2] for row in EXPECTED_TABLES["lmi"]]
    # The special ids are never "frequent".
    assert shortlist.frequent_ids.tolist() == [4, 5, 6, 7, 8]


def numpy_candidates(shortlist, source_ids):
    chosen = set(shortlist.table[np.asarray(source_ids).ravel()].ravel().tolist())
    chosen |= set(shortlist.frequent_ids.tolist()) | set(range(max(shortlist.special_ids) + 1))
    return sorted(chosen)


def test_candidates_equal_numpy_and_keep_the_special_ids_in_place():
    rng = np.random.default_rng(0)
    table = rng.integers(0, 500, size=(40, 7))
    shortlist = VocabularyShortlist(table, [499, 10, 10, 250], 500)
    for source_ids in ([[0]], [[5, 6, 0, 0], [39, 1, 2, 0]], rng.integers(0, 40, size=(8, 9))):
        candidates = shortlist.candidates(tf.constant(source_ids)).numpy()
        assert candidates.dtype == np.int32
        assert candidates.tolist() == numpy_candidates(shortlist, source_ids)
        assert candidates[:4].tolist() == [0, 1, 2, 3]
    graph = tf.function(
        shortlist.candidates, input_signature=[tf.TensorSpec([None, None], tf.int32)]
    )
    assert graph(tf.constant([[5, 6]])).numpy().tolist() == numpy_candidates(shortlist, [[5, 6]])


@pytest.mark.parametrize(
    "k, frequent, message",
    [
        (0, 10, r"`k` must be an integer >= 1. Received: k=0"),
        (-3, 10, r"`k` must be an integer >= 1. Received: k=-3"),
        (10, 10, r"`k` must be at most the target vocabulary size, 9. Received: k=10"),
        (2.0, 10, r"`k` must be an integer >= 1. Received: k=2.0"),
        (True, 10, r"`k` must be an integer >= 1. Received: k=True"),
        (2, -1, r"`frequent` must be an integer >= 0. Received: frequent=-1"),
    ],
)
def test_bad_sizes_are_named(k, frequent, message):
    with pytest.raises(ValueError, match=message):
        VocabularyShortlist.build(TOY_PAIRS, 7, 9, k=k, frequent=frequent)


def test_bad_pairs_and_tables_are_named():
    with pytest.raises(ValueError, match=r"`measure` must be one of \('lmi', 'dice'\).*'pmi'"):
        VocabularyShortlist.build(TOY_PAIRS, 7, 9, k=2, measure="pmi")
    with pytest.raises(ValueError, match="`pairs` is empty"):
        VocabularyShortlist.build([], 7, 9, k=2)
    with pytest.raises(ValueError, match=r"A target id is outside \[0, 9\): 4..9"):
        VocabularyShortlist.build([([4], [4, 9])], 7, 9, k=2)
    with pytest.raises(ValueError, match=r"A source id is outside \[0, 7\)"):
        VocabularyShortlist.build([([7], [4])], 7, 9, k=2)
    with pytest.raises(ValueError, match=r"`table` must hold target ids in \[0, 9\)"):
        VocabularyShortlist([[4, 12]], [], 9)
    with pytest.raises(ValueError, match=r"`table` must have shape \(source_vocabulary_size, k\)"):
        VocabularyShortlist([4, 5], [], 9)
