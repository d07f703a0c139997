"""Runs with `--tokenizer subwords` and `--reverse`; the errors a run's vectorizers can raise."""

import dataclasses
import json
import shutil

import numpy as np
import pytest

from keras_attention.inference.trained_run import load_translator
from keras_attention.runs.run_directory import RunDirectory
from keras_attention.runs.run_vectorizers import load_vectorizers
from keras_attention.runs.train_config import TrainConfig
from keras_attention.text import SpacingRules, SubwordVectorizer, TextVectorizer
from keras_attention.training.trainer import train


def _quick(make_train_config, data, out, **overrides):
    options = dict(epochs=1, steps_per_epoch=5, source_vocabulary_size=300)
    options.update(target_vocabulary_size=300, **overrides)
    return make_train_config(data, out, **options)


@pytest.fixture(scope="module")
def subword_run(digits_corpus, make_train_config, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "subwords"
    train(_quick(make_train_config, digits_corpus, out, tokenizer="subwords"), verbose=0)
    return out


def test_subword_run_stores_its_models_and_translates_without_unk(subword_run):
    run = RunDirectory(subword_run)
    run.require_trained()
    assert TrainConfig.load(run.path).tokenizer == "subwords"
    assert run.source_subword_model.is_file() and run.target_subword_model.is_file()
    assert not run.source_vocabulary.exists()
    translator = load_translator(run.path)
    assert isinstance(translator.source_vectorizer, SubwordVectorizer)
    assert isinstance(translator.target_vectorizer, SubwordVectorizer)
    assert translator.model.target_vocabulary_size == translator.target_vectorizer.vocabulary_size
    results = translator.translate_all(["3 1 4", "1 5 9 2 6", "Ω 😀"], beam_width=2)
    for result in results:
        assert "[UNK]" not in result.text
        assert "[UNK]" not in result.tokens
    assert results[0].source_tokens[0].startswith("▁")


def test_subword_files_missing_is_a_clear_error(subword_run, tmp_path):
    copy = shutil.copytree(subword_run, tmp_path / "run")
    RunDirectory(copy).target_subword_model.unlink()
    with pytest.raises(FileNotFoundError, match="target_subwords.model"):
        load_translator(copy)


def test_model_and_tokenizer_of_different_runs_is_a_clear_error(
    subword_run, trained_digits_run, tmp_path
):
    """A words run's model in a subword run: the vocabulary sizes disagree."""
    copy = shutil.copytree(subword_run, tmp_path / "run")
    shutil.copy(RunDirectory(trained_digits_run).model, RunDirectory(copy).model)
    with pytest.raises(ValueError, match="different runs"):
        load_translator(copy)


def test_word_runs_from_before_the_tokenizer_field_still_load(trained_digits_run, tmp_path):
    """Such runs have no tokenizer, reverse or target_spacing.json, and french_spacing true."""
    copy = shutil.copytree(trained_digits_run, tmp_path / "run")
    config = json.loads((copy / "config.json").read_text())
    del config["tokenizer"], config["reverse"]
    config["french_spacing"] = True
    (copy / "config.json").write_text(json.dumps(config))
    RunDirectory(copy).target_spacing.unlink()
    RunDirectory(copy).require_trained()
    target = load_translator(copy).target_vectorizer
    assert isinstance(target, TextVectorizer) and target.spacing == SpacingRules.french()


def test_french_spacing_overrides_the_measurement_for_words_only(trained_digits_run):
    run = RunDirectory(trained_digits_run)
    measured = SpacingRules.from_config(json.loads(run.target_spacing.read_text()))
    assert measured == SpacingRules.plain()  # spelled digits: no punctuation at all
    config = TrainConfig.load(run.path)
    assert config.french_spacing is None
    config = dataclasses.replace(config, french_spacing=True)
    assert load_vectorizers(run, config)[1].spacing == SpacingRules.french()
    with pytest.raises(ValueError, match="french_spacing.*subwords"):
        TrainConfig(tokenizer="subwords", french_spacing=False)


def test_reverse_swaps_the_corpus_columns(digits_corpus, make_train_config, tmp_path):
    out = tmp_path / "reverse"
    train(_quick(make_train_config, digits_corpus, out, reverse=True, epochs=1), verbose=0)
    run = RunDirectory(out)
    assert TrainConfig.load(out).reverse is True
    source, target = run.test_split.read_text().splitlines()[0].split("\t")
    assert source.split()[0].isalpha() and target.split()[0].isdigit()
    source_words = run.source_vocabulary.read_text().split()
    assert "trois" in source_words and "3" not in source_words
    translator = load_translator(out)
    assert "3" in translator.target_vectorizer.vocabulary


def test_vocabulary_too_small_names_the_side(digits_corpus, make_train_config, tmp_path):
    config = _quick(make_train_config, digits_corpus, tmp_path / "r", tokenizer="subwords")
    config = dataclasses.replace(config, target_vocabulary_size=270)
    with pytest.raises(ValueError, match=r"Target side \(--target-vocabulary-size\).*too small"):
        train(config, verbose=0)


def test_target_side_empty_after_filtering_is_a_clear_error(make_train_config, tmp_path):
    """Every target only punctuation the length limit cannot hold, or invisible."""
    from helpers.training_runs import write_tsv

    corpus = write_tsv(tmp_path / "c.tsv", [(f"{i} {i}", ". " * 20) for i in range(200)])
    config = _quick(make_train_config, corpus, tmp_path / "r", max_length=8)
    with pytest.raises(ValueError, match="has no pair left to train on"):
        train(config, verbose=0)


@pytest.mark.parametrize("tokenizer", ["words", "subwords"])
def test_token_ids_agree_with_encode(tokenizer, subword_run, trained_digits_run):
    run = subword_run if tokenizer == "subwords" else trained_digits_run
    translator = load_translator(run)
    texts = ["3 1 4", "1 5 9 2 6"]
    import tensorflow as tf

    ragged = translator.source_vectorizer.token_ids(tf.constant(texts)).to_list()
    dense = translator.source_vectorizer.encode(tf.constant(texts)).numpy()
    for row, ids in zip(dense, ragged, strict=True):
        np.testing.assert_array_equal(row[: len(ids)], ids)


@pytest.mark.parametrize("tokenizer", ["words", "subwords"])
@pytest.mark.parametrize("language", ["french", "spanish"])
def test_translations_keep_the_target_languages_punctuation(
    language, tokenizer, make_train_config, tmp_path
):
    """French writes "trois sept ?", Spanish "¿tres siete?": learned from the data, no flag."""
    import re

    from helpers.training_runs import punctuated_digits_pairs, write_tsv

    corpus = write_tsv(tmp_path / "c.tsv", punctuated_digits_pairs(1500, language))
    config = make_train_config(
        corpus,
        tmp_path / "run",
        tokenizer=tokenizer,
        epochs=1,
        steps_per_epoch=120 if tokenizer == "words" else 300,
        source_vocabulary_size=300,
        target_vocabulary_size=400,  # whole words become pieces
    )
    train(config, verbose=0)
    run = RunDirectory(config.out)
    if tokenizer == "words":
        measured = json.loads(run.target_spacing.read_text())
        assert measured["space_before"] == ("!?:;%" if language == "french" else "")
    sources = [line.split("\t")[0] for line in run.test_split.read_text().splitlines()][:40]
    translations = [r.text for r in load_translator(run.path).translate_all(sources)]
    marks = [m for t in translations for m in re.findall(r"(.)[?!]", t)]
    assert len(marks) >= 20, translations[:5]
    spaced = sum(before == " " for before in marks)
    if language == "french":
        assert spaced == len(marks), translations[:5]
    else:
        assert spaced == 0, translations[:5]
