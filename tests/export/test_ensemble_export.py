"""Ensembles of runs: `load_ensemble` and `keras-attention export RUN1 RUN2`.

References: the run's own `Translator` (an ensemble of a run with itself), and each
member model teacher-forced in Keras on the export's translations, combined in NumPy
(`log_softmax` of the mean of the members' log-probabilities).
"""

from __future__ import annotations

import contextlib
import io
import shutil

import numpy as np
import pytest
import tensorflow as tf
from helpers.export_testing import SENTENCES, train_export_run

from keras_attention.cli import main
from keras_attention.export import ExportManifest, SavedModelSession
from keras_attention.inference.trained_run import load_ensemble, load_translator
from keras_attention.models import Ensemble
from keras_attention.runs.run_directory import RunDirectory


def log_softmax(x):
    x = np.asarray(x, np.float64)
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


@pytest.fixture(scope="module")
def second_run_dir(tmp_path_factory):
    """Another model on the same corpus and split, so with the same vocabularies: Luong
    attention, other sizes, fewer steps."""
    root = tmp_path_factory.mktemp("second_run")
    return train_export_run(
        root, attention="luong", score="general", decoder_units=24, steps_per_epoch=40
    )


@pytest.fixture(scope="module")
def ensemble_export(run_dir, second_run_dir, tmp_path_factory):
    """`keras-attention export RUN SECOND_RUN` (checked on the C API): its exit status,
    output and version directory."""
    base = tmp_path_factory.mktemp("ensemble_base")
    argv = ["export", str(run_dir), str(second_run_dir), "--export-dir", str(base)]
    argv += ["--precision", "float32", "--no-replace-unknown", "--beam-width", "3"]
    argv += ["--length-penalty", "0"]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue() + err.getvalue(), base / "1"


STEERINGS = [
    (dict(beam_width=1), {}),
    (dict(beam_width=1), {"prefixes": ["je"] * len(SENTENCES)}),
    (dict(beam_width=3, length_penalty=0.6), {}),
    (dict(beam_width=3, length_penalty=0.6), {"constraints": [["chat"]] * len(SENTENCES)}),
]


@pytest.fixture(scope="module")
def self_ensemble(run_dir):
    """The `Translator` of an ensemble of the run with itself."""
    ensemble = load_ensemble([run_dir, run_dir])
    assert isinstance(ensemble.model, Ensemble) and len(ensemble.model.members) == 2
    return ensemble


@pytest.mark.parametrize(("decoding", "steering"), STEERINGS)
def test_an_ensemble_of_a_run_with_itself_translates_as_the_run(
    translator, self_ensemble, decoding, steering
):
    ensemble = self_ensemble
    texts = tf.constant(SENTENCES)
    steering = {key: tf.constant(value) for key, value in steering.items()}
    expected = translator.translate(texts, translator.strategy(**decoding), **steering)
    actual = ensemble.translate(texts, ensemble.strategy(**decoding), **steering)
    for key in ("translation", "tokens", "length"):
        np.testing.assert_array_equal(actual[key].numpy(), expected[key].numpy())
    for key in ("score", "token_scores", "attention"):
        np.testing.assert_allclose(actual[key].numpy(), expected[key].numpy(), atol=1e-5)


@pytest.mark.slow
def test_the_export_command_writes_one_checked_savedmodel(ensemble_export, run_dir, second_run_dir):
    code, output, path = ensemble_export
    assert code == 0, output
    assert "Ensemble of 2 models" in output
    assert "check-export: OK" in output
    assert "the same outputs on TensorFlow's C API" in output
    manifest = ExportManifest.load(path)
    assert manifest.ensemble == [str(run_dir.resolve()), str(second_run_dir.resolve())]
    assert manifest.run_dir == str(run_dir.resolve()) and manifest.shortlist is None
    assert len(manifest.model_config["members"]) == 2


@pytest.fixture(scope="module")
def members(run_dir, second_run_dir):
    """The two runs' `Translator`s, loaded once."""
    return [load_translator(run) for run in (run_dir, second_run_dir)]


@pytest.mark.slow
@pytest.mark.parametrize("signature", ["serving_default", "beam_search"])
def test_scores_are_the_mean_of_the_members_teacher_forced_log_probabilities(
    ensemble_export, members, signature
):
    """Greedy and beam search (length penalty 0): each translation's score is the
    ensemble's log-probability of its tokens, from the two models teacher-forced in
    Keras; greedy search emits the most probable token of the mean at every step."""
    code, output, path = ensemble_export
    assert code == 0, output
    first = members[0]
    target = first.target_vectorizer
    ids = {token: i for i, token in enumerate(target.get_vocabulary())}
    limit = ExportManifest.load(path).max_output_length
    with SavedModelSession(path) as session:
        outputs = session.run(signature, {"text": np.array([s.encode() for s in SENTENCES])})
    source_ids, _ = first.encode_source(tf.constant(SENTENCES))
    for row in range(len(SENTENCES)):
        length = int(outputs["length"][row])
        emitted = [ids[token.decode()] for token in outputs["tokens"][row, :length]]
        emitted += [target.end_id] if length < limit else []
        target_in = tf.constant([[target.start_id, *emitted[:-1]]], tf.int32)
        member_log_probs = [
            log_softmax(member.model((source_ids[row : row + 1], target_in)).numpy()[0])
            for member in members
        ]
        log_probs = log_softmax(np.mean(member_log_probs, axis=0))
        expected = sum(log_probs[t, token] for t, token in enumerate(emitted))
        np.testing.assert_allclose(outputs["score"][row], expected, rtol=1e-5, atol=1e-5)
        if signature == "serving_default":
            assert emitted == list(log_probs.argmax(axis=-1))


def test_evaluate_scores_the_ensemble_on_the_first_runs_test_split(
    run_dir, second_run_dir, tmp_path, capsys
):
    """`keras-attention evaluate RUN SECOND`: greedy BLEU of the ensemble's translations of
    RUN's test split, against sacreBLEU on `load_ensemble`'s; recorded in RUN's metrics
    under the runs, its own `evaluation` and SECOND's metrics left as they were."""
    import json

    from helpers.bleu_reference import sacrebleu_of

    from keras_attention.data import group_references, load_corpus

    first = shutil.copytree(run_dir, tmp_path / "first")
    second_metrics = RunDirectory(second_run_dir).metrics.read_text(encoding="utf-8")
    own = json.loads(RunDirectory(first).metrics.read_text()).get("evaluation")
    argv = ["evaluate", str(first), str(second_run_dir), "--beam", "1", "--max-sentences", "5"]
    assert main(argv) == 0
    assert "The ensemble of 2 runs" in capsys.readouterr().out
    metrics = json.loads(RunDirectory(first).metrics.read_text())
    assert metrics.get("evaluation") == own
    evaluation = metrics["ensemble_evaluations"][f"{first} {second_run_dir}"]
    assert evaluation["runs"] == [str(first), str(second_run_dir)]
    assert len(evaluation["model_sha256"]) == 2
    assert RunDirectory(second_run_dir).metrics.read_text(encoding="utf-8") == second_metrics

    grouped = group_references(load_corpus(RunDirectory(first).test_split).pairs)[:5]
    sources = [source for source, _ in grouped]
    translator = load_ensemble([first, second_run_dir])
    hypotheses = [r.text for r in translator.translate_all(sources, beam_width=1)]
    assert evaluation["sentences"] == len(sources)
    expected = sacrebleu_of(hypotheses, grouped)
    assert evaluation["greedy"]["bleu"] == pytest.approx(expected, abs=1e-6)


def test_runs_with_other_vocabularies_are_refused_naming_both(run_dir, tmp_path, capsys):
    other = shutil.copytree(run_dir, tmp_path / "other_run")
    vocabulary = RunDirectory(other).target_vocabulary
    lines = vocabulary.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[5], lines[6] = lines[6], lines[5]  # the same size, other ids
    vocabulary.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(ValueError, match="same vocabularies") as error:
        load_ensemble([run_dir, other])
    assert str(other) in str(error.value) and str(run_dir) in str(error.value)
    assert vocabulary.name in str(error.value)
    argv = ["export", str(run_dir), str(other), "--export-dir", str(tmp_path / "models")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "same vocabularies" in err and str(other) in err
    assert not (tmp_path / "models").exists()


def test_members_of_other_precisions_take_the_one_asked(run_dir, tmp_path):
    """A member saved under mixed_bfloat16 beside a float32 one: refused as they are,
    combined once `precision` puts both under one policy."""
    import keras

    from keras_attention.models.model_policy import model_with_policy

    other = shutil.copytree(run_dir, tmp_path / "bfloat16_run")
    model = keras.saving.load_model(RunDirectory(other).model, compile=False)
    assert model.dtype_policy.name == "float32"
    model_with_policy(model, "mixed_bfloat16").save(RunDirectory(other).model)
    with pytest.raises(ValueError):
        load_ensemble([run_dir, other])
    translator = load_ensemble([run_dir, other], precision="float32")
    assert translator.model.compute_dtype == "float32"
    assert all(member.compute_dtype == "float32" for member in translator.model.members)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--shortlist", "5"], "An ensemble export scores the whole target vocabulary"),
        (["--format", "litert"], "--format litert exports one run"),
    ],
)
def test_ensemble_exports_refuse_a_shortlist_size_and_litert(
    run_dir, tmp_path, capsys, flags, message
):
    argv = ["export", str(run_dir), str(run_dir), "--export-dir", str(tmp_path / "m"), *flags]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
