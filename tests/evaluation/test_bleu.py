import dataclasses

import pytest
import sacrebleu

from keras_attention.evaluation import (
    TranslationScores,
    bleu_by_length,
    reference_streams,
    score_translations,
)

HYPOTHESES = [
    "The cat is on the mat.",
    "There is a dog in the garden.",
    "I like green tea very much.",
]
REFERENCES = [
    "The cat sits on the mat.",
    "A dog is in the garden.",
    "I really like green tea.",
]


def test_identical_translations_score_100():
    scores = score_translations(REFERENCES, [[r] for r in REFERENCES])
    assert isinstance(scores, TranslationScores)
    assert scores.bleu == pytest.approx(100.0)
    assert scores.chrf == pytest.approx(100.0)
    assert scores.n == 3


def test_matches_sacrebleu_with_one_reference():
    scores = score_translations(HYPOTHESES, [[r] for r in REFERENCES])
    expected_bleu = sacrebleu.corpus_bleu(HYPOTHESES, [REFERENCES])
    expected_chrf = sacrebleu.corpus_chrf(HYPOTHESES, [REFERENCES])
    assert 0.0 < scores.bleu < 100.0
    assert scores.bleu == pytest.approx(expected_bleu.score)
    assert scores.chrf == pytest.approx(expected_chrf.score)
    assert "nrefs:1" in scores.bleu_signature
    assert "case:mixed" in scores.bleu_signature
    assert "tok:13a" in scores.bleu_signature
    assert "nc:6" in scores.chrf_signature
    assert set(dataclasses.asdict(scores)) == {
        "bleu",
        "chrf",
        "bleu_signature",
        "chrf_signature",
        "n",
    }


def test_a_hypothesis_matching_its_second_reference_scores_100():
    hypotheses = ["The weather is nice today.", "Hello world.", "See you tomorrow."]
    references = [
        ["It is sunny today.", "The weather is nice today."],  # matches the 2nd
        ["Hello world."],  # a single reference
        ["Bye.", "Goodbye.", "See you tomorrow."],  # matches the 3rd
    ]
    scores = score_translations(hypotheses, references)
    assert scores.bleu == pytest.approx(100.0)
    assert scores.chrf == pytest.approx(100.0)
    assert "nrefs:var" in scores.bleu_signature


def test_variable_references_match_sacrebleu_with_none_padding():
    references = [[REFERENCES[0], "The cat is on a mat."], [REFERENCES[1]], [REFERENCES[2]]]
    streams = [
        [REFERENCES[0], REFERENCES[1], REFERENCES[2]],
        ["The cat is on a mat.", None, None],
    ]
    assert reference_streams(references) == streams
    scores = score_translations(HYPOTHESES, references)
    assert scores.bleu == pytest.approx(sacrebleu.corpus_bleu(HYPOTHESES, streams).score)
    assert scores.chrf == pytest.approx(sacrebleu.corpus_chrf(HYPOTHESES, streams).score)
    # An extra reference can only help, and the order of references does not matter.
    single = score_translations(HYPOTHESES, [[r] for r in REFERENCES])
    assert scores.bleu > single.bleu
    swapped = score_translations(HYPOTHESES, [references[0][::-1]] + references[1:])
    assert swapped.bleu == pytest.approx(scores.bleu)


def test_none_padding_does_not_act_as_an_empty_reference():
    # A short hypothesis: an empty-string reference would be the closest
    # reference length and remove the brevity penalty.
    hypotheses = ["a b c d e f g h", "x y"]
    references = [["a b c d e f g h"], ["x y z w v u", ""]]
    with_empty = sacrebleu.corpus_bleu(hypotheses, [["a b c d e f g h", "x y z w v u"], [None, ""]])
    ours = score_translations(hypotheses, [references[0], ["x y z w v u"]])
    none_padded = sacrebleu.corpus_bleu(hypotheses, [["a b c d e f g h", "x y z w v u"]])
    assert ours.bleu == pytest.approx(none_padded.score)
    assert ours.bleu != pytest.approx(with_empty.score)


def test_cased_and_detokenized_input():
    cased = score_translations(["hello, world."], [["Hello, world."]])
    assert cased.bleu < 100.0
    # 13a splits punctuation, so detokenized text is scored as intended.
    detok = score_translations(["Hello, world."], [["Hello , world ."]])
    assert detok.bleu == pytest.approx(100.0)


@pytest.mark.parametrize(
    "hypotheses, references, match",
    [
        ([], [], "Received: 0 hypotheses"),
        (["a", "b"], [["a"]], "Received: 2 hypotheses and 1 reference lists"),
        (["a"], ["a"], r"references\[0\]` must be a list"),
        (["a"], [[]], r"references\[0\]` must hold at least one"),
        (["a"], [[None]], "must hold strings only"),
        ([None], [["a"]], r"hypotheses\[0\]` must be a string"),
        ("a", [["a"]], "must be a list of strings"),
    ],
)
def test_invalid_inputs(hypotheses, references, match):
    with pytest.raises(ValueError, match=match):
        score_translations(hypotheses, references)


def test_bleu_by_length_bucket_assignment():
    # Source lengths in words: 1, 5, 6, 10, 11, 25, 30.
    lengths = [1, 5, 6, 10, 11, 25, 30]
    sources = [" ".join(["w"] * n) for n in lengths]
    hypotheses = [f"sentence number {i} is here" for i in range(7)]
    references = [[h] for h in hypotheses]
    references[2] = ["something else entirely"]  # spoils bucket 6-10 only
    rows = bleu_by_length(sources, hypotheses, references)
    assert [row["bucket"] for row in rows] == ["1-5", "6-10", "11-15", "21+"]  # 16-20 empty
    assert [row["count"] for row in rows] == [2, 2, 1, 2]
    assert [row["min_length"] for row in rows] == [1, 6, 11, 21]
    assert [row["max_length"] for row in rows] == [5, 10, 15, None]
    assert rows[0]["bleu"] == pytest.approx(100.0)
    assert rows[2]["bleu"] == pytest.approx(100.0)
    assert rows[3]["bleu"] == pytest.approx(100.0)
    expected = score_translations(hypotheses[2:4], references[2:4]).bleu
    assert rows[1]["bleu"] == pytest.approx(expected)
    assert rows[1]["bleu"] < 100.0


def test_bleu_by_length_counts_whitespace_words_and_custom_buckets():
    sources = ["Hi!", "How are you?", "  spaced   out  words  here "]
    hypotheses = ["Salut !", "Comment vas-tu ?", "des mots espacés"]
    references = [["Salut !"], ["Comment allez-vous ?", "Comment vas-tu ?"], ["x"]]
    rows = bleu_by_length(sources, hypotheses, references, buckets=((1, 1), (2, 4), (5, None)))
    assert [(row["bucket"], row["count"]) for row in rows] == [("1", 1), ("2-4", 2)]


@pytest.mark.parametrize(
    "buckets, match",
    [((), "buckets=()"), (((5, 1),), r"\(5, 1\)"), (((1,),), r"\(1,\)"), ((("1", 2),), "'1'")],
)
def test_bleu_by_length_invalid_buckets(buckets, match):
    with pytest.raises(ValueError, match=match):
        bleu_by_length(["a"], ["a"], [["a"]], buckets=buckets)


def test_bleu_by_length_mismatched_sources():
    with pytest.raises(ValueError, match="Received: 1 sources, 2 hypotheses and 2 reference lists"):
        bleu_by_length(["a"], ["a", "b"], [["a"], ["b"]])
