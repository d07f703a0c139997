"""`RunAdaptation` and `keras-attention adapt`: a trained run continued on a new corpus.

The original run translates spelled digits ("3 7" -> "trois sept"); the new corpus adds
arithmetic words ("3 plus 7" -> "trois plus sept"), so both vocabularies gain words.
Rows are compared by token string, through both runs' vocabulary files, against the
original's saved model.
"""

import dataclasses
import json
import os
import random
import shutil
import signal

import keras
import numpy as np
import pytest
from helpers.training_runs import FRENCH_DIGITS, write_tsv

from keras_attention.cli import main
from keras_attention.runs.run_adaptation import LEARNING_RATE_SHARE, MIX_ORIGINAL, RunAdaptation
from keras_attention.runs.run_directory import RunDirectory
from keras_attention.runs.train_config import TrainConfig
from keras_attention.text import load_vocabulary
from keras_attention.training.interrupt_on_signal import TrainingInterrupted
from keras_attention.training.trainer import train

OPERATORS = {"plus": "plus", "minus": "moins", "times": "fois"}
NEW_SOURCE_WORDS, NEW_TARGET_WORDS = set(OPERATORS), set(OPERATORS.values())
ADAPT = {"epochs": 2, "steps_per_epoch": 3, "time_budget_minutes": None}
MIX = 0.3


def arithmetic_pairs(count, seed=1):
    """`3 plus 7` -> `trois plus sept`; "modulo" appears once (below the new-word count)."""
    rng = random.Random(seed)
    pairs = [("1 modulo 2", "un modulo deux")]
    for _ in range(count - 1):
        a, b = rng.randrange(10), rng.randrange(10)
        operator = rng.choice(sorted(OPERATORS))
        pairs.append((f"{a} {operator} {b}", f"{FRENCH_DIGITS[a]} {OPERATORS[operator]} {FRENCH_DIGITS[b]}"))  # fmt: skip
    return pairs


@pytest.fixture(scope="module")
def original(digits_corpus, make_train_config, tmp_path_factory):
    """A tiny word run with an untied output layer (its kernel and bias grow too)."""
    out = tmp_path_factory.mktemp("original") / "run"
    config = make_train_config(
        digits_corpus, out, embedding_dim=8, encoder_units=8, decoder_units=16,
        batch_size=16, epochs=1, steps_per_epoch=5, max_pairs=600, dropout=0.2,
        tie_embeddings=False,
    )  # fmt: skip
    train(config, verbose=0)
    return out


@pytest.fixture(scope="module")
def new_corpus(tmp_path_factory):
    return write_tsv(tmp_path_factory.mktemp("new") / "arithmetic.tsv", arithmetic_pairs(400))


class Probe(keras.callbacks.Callback):
    """The weights the adapted run starts from (before its first step), by weight path."""

    def on_train_begin(self, logs=None):
        self.initial = {w.path.split("/", 1)[1]: np.array(w.numpy()) for w in self.model.weights}


@pytest.fixture(scope="module")
def adapted(original, new_corpus, tmp_path_factory):
    """The original run adapted to the new corpus, uninterrupted: its config and first weights."""
    out = tmp_path_factory.mktemp("adapted") / "run"
    config = RunAdaptation(original).adapted_config([str(new_corpus)], out, MIX, **ADAPT)
    probe = Probe()
    summary = train(config, verbose=0, callbacks=[probe])
    assert summary["epochs_run"] == 2
    return config, probe.initial


def saved_weights(run) -> list:
    """The weights of the run's model.keras, in the model's order (a loaded model's paths
    can differ from a built one's: its attention layer is deserialized on its own)."""
    model = keras.saving.load_model(RunDirectory(run).model, compile=False)
    return [np.array(w.numpy()) for w in model.weights]


def vocabularies(run):
    files = RunDirectory(run).tokenizer_files("words")
    return load_vocabulary(files[0]), load_vocabulary(files[1])


def test_the_vocabularies_keep_every_old_id_and_gain_the_frequent_new_words(original, adapted):
    config, _ = adapted
    for old, new, added in zip(
        vocabularies(original),
        vocabularies(config.out),
        (NEW_SOURCE_WORDS, NEW_TARGET_WORDS),
        strict=True,
    ):
        assert new[: len(old)] == old
        assert set(new[len(old) :]) == added  # "modulo", seen once, is not added
    spacing = RunDirectory(config.out).target_spacing
    assert spacing.read_text() == RunDirectory(original).target_spacing.read_text()


def test_every_shared_row_is_copied_exactly_and_new_rows_are_the_mean(original, adapted):
    config, initial = adapted
    assert len(initial) == len(saved_weights(original))
    trained = dict(zip(initial, saved_weights(original), strict=True))  # by the probe's paths
    (old_source, old_target), (new_source, new_target) = (
        vocabularies(original),
        vocabularies(config.out),
    )
    # The vocabulary-sized weights (side, axis), by hand; the output layer is untied.
    axes = {
        "encoder/embedding/embeddings": ((old_source, new_source), 0),
        "decoder/embedding/embeddings": ((old_target, new_target), 0),
        "decoder/logits/kernel": ((old_target, new_target), 1),
        "decoder/logits/bias": ((old_target, new_target), 0),
    }
    assert set(axes) <= set(trained)
    for path, value in trained.items():
        if path not in axes:
            assert np.array_equal(initial[path], value), path
            continue
        (old, new), axis = axes[path]
        assert initial[path].shape[axis] == len(new)
        for old_id, token in enumerate(old):
            row = np.take(initial[path], new.index(token), axis=axis)
            assert np.array_equal(row, np.take(value, old_id, axis=axis)), (path, token)
        words_mean = np.take(value, range(4, len(old)), axis=axis).mean(axis=axis)
        for token in new[len(old) :]:
            row = np.take(initial[path], new.index(token), axis=axis)
            np.testing.assert_allclose(row, words_mean, rtol=1e-6, atol=1e-7)


def test_the_config_records_the_original_run_the_data_and_the_mix(original, new_corpus, adapted):
    config, _ = adapted
    saved = TrainConfig.load(config.out)
    original_config = TrainConfig.load(original)
    assert (saved.adapt_from, saved.data, saved.mix_original) == (
        str(original.resolve()),
        [str(new_corpus)],
        MIX,
    )
    assert saved.learning_rate == original_config.learning_rate * LEARNING_RATE_SHARE
    corpora = json.loads(RunDirectory(config.out).data_summary.read_text())["corpora"]
    names = [corpus["name"] for corpus in corpora]
    assert names == [str(new_corpus), f"original: {original_config.data[0]}"]
    weights = [corpus["weight"] for corpus in corpora]
    assert weights[1] / sum(weights) == pytest.approx(MIX)
    # The validation and test splits are the new corpus's.
    new_pairs = {f"{source}\t{target}" for source, target in arithmetic_pairs(400)}
    for split in ("validation", "test"):
        pairs = getattr(RunDirectory(config.out), f"{split}_split").read_text().splitlines()
        assert pairs and set(pairs) <= new_pairs


@pytest.mark.slow
def test_a_killed_adaptation_resumes_exactly(original, new_corpus, adapted, tmp_path, capsys):
    """Stopped after epoch 1, resumed by the same command: the uninterrupted run's model
    and history, bit for bit."""
    reference, _ = adapted
    out = tmp_path / "run"
    config = dataclasses.replace(reference, out=str(out))

    class StopAfterFirstEpoch(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(TrainingInterrupted) as interrupted:
        train(config, verbose=0, callbacks=[StopAfterFirstEpoch()])
    assert interrupted.value.epochs_done == 1
    argv = ["adapt", str(original), "--data", str(new_corpus), "--out", str(out)]
    argv += ["--mix-original", str(MIX), "--epochs", "2", "--steps-per-epoch", "3"]
    assert main([*argv, "--time-budget-minutes", "none"]) == 0
    printed = capsys.readouterr().out
    assert "source 14 + 3 new words, target 14 + 3 new words" in printed
    resumed, uninterrupted = saved_weights(out), saved_weights(reference.out)
    assert all(np.array_equal(a, b) for a, b in zip(resumed, uninterrupted, strict=True))
    history = RunDirectory(reference.out).history.read_text()
    assert RunDirectory(out).history.read_text() == history


def test_evaluate_and_translate_take_the_adapted_run(adapted, capsys):
    config, _ = adapted
    assert main(["translate", config.out, "3 plus 4"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1
    assert main(["evaluate", config.out, "--beam", "1", "--max-sentences", "4"]) == 0
    evaluation = json.loads(RunDirectory(config.out).metrics.read_text())["evaluation"]
    assert evaluation["sentences"] == 4


@pytest.mark.parametrize(
    "flags, expected",
    [
        ([], {"label_smoothing": 0.0, "ema": False, "keep_epoch_weights": 0}),
        (
            ["--label-smoothing", "0.1", "--ema", "--ema-momentum", "0.99", "--keep-epoch-weights", "3"],
            {"label_smoothing": 0.1, "ema": True, "ema_momentum": 0.99, "keep_epoch_weights": 3},
        ),
    ],
)  # fmt: skip
def test_adapt_flags_change_the_recipe_options_the_original_run_had(
    original, new_corpus, tmp_path, flags, expected
):
    from keras_attention.cli.parser import build_parser
    from keras_attention.cli.run_commands import adapted_config_from_args

    argv = ["adapt", str(original), "--data", str(new_corpus), "--out", str(tmp_path / "a")]
    args = build_parser().parse_args(argv + flags)
    config = adapted_config_from_args(RunAdaptation(original), args)
    assert {name: getattr(config, name) for name in expected} == expected
    assert config.learning_rate == TrainConfig.load(original).learning_rate * LEARNING_RATE_SHARE


def test_evaluate_scores_the_adapted_run_on_the_original_runs_test_split(original, adapted, capsys):
    from helpers.bleu_reference import sacrebleu_of

    from keras_attention.data import group_references, load_corpus
    from keras_attention.inference.trained_run import load_translator

    config, _ = adapted
    run = RunDirectory(config.out)
    own = json.loads(run.metrics.read_text()).get("evaluation")
    spec = str(RunDirectory(original).test_split)
    argv = ["evaluate", config.out, "--beam", "1", "--max-sentences", "6", "--test-data", spec]
    assert main(argv) == 0
    assert f"6 test sentences of {spec}" in capsys.readouterr().out
    metrics = json.loads(run.metrics.read_text())
    assert metrics.get("evaluation") == own  # the run's own split's evaluation is kept
    evaluation = metrics["test_data_evaluations"][spec]
    assert evaluation["test_data"] == spec and evaluation["sentences"] == 6

    grouped = group_references(load_corpus(RunDirectory(original).test_split).pairs)[:6]
    sources = [source for source, _ in grouped]
    hypotheses = [r.text for r in load_translator(config.out).translate_all(sources, beam_width=1)]
    expected = sacrebleu_of(hypotheses, grouped)
    assert evaluation["greedy"]["bleu"] == pytest.approx(expected, abs=1e-6)


def test_evaluate_refuses_an_empty_test_corpus(adapted, tmp_path, capsys):
    config, _ = adapted
    empty = tmp_path / "empty.tsv"
    empty.write_text("", encoding="utf-8")
    assert main(["evaluate", config.out, "--test-data", str(empty)]) == 2
    assert "is empty" in capsys.readouterr().err


def test_an_exports_shortlist_counts_the_original_runs_pairs_too(original, adapted):
    from keras_attention.runs.run_data import sample_splits
    from keras_attention.shortlist.run_pairs import run_pairs

    config, _ = adapted
    originals = sum(1 for _ in run_pairs(original).pairs)
    new_pairs = len(sample_splits(config).train)  # all short: none is filtered out
    assert sum(1 for _ in run_pairs(config.out).pairs) == new_pairs + originals


def test_the_command_refuses_what_it_cannot_adapt(original, new_corpus, adapted, tmp_path, capsys):
    config, _ = adapted
    untrained = tmp_path / "untrained"
    untrained.mkdir()
    shutil.copy(RunDirectory(original).config, untrained)
    empty = write_tsv(tmp_path / "empty.tsv", [])
    data = ["--data", str(new_corpus)]
    cases = [
        ([str(tmp_path / "nowhere"), *data, "--out", "x"], "does not exist"),
        ([str(untrained), *data, "--out", "x"], "is not a trained run directory"),
        ([str(original), "--data", str(tmp_path / "no.tsv"), "--out", "x"], "does not exist"),
        ([str(original), "--data", str(empty), "--out", str(tmp_path / "e")], "empty"),
        ([str(original), *data, "--out", str(original)], "must be a new run directory"),
        ([str(original), *data, "--out", config.out], "holds another run"),
        ([str(original), *data, "--out", "x", "--mix-original", "1.5"], "mix_original"),
        ([str(original), *data, "--out", "x", "--mix-original", "-0.1"], "mix_original"),
    ]
    for argv, message in cases:
        assert main(["adapt", *argv]) == 2, argv
        error = capsys.readouterr().err
        assert message in error, (argv, error)
    assert not (tmp_path / "e").exists() and not os.path.exists("x")


def test_train_with_adapt_from_takes_the_original_tokenizer_and_sizes(original, new_corpus):
    """`train --adapt-from RUN` (auto tokenizer and sizes) resolves as `adapt` does."""
    adaptation = RunAdaptation(original)
    asked = dataclasses.replace(
        TrainConfig.load(original), data=[str(new_corpus)], out="elsewhere", adapt_from=str(original),
        tokenizer="auto", source_vocabulary_size="auto", target_vocabulary_size=None,
    )  # fmt: skip
    resolved = adaptation.resolved(asked)
    assert (resolved.tokenizer, resolved.source_vocabulary_size) == ("words", 14 + 2000)
    assert resolved.target_vocabulary_size == 14 + 2000
    for change, message in [
        ({"embedding_dim": 16}, "embedding_dim: 8 -> 16"),
        ({"tokenizer": "subwords"}, "--tokenizer words"),
        ({"source_vocabulary_size": 10}, "extends them"),
        ({"mix_original": 0.5, "seed": 3}, "keep its seed"),
    ]:
        with pytest.raises(ValueError, match=message):
            adaptation.resolved(dataclasses.replace(asked, **change))


def test_by_default_the_original_corpora_are_mixed_in(original, new_corpus, tmp_path):
    """`adapt` without `--mix-original` and `adapted_config` without `mix_original` draw
    `MIX_ORIGINAL` of the pairs from the original's corpora; 0 draws none."""
    from keras_attention.cli.parser import build_parser
    from keras_attention.cli.run_commands import adapted_config_from_args

    adaptation = RunAdaptation(original)
    argv = ["adapt", str(original), "--data", str(new_corpus), "--out", str(tmp_path / "a")]
    from_command = adapted_config_from_args(adaptation, build_parser().parse_args(argv))
    from_python = adaptation.adapted_config([str(new_corpus)], tmp_path / "a")
    assert 0 < MIX_ORIGINAL < 1
    assert from_command.mix_original == from_python.mix_original == MIX_ORIGINAL
    (mixed,) = adaptation.corpora(from_python)
    assert mixed.name.startswith("original: ")
    unmixed = adaptation.adapted_config([str(new_corpus)], tmp_path / "a", mix_original=0)
    assert adaptation.corpora(unmixed) == []


def test_an_original_whose_splits_were_files_is_adapted_with_mix_original_0(
    original, new_corpus, tmp_path
):
    """Its test sentences could be in its corpora: the default mix is refused, naming the
    way out, and `mix_original=0` adapts it."""
    copy = tmp_path / "original"
    shutil.copytree(original, copy)
    config = dataclasses.replace(TrainConfig.load(copy), test_data=str(new_corpus))
    config.save(copy)
    adaptation = RunAdaptation(copy)
    with pytest.raises(
        ValueError, match=r"keep its test_data \(given as files\).*--mix-original 0"
    ):
        adaptation.adapted_config([str(new_corpus)], tmp_path / "a")
    assert (
        adaptation.adapted_config([str(new_corpus)], tmp_path / "a", mix_original=0).mix_original
        == 0
    )


@pytest.mark.parametrize("mix", [1.0, -0.5, True])
def test_the_mix_is_a_share_below_one_of_an_adapted_run(mix):
    with pytest.raises(ValueError, match="mix_original"):
        TrainConfig(adapt_from="runs/original", mix_original=mix)
    with pytest.raises(ValueError, match="0 without `adapt_from`"):
        TrainConfig(mix_original=0.3)


def test_a_subword_run_keeps_its_sentencepiece_models(
    digits_corpus, new_corpus, make_train_config, tmp_path
):
    from keras_attention.text import (
        minimum_vocabulary_size,
        save_subword_model,
        train_subword_model,
    )

    texts = [source for source, _ in arithmetic_pairs(200)] + [t for _, t in arithmetic_pairs(200)]
    size = minimum_vocabulary_size(texts) + 8
    run = RunDirectory(tmp_path / "subwords")
    config = make_train_config(
        digits_corpus, run.path, tokenizer="subwords", source_vocabulary_size=size,
        target_vocabulary_size=size,
    )  # fmt: skip
    run.path.mkdir()
    config.save(run.path)
    run.model.write_bytes(b"")  # not read here
    model = train_subword_model(texts, size)
    for path in run.tokenizer_files("subwords"):
        save_subword_model(model, path)

    adaptation = RunAdaptation(run.path)
    adapted = adaptation.adapted_config([str(new_corpus)], tmp_path / "adapted", new_words=50)
    assert (adapted.tokenizer, adapted.source_vocabulary_size) == ("subwords", size)
    assert adaptation.vocabularies(adapted, sample=None) == (model, model)
    assert "SentencePiece models" in adaptation.describe_vocabularies(adapted)
    with pytest.raises(ValueError, match="keeps the SentencePiece models"):
        adaptation.adapted_config(
            [str(new_corpus)], tmp_path / "a", source_vocabulary_size=size + 1
        )


def test_another_precision_is_not_another_model(original, new_corpus, tmp_path):
    """The precision is the attention layer's dtype too: changing it adapts the same model."""
    adaptation = RunAdaptation(original)
    assert adaptation.config.precision == "float32"
    config = adaptation.adapted_config(
        [str(new_corpus)], tmp_path / "run", precision="mixed_bfloat16", **ADAPT
    )
    adaptation.check(config)  # raises for another model
    assert config.precision == "mixed_bfloat16"
