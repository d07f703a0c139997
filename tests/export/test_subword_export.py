"""A `--tokenizer subwords` run exported: SentencePiece in the graph, on every load path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers.export_testing import SENTENCES, train_export_run

from keras_attention.cli import main
from keras_attention.export import ExportChecker, ExportManifest, SavedModelSession

# A subword run and its export take about a minute: with the slow tests.
pytestmark = pytest.mark.slow

UNSEEN = ["Ωμέγα 😀 ŧ", "", "the dog"]


@pytest.fixture(scope="module")
def subword_run(tmp_path_factory) -> Path:
    return train_export_run(
        tmp_path_factory.mktemp("subword_run"),
        tokenizer="subwords",
        source_vocabulary_size=300,
        target_vocabulary_size=300,
        max_length=24,
        max_output_length=12,
        steps_per_epoch=20,
    )


@pytest.fixture(scope="module")
def subword_export(subword_run, tmp_path_factory):
    from keras_attention.export import TranslatorExporter

    base = tmp_path_factory.mktemp("subword_export")
    return TranslatorExporter.from_run(subword_run, beam_width=2).export(base)


def test_export_carries_the_tokenizer_and_passes_check_export(subword_export, capsys):
    manifest = ExportManifest.load(subword_export.path)
    assert manifest.vocabulary["tokenizer"] == "subwords"
    assert manifest.train_config["tokenizer"] == "subwords"
    assert main(["check-export", str(subword_export.path), "--native"]) == 0
    out = capsys.readouterr().out
    assert "SentencepieceOp" in out and "SentencepieceTokenizeOp" in out
    assert "Result: OK" in out


def test_session_path_matches_the_python_translator(subword_run, subword_export):
    from keras_attention.inference.trained_run import load_translator

    translator = load_translator(subword_run)
    texts = SENTENCES + UNSEEN
    expected = [r.text for r in translator.translate_all(texts, batch_size=len(texts))]
    with SavedModelSession(subword_export.path) as session:
        outputs = session.run("serving_default", {"text": np.array(texts, dtype=object)})
    assert [t.decode("utf-8") for t in outputs["translation"]] == expected
    assert not np.any(outputs["tokens"] == b"[UNK]")
    # Source pieces: the unseen characters are byte pieces, never [UNK].
    assert b"<0xF0>" in outputs["source_tokens"][len(SENTENCES)]
    assert not np.any(outputs["source_tokens"] == b"[UNK]")


def test_manifest_tokenizer_that_the_graph_does_not_hold_fails_the_check(subword_export, tmp_path):
    copy = Path(shutil.copytree(subword_export.path, tmp_path / "base" / "1"))
    manifest_path = copy / "assets.extra" / "export_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["vocabulary"]["tokenizer"] = "words"
    manifest_path.write_text(json.dumps(manifest))
    report = ExportChecker(replay_warmup=False).check(copy)
    assert not report.ok
    assert any("tokenizer 'words'" in error and "do not match" in error for error in report.errors)
