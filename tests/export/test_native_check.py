"""`check-export --native`: the export on TensorFlow's C API, in a process without Python TF.

Reference: the same export on the Python Session path (`SavedModelSession`);
translations, tokens and lengths must be identical, floats within 1e-5.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from keras_attention.cli import main
from keras_attention.export import ExportChecker
from keras_attention.export.native_check import (
    NativeCheckError,
    compare_outputs,
    native_libraries,
    run_native,
)
from keras_attention.export.native_session import decode_tensor, encode_tensor

SENTENCES = ["Hello.", "I am cold.", "", "We will go to the beach tomorrow.", "\xff bad"]


@pytest.fixture(scope="module")
def native_report(exported):
    return ExportChecker(native=True).check(exported.path)


def test_the_checker_runs_every_warmup_request_on_the_c_api(native_report):
    assert native_report.ok, native_report.format()
    # The 16 warmup requests (defaults filled as GetInputValues does; one constrained
    # search, one steered steered_beam_search) and, for search and sample, one request
    # giving every decoding input.
    assert len(native_report.warmup) == 16
    assert native_report.native["requests"] == 16 + 2
    assert native_report.native["max_float_difference"] <= 1e-5
    assert "TF_LoadSessionFromSavedModel, no Python TensorFlow): 18 requests" in (
        native_report.format()
    )


@pytest.mark.parametrize("signature", ["serving_default", "beam_search"])
def test_translations_equal_the_session_paths(serving_session, exported, signature):
    definition = serving_session.signature_defs[signature]
    texts = np.array([s.encode() if isinstance(s, str) else s for s in SENTENCES], dtype=object)
    aliases = sorted(definition.outputs)
    expected = serving_session.run(signature, {"text": texts})
    (answer,) = run_native(
        exported.path,
        [({definition.inputs["text"].name: texts}, [definition.outputs[a].name for a in aliases])],
    )
    native = dict(zip(aliases, answer, strict=True))
    for alias in ("translation", "tokens", "source_tokens", "length"):
        np.testing.assert_array_equal(native[alias], expected[alias])
        assert native[alias].dtype == expected[alias].dtype
    assert compare_outputs(expected, native)[0] == []


def test_the_native_process_never_imports_python_tensorflow(exported, serving_session):
    library, op_libraries = native_libraries()
    assert library.name == "libtensorflow_cc.so.2"
    assert any(p.name == "_normalize_ops.so" for p in op_libraries)
    definition = serving_session.signature_defs["serving_default"]
    job = {
        "library": str(library),
        "op_libraries": [str(p) for p in op_libraries],
        "export_dir": str(exported.path),
        "requests": [
            {
                "feeds": {
                    definition.inputs["text"].name: encode_tensor(np.array([b"Hi."], object))
                },
                "fetches": [definition.outputs["length"].name],
            }
        ],
    }
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "keras_attention.export.native_session"],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=str(root)),
        check=True,
    )
    answer = json.loads(result.stdout)
    assert answer["python_tensorflow_imported"] is False
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    assert not {name for name in imported if name.split(".")[0] in ("tensorflow", "keras")}
    (length,) = answer["outputs"][0]
    assert decode_tensor(length).shape == (1,)


def test_load_and_run_failures_carry_tensorflows_message(exported, tmp_path):
    with pytest.raises(NativeCheckError, match="TF_LoadSessionFromSavedModel"):
        run_native(tmp_path / "missing", [])
    with pytest.raises(NativeCheckError, match="No operation 'nope'"):
        run_native(exported.path, [({"nope:0": np.array([b"a"], object)}, [])])


def test_compare_outputs_names_each_difference():
    expected = {
        "translation": np.array([b"a"], object),
        "score": np.array([-1.0], np.float32),
        "length": np.array([1], np.int32),
    }
    same = {k: v.copy() for k, v in expected.items()}
    assert compare_outputs(expected, same) == ([], 0.0)
    changed = {
        "translation": np.array([b"b"], object),
        "score": np.array([-1.1], np.float32),
        "length": np.array([1, 2], np.int32),
    }
    problems, largest = compare_outputs(expected, changed)
    assert [p.split()[0] for p in problems] == ["'length'", "'score'", "'translation'"]
    assert largest == pytest.approx(0.1, rel=1e-5)


def test_equal_infinite_scores_are_the_same_and_left_out_of_the_largest_difference():
    expected = {"scores": np.array([[-1.0, -np.inf]], np.float32)}
    with np.errstate(invalid="raise"):  # -inf - -inf would be nan
        assert compare_outputs(expected, {"scores": np.array([[-1.5, -np.inf]], np.float32)}) == (
            ["'scores' differs from the Session path's"],
            0.5,
        )
        assert compare_outputs(expected, {"scores": expected["scores"].copy()}) == ([], 0.0)


def test_check_export_native_command(exported, capsys):
    assert main(["check-export", str(exported.path), "--native"]) == 0
    assert "TF_LoadSessionFromSavedModel" in capsys.readouterr().out
    assert main(["check-export", str(exported.path), "--native", "--no-warmup"]) == 2
    assert "--native needs the warmup requests" in capsys.readouterr().err
