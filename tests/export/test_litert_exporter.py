"""A LiteRT export of the export tests' tiny run: builtin ops only, any batch size, the
SavedModel's translations.

The references: the run's `Translator` (the functions the SavedModel's signatures hold)
and the SavedModel itself on TF Serving's Session path (`LiteRTChecker`).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers.export_testing import SENTENCES

from keras_attention.cli import main
from keras_attention.export.litert.checker import LiteRTChecker
from keras_attention.export.litert.exporter import LiteRTExporter
from keras_attention.export.litert.ops import model_ops
from keras_attention.export.litert.settings import LiteRTSettings
from keras_attention_client.litert_contract import MANIFEST_FILE, MODEL_FILES, MODES
from keras_attention_client.litert_translator import LiteRTTranslator

INPUTS = [*SENTENCES, "", "   "]


@pytest.fixture(scope="module")
def litert_export(run_dir, tmp_path_factory) -> Path:
    """The run's LiteRT export, with the beam of the SavedModel fixture (`exporter`)."""
    directory = tmp_path_factory.mktemp("litert") / "export"
    LiteRTExporter.from_run(run_dir, beam_width=3, length_penalty=0.6, n_best=2).export(directory)
    return directory


@pytest.fixture(scope="module")
def float32_translator(run_dir):
    from keras_attention.export.export_precision import with_precision
    from keras_attention.inference.trained_run import load_translator

    return with_precision(load_translator(run_dir), "float32")


def test_models_use_builtin_ops_only(litert_export):
    manifest = json.loads((litert_export / MANIFEST_FILE).read_text(encoding="utf-8"))
    assert set(manifest["models"]) == set(MODES)
    for mode in MODES:
        data = (litert_export / MODEL_FILES[mode]).read_bytes()
        ops = model_ops(data)
        assert ops == manifest["models"][mode]["ops"]
        assert ops["custom"] == [] and ops["flex"] == []
        # The decoding loop (and the encoder's) is inside the model.
        assert "WHILE" in ops["builtin"]
    assert "TOPK_V2" in manifest["models"]["beam"]["ops"]["builtin"]


@pytest.mark.parametrize("batch_size", [1, 4])
@pytest.mark.parametrize(
    "mode, options",
    [("greedy", {}), ("beam", {"beam_width": 3, "length_penalty": 0.6, "n_best": 2})],
)
def test_translations_match_the_translator(
    litert_export, float32_translator, mode, options, batch_size
):
    want = float32_translator.translate_all(INPUTS, batch_size=batch_size, **options)
    got = LiteRTTranslator(litert_export).translate(
        INPUTS, mode, n_best=options.get("n_best"), batch_size=batch_size
    )
    assert len(got) == len(want)
    pairs = list(zip(got, want, strict=True))
    if mode == "beam":
        pairs = [pair for ranked in pairs for pair in zip(*ranked, strict=True)]
    for result, expected in pairs:
        assert result.tokens == expected.tokens
        assert result.text == expected.text
        assert result.source_tokens == expected.source_tokens
        assert result.length == expected.length
        assert result.score == pytest.approx(expected.score, abs=1e-4)
        np.testing.assert_allclose(result.attention, expected.attention, atol=1e-5)


def test_check_export_compares_with_the_saved_model(litert_export, exported, capsys):
    report = LiteRTChecker(saved_model=exported.path).check(litert_export)
    assert report.ok, report.format()
    for mode in MODES:
        comparison = report.comparisons[mode]
        assert comparison["identical"] == comparison["sentences"] > 1
    assert main(["check-export", str(litert_export), "--saved-model", str(exported.path)]) == 0
    out = capsys.readouterr().out
    assert "Session path" in out and "Result: OK" in out


def test_check_export_fails_on_a_flex_op(litert_export, tmp_path):
    import tensorflow as tf

    function = tf.function(
        lambda x: tf.strings.length(tf.strings.as_string(x)),
        input_signature=[tf.TensorSpec([None], tf.int32)],
    )
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [function.get_concrete_function()], function
    )
    converter.target_spec.supported_ops = [
        tf.lite.OpsSet.TFLITE_BUILTINS,
        tf.lite.OpsSet.SELECT_TF_OPS,
    ]
    copy = Path(shutil.copytree(litert_export, tmp_path / "copy"))
    (copy / MODEL_FILES["greedy"]).write_bytes(converter.convert())
    report = LiteRTChecker(compare=False).check(copy)
    assert not report.ok
    assert any("Flex" in error for error in report.errors)
    assert main(["check-export", str(copy)]) == 1


@pytest.mark.slow
def test_command_exports_int8_and_checks_it(run_dir, tmp_path, capsys):
    out = tmp_path / "int8"
    code = main(
        [
            "export",
            str(run_dir),
            "--export-dir",
            str(out),
            "--format",
            "litert",
            "--weights",
            "int8",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "check-export: OK" in printed
    manifest = json.loads((out / MANIFEST_FILE).read_text(encoding="utf-8"))
    assert manifest["weights"] == "int8"
    # Compared with the run's model holding the int8 values: the same tokens.
    counts = re.findall(r"(\d+)/(\d+) token-identical", printed)
    assert len(counts) == 2 and all(a == b != "0" for a, b in counts), printed
    for model in manifest["models"].values():  # int8 matrices, dequantized once
        assert "DEQUANTIZE" in model["ops"]["builtin"]
    translations = LiteRTTranslator(out).translate(SENTENCES[:3], "greedy")
    assert all(isinstance(result.text, str) for result in translations)


@pytest.mark.slow
def test_shortlisted_models_match_the_shortlisted_translator(run_dir, tmp_path, capsys):
    from keras_attention.export.export_precision import with_precision
    from keras_attention.inference.trained_run import load_translator
    from keras_attention.shortlist.vocabulary_shortlist import VocabularyShortlist

    out = tmp_path / "shortlist"
    flags = ["--shortlist", "5", "--shortlist-frequent", "10", "--beam-width", "3"]
    code = main(["export", str(run_dir), "--export-dir", str(out), "--format", "litert", *flags])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "check-export: OK" in printed  # against the Translator over the same shortlist
    manifest = json.loads((out / MANIFEST_FILE).read_text(encoding="utf-8"))
    assert manifest["shortlist"]["k"] == 5 and manifest["shortlist"]["frequent"] == 10
    for model in manifest["models"].values():
        assert {"SCATTER_ND", "WHILE"} <= set(model["ops"]["builtin"])
        assert model["ops"]["custom"] == []

    shortlist = VocabularyShortlist.from_run(run_dir, 5, 10)
    reference = with_precision(load_translator(run_dir), "float32").with_shortlist(shortlist)
    litert = LiteRTTranslator(out)
    for mode, options in [("greedy", {}), ("beam", {"beam_width": 3, "length_penalty": 0.6})]:
        want = reference.translate_all(INPUTS, batch_size=4, **options)
        got = litert.translate(INPUTS, mode, n_best=1 if mode == "beam" else None, batch_size=4)
        if mode == "beam":
            want = [ranked[0] if isinstance(ranked, list) else ranked for ranked in want]
            got = [ranked[0] if isinstance(ranked, list) else ranked for ranked in got]
        for result, expected in zip(got, want, strict=True):
            assert result.tokens == expected.tokens
            assert result.score == pytest.approx(expected.score, abs=1e-4)


@pytest.mark.parametrize(
    "changes",
    [{"shortlist": 0}, {"shortlist": 2.0}, {"shortlist_frequent": -1}, {"weights": "bfloat16"}],
)
def test_settings_refuse_bad_values(changes):
    with pytest.raises(ValueError, match=next(iter(changes))):
        LiteRTSettings(**changes)


@pytest.mark.parametrize("flags", [["--weights", "bfloat16"]], ids=["bfloat16"])
def test_command_refuses_what_litert_does_not_take(run_dir, tmp_path, flags, capsys):
    code = main(
        ["export", str(run_dir), "--export-dir", str(tmp_path / "x"), "--format", "litert", *flags]
    )
    assert code == 2
    assert "--format litert" in capsys.readouterr().err


def test_savedmodel_refuses_float16(run_dir, tmp_path, capsys):
    code = main(["export", str(run_dir), "--export-dir", str(tmp_path), "--weights", "float16"])
    assert code == 2
    assert "--format litert" in capsys.readouterr().err


def test_translator_runs_without_tensorflow(litert_export, float32_translator):
    """`LiteRTTranslator` in a process where `import tensorflow` (and tf-text) fails."""
    import os
    import subprocess
    import sys

    script = (
        "import sys\n"
        "for name in ('tensorflow', 'tensorflow_text', 'keras'):\n"
        "    sys.modules[name] = None\n"
        "from keras_attention_client import LiteRTTranslator\n"
        f"results = LiteRTTranslator({str(litert_export)!r}).translate({SENTENCES!r}, 'beam')\n"
        "print('\\n'.join(r.text for r in results))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    want = float32_translator.translate_all(SENTENCES, beam_width=3, length_penalty=0.6)
    assert done.stdout.splitlines() == [r.text for r in want]
