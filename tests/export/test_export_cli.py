"""`keras-attention export` / `check-export` through `keras_attention.export.cli`."""

from __future__ import annotations

import argparse
import shutil

import numpy as np
import pytest
from helpers.subprocesses import modules_loaded_by

from keras_attention.cli import main
from keras_attention.export import ExportManifest, SavedModelSession
from keras_attention.export.cli import (
    add_check_export_arguments,
    add_export_arguments,
    run_check_export,
)


@pytest.mark.slow
def test_export_command_with_flags(run_dir, exported, tmp_path, capsys):
    base = tmp_path / "models"
    shutil.copytree(exported.path, base / "3")
    argv = ["export", str(run_dir), "--export-dir", str(base), "--beam-width", "2"]
    argv += ["--length-penalty", "1.0", "--max-output-length", "4"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"Exported version 4 to {base / '4'}" in out
    assert "check-export: OK" in out
    assert "the same outputs on TensorFlow's C API" in out
    manifest = ExportManifest.load(base / "4")
    assert manifest.decoding["beam_search"]["beam_width"] == 2
    assert manifest.decoding["beam_search"]["length_penalty"] == 1.0
    assert manifest.max_output_length == 4
    assert manifest.decoding["serving_default"]["max_steps"] == 4
    # --weights auto: stored in the dtype the signatures compute in.
    stored = "bfloat16" if manifest.precision == "mixed_bfloat16" else "float32"
    assert manifest.weights["requested"] == "auto"
    assert (manifest.weights["weights"], manifest.weights["value_dtype"]) == (stored, stored)
    assert f"weights: {stored} (auto, read in {stored}, " in out
    with SavedModelSession(base / "4") as session:
        texts = np.array([b"you like the red cat and the big dog ."] * 2, dtype=object)
        for signature in ("serving_default", "beam_search"):
            outputs = session.run(signature, {"text": texts})
            assert outputs["tokens"].shape[1] <= 4 and np.all(outputs["length"] <= 4)


def test_existing_version_is_refused_before_any_work(run_dir, exported, capsys):
    base = exported.path.parent
    before = sorted(p.name for p in base.iterdir())
    argv = ["export", str(run_dir), "--export-dir", str(base), "--model-version", "1"]
    assert main(argv) == 2
    assert "Version 1 already exists" in capsys.readouterr().err
    assert sorted(p.name for p in base.iterdir()) == before


def test_missing_run_directory(tmp_path, capsys):
    argv = ["export", str(tmp_path / "no-run"), "--export-dir", str(tmp_path / "models")]
    assert main(argv) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--beam-width", "1"], "must be an integer >= 2"),
        (["--model-version", "0"], "must be an integer >= 1"),
        (["--length-penalty", "-0.5"], "must be a number >= 0"),
        (["--max-output-length", "0"], "must be an integer >= 1"),
    ],
)
def test_invalid_flags_are_usage_errors(flags, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "run", "--export-dir", "models", *flags])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_export_arguments_defaults():
    parser = argparse.ArgumentParser()
    add_export_arguments(parser)
    args = parser.parse_args(["run", "--export-dir", "models"])
    assert (args.run_dir, args.export_dir, args.model_version) == (["run"], "models", None)
    assert (args.beam_width, args.length_penalty, args.max_output_length) == (4, 0.6, None)
    assert (args.jit_compile, args.score_signature, args.check) == (False, True, True)
    assert (args.precision, args.weights, args.shortlist) == ("auto", "auto", "auto")


def test_check_export_command(exported, capsys):
    parser = argparse.ArgumentParser()
    add_check_export_arguments(parser)
    assert run_check_export(parser.parse_args([str(exported.path)])) == 0
    out = capsys.readouterr().out
    assert "serving_default (tensorflow/serving/predict)" in out
    assert "beam_search" in out and "NormalizeUTF8" in out and "Result: OK" in out


def test_check_export_command_fails_on_broken_exports(tmp_path, capsys):
    assert main(["check-export", str(tmp_path / "missing")]) == 1
    assert "is not a servable export" in capsys.readouterr().err
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "saved_model.pb").write_bytes(b"garbage" * 20)
    assert main(["check-export", str(tmp_path / "1")]) == 1
    assert "not a SavedModel protobuf" in capsys.readouterr().err


def test_check_export_with_allowed_ops_file(exported, tmp_path, capsys):
    ops = tmp_path / "ops.txt"
    ops.write_text("Const\n")
    assert main(["check-export", str(exported.path), "--allowed-ops", str(ops)]) == 1
    assert "'While' is neither core TensorFlow nor tensorflow-text" in capsys.readouterr().err
    assert main(["check-export", str(exported.path), "--allowed-ops", str(tmp_path / "x")]) == 2


def test_cli_module_imports_no_tensorflow():
    # keras_attention.cli builds its parser with these functions: keep --help instant.
    assert "tensorflow" not in modules_loaded_by("import keras_attention.export.cli")
