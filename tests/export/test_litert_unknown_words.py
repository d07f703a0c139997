"""Unknown-word replacement on the LiteRT path: a tiny word-vocabulary run whose test split
holds source words outside its vocabulary and whose translations hold `[UNK]`.

The references: the SavedModel of the same run on TF Serving's Session path (its
signatures replace each `[UNK]` in the graph), the run's `Translator`, and the rule itself
worked out with NumPy on the models' own attention (the source token at the step's
attention peak).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers.export_testing import train_export_run

from keras_attention.cli import main
from keras_attention.export.litert.check_report import LiteRTCheckReport
from keras_attention.export.litert.checker import LiteRTChecker
from keras_attention_client.litert_contract import MANIFEST_FILE, MODES
from keras_attention_client.litert_translator import LiteRTTranslator
from keras_attention_client.wire.contract import BEAM_SEARCH, DEFAULT_SIGNATURE, TEXT_INPUT
from keras_attention_client.wire.translation import Translation

BEAM = {"beam_width": 3, "length_penalty": 0.6}
SIGNATURES = {"greedy": DEFAULT_SIGNATURE, "beam": BEAM_SEARCH}
NO_ATTENTION = np.zeros([0, 0], np.float32)


@pytest.fixture(scope="module")
def unknown_run(tmp_path_factory) -> Path:
    """20 source and 19 target vocabulary entries (4 of them reserved) for 19 words each:
    "house", "see" and "the" are `[UNK]` in the source, and the model emits `[UNK]`."""
    root = tmp_path_factory.mktemp("unknown_run")
    return train_export_run(
        root, source_vocabulary_size=20, target_vocabulary_size=19, steps_per_epoch=150
    )


@pytest.fixture(scope="module")
def test_sources(unknown_run) -> list[str]:
    lines = (unknown_run / "splits" / "test.tsv").read_text(encoding="utf-8").splitlines()
    return [line.split("\t")[0] for line in lines]


def _export_litert(run: Path, out: Path, *flags: str) -> str:
    """`keras-attention export RUN --format litert` (checked); returns what it printed."""
    argv = ["export", str(run), "--export-dir", str(out), "--format", "litert"]
    argv += ["--beam-width", str(BEAM["beam_width"]), "--length-penalty", "0.6", *flags]
    assert main(argv) == 0
    return out


@pytest.fixture(scope="module")
def litert_exports(unknown_run, tmp_path_factory) -> dict[bool, Path]:
    """replace_unknown -> the run's LiteRT export, written and checked by the command."""
    root = tmp_path_factory.mktemp("unknown_litert")
    return {
        True: _export_litert(unknown_run, root / "replaced"),
        False: _export_litert(unknown_run, root / "kept", "--no-replace-unknown"),
    }


def test_the_warmup_holds_unknown_words(unknown_run, litert_exports, capsys):
    """The run is what the tests need: a warmup translation with `[UNK]`, and the
    command's check (against the run's Translator) passes with either setting."""
    kept = LiteRTTranslator(litert_exports[False])
    sources = [source for source, _ in kept.manifest["warmup_pairs"]]
    vocabulary = set(kept.text.source.vocabulary)
    assert any(token not in vocabulary for s in sources for token in kept.text.encode(s)[1])
    for mode in MODES:
        assert any("[UNK]" in result.tokens for result in kept.translate(sources, mode))
    for replace, directory in litert_exports.items():
        manifest = json.loads((directory / MANIFEST_FILE).read_text(encoding="utf-8"))
        assert manifest["replace_unknown"] is replace
        assert LiteRTTranslator(directory).replace_unknown is replace
        report = LiteRTChecker().check(directory)
        assert report.ok, report.format()
        assert all(c["identical"] == c["sentences"] for c in report.comparisons.values())


@pytest.mark.parametrize("mode", MODES)
def test_replacement_copies_the_attention_peak(litert_exports, test_sources, mode):
    """Replaced = kept, with each `[UNK]` the source token of the step's largest weight."""
    kept = LiteRTTranslator(litert_exports[False]).translate(test_sources, mode)
    replaced = LiteRTTranslator(litert_exports[True]).translate(test_sources, mode)
    unknowns = 0
    for before, after in zip(kept, replaced, strict=True):
        assert after.score == before.score
        np.testing.assert_array_equal(after.attention, before.attention)
        for step, token in enumerate(before.tokens):
            if token == "[UNK]":
                unknowns += 1
                peak = int(np.argmax(before.attention[step]))
                assert after.tokens[step] == before.source_tokens[peak]
            else:
                assert after.tokens[step] == token
        if "[UNK]" not in before.tokens:
            assert after.text == before.text
        else:
            assert "[UNK]" not in after.text
    assert unknowns >= 3


@pytest.mark.parametrize("replace", [True, False])
@pytest.mark.parametrize("mode", MODES)
def test_litert_translates_as_the_translator(
    unknown_run, litert_exports, test_sources, mode, replace
):
    from keras_attention.export.export_precision import with_precision
    from keras_attention.inference.trained_run import load_translator

    translator = with_precision(load_translator(unknown_run, replace_unknown=replace), "float32")
    want = translator.translate_all(test_sources, **({} if mode == "greedy" else BEAM))
    got = LiteRTTranslator(litert_exports[replace]).translate(test_sources, mode)
    assert [r.tokens for r in got] == [r.tokens for r in want]
    assert [r.text for r in got] == [r.text for r in want]


@pytest.mark.slow
def test_litert_strings_equal_the_saved_model_on_the_test_split(
    unknown_run, litert_exports, test_sources, tmp_path
):
    """The whole test split, on the SavedModel's Session path and through LiteRT."""
    from keras_attention.export import SavedModelSession, TranslatorExporter

    exported = TranslatorExporter.from_run(unknown_run, precision="float32", **BEAM).export(
        tmp_path / "base"
    )
    litert = LiteRTTranslator(litert_exports[True])
    with SavedModelSession(exported.path) as session:
        for mode in MODES:
            outputs = session.run(
                SIGNATURES[mode], {TEXT_INPUT: np.array([s.encode() for s in test_sources])}
            )
            want = [text.decode("utf-8") for text in outputs["translation"]]
            got = [result.text for result in litert.translate(test_sources, mode)]
            assert got == want
            assert any(
                token not in litert.text.target.ids
                for result in litert.translate(test_sources, mode)
                for token in result.tokens
            ), "no [UNK] was replaced: the comparison would not test the rule"
    # The checker compares with the SavedModel too, like with like: an export that keeps
    # [UNK] is translated again with the SavedModel's setting (a warning says so).
    report = LiteRTChecker(saved_model=exported.path).check(litert_exports[False])
    assert report.ok, report.format()
    assert any("replace_unknown" in warning for warning in report.warnings)
    assert all(c["identical"] == c["sentences"] for c in report.comparisons.values())


def test_a_difference_names_the_sentence_and_both_outputs():
    report = LiteRTCheckReport(path="x", reference="the reference")
    expected = [
        Translation("Je bouge.", -1.0, 3, ["Je", "bouge", "."], ["I", "move", "."], NO_ATTENTION),
        Translation("oui", -0.5, 1, ["oui"], ["yes"], NO_ATTENTION),
    ]
    got = [
        Translation("Je [UNK].", -1.25, 3, ["Je", "[UNK]", "."], ["I", "move", "."], NO_ATTENTION),
        expected[1],
    ]
    results = {"greedy": got, "greedy.seconds": 0.1}
    LiteRTChecker._compare(report, "greedy", ["I move.", "yes"], expected, results, False)
    assert report.comparisons["greedy"]["identical"] == 1
    assert report.comparisons["greedy"]["max_score_difference"] == pytest.approx(0.25)
    assert report.errors == [
        "greedy: 1 of 2 warmup translations differ from the reference: "
        "'I move.': LiteRT 'Je [UNK].', reference 'Je bouge.'"
    ]
    results = {**results, "beam": got, "beam.seconds": 0.1}
    LiteRTChecker._compare(report, "beam", ["I move.", "yes"], expected, results, True)
    assert len(report.warnings) == 1 and len(report.errors) == 1


def test_replace_unknown_refuses_bad_values_and_reads_older_manifests(litert_exports, tmp_path):
    import shutil

    with pytest.raises(ValueError, match="replace_unknown"):
        LiteRTTranslator(litert_exports[True], replace_unknown="yes")
    copy = Path(shutil.copytree(litert_exports[True], tmp_path / "old"))
    manifest = json.loads((copy / MANIFEST_FILE).read_text(encoding="utf-8"))
    del manifest["replace_unknown"]  # an export written before the setting was recorded
    (copy / MANIFEST_FILE).write_text(json.dumps(manifest), encoding="utf-8")
    assert LiteRTTranslator(copy).replace_unknown is False


def test_replace_unknown_is_refused_for_a_sentencepiece_target(litert_exports, tmp_path):
    """A SentencePiece target never emits `[UNK]` (as `Translator` says)."""
    import shutil

    from keras_attention.export.litert.text_files import write_text_files
    from keras_attention.text import SubwordVectorizer, train_subword_model

    model = train_subword_model(["a small red house", "the big dog sees a cat"] * 50, 300)
    vectorizer = SubwordVectorizer(model, max_length=12)
    write_text_files(tmp_path, vectorizer, vectorizer, 12)
    shutil.copy(litert_exports[True] / MANIFEST_FILE, tmp_path / MANIFEST_FILE)
    with pytest.raises(ValueError, match="SentencePiece"):
        LiteRTTranslator(tmp_path, replace_unknown=True)
    assert LiteRTTranslator(tmp_path, replace_unknown=False).replace_unknown is False
