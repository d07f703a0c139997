"""`--tokenizer auto`: the rule on hand-made statistics, resolution, and runs that record it."""

from __future__ import annotations

import json
import os
import re
import signal
import types

import keras
import pytest
from helpers.training_runs import printed_lines

from keras_attention.runs import tokenizer_choice
from keras_attention.runs.tokenizer_choice import (
    CorpusStatistics,
    TokenizerChoice,
    choose_tokenizer,
    corpus_statistics,
    resolve_run_tokenizer,
    resolve_tokenizer,
)
from keras_attention.runs.train_config import TrainConfig


def statistics(coverage=(1.0, 1.0), distinct=(7_435, 11_535), once=2_775, train_pairs=28_806):
    """Hand-made statistics (the defaults: the 30,000-pair English→French split)."""
    return CorpusStatistics(
        train_pairs=train_pairs,
        source_distinct_words=10_876,
        target_distinct_words=16_606,
        source_characters_per_sentence=30.55,
        target_characters_per_sentence=36.25,
        source_distinct_tokens=distinct[0],
        target_distinct_tokens=distinct[1],
        source_word_coverage=coverage[0],
        target_word_coverage=coverage[1],
        source_words_seen_once=once,
        target_words_seen_once=4_999,
    )


FULL_FRENCH_ENGLISH = {
    "coverage": (0.9864, 1.0),
    "distinct": (25_575, 15_799),
    "once": 9_458,
    "train_pairs": 160_447,
}
"""The full corpus French→English: the least coverage measured (words won there)."""


@pytest.mark.parametrize(
    "given, expected",
    [
        ({"coverage": (1.0, 1.0)}, ("words", 7439, 11539)),
        ({"coverage": (0.98, 0.98)}, ("words", 7439, 11539)),  # the threshold itself
        ({"coverage": (0.9799, 1.0)}, ("subwords", 8000, 8000)),  # the source side short
        ({"coverage": (1.0, 0.9799)}, ("subwords", 8000, 8000)),  # the target side short
        ({"coverage": (0.5, 0.6)}, ("subwords", 8000, 8000)),
        (FULL_FRENCH_ENGLISH, ("words", 12000, 15803)),
    ],
)
def test_the_coverage_rule_at_each_side_of_its_threshold(given, expected):
    choice = choose_tokenizer(statistics(**given))
    assert (choice.tokenizer, choice.source_vocabulary_size, choice.target_vocabulary_size) == (
        expected
    )
    assert choice.requested == ("auto", "auto", "auto")
    source, target = given["coverage"]
    assert f"hold {source:.2%} / {target:.2%} of the training tokens" in choice.reason


# 0.15 x 28,806 training pairs = 4,320.9 source words seen once.
@pytest.mark.parametrize(
    "once, expected",
    [(4_320, "words"), (4_321, "subwords"), (0, "words"), (28_806, "subwords"),
     (5_647, "subwords")],  # the last: the 28,799-pair French→English split's count
)  # fmt: skip
def test_the_rare_source_word_rule_at_each_side_of_its_threshold(once, expected):
    choice = choose_tokenizer(statistics(once=once))
    assert choice.tokenizer == expected
    rate = f"{once / 28_806:.3f} source words seen once per training pair"
    assert f"{rate} {'<' if expected == 'words' else '>='} 0.15" in choice.reason


def test_the_reason_names_the_inputs_and_the_threshold():
    words = choose_tokenizer(statistics(**FULL_FRENCH_ENGLISH))
    assert words.describe() == (
        "words 12000/15803 (auto: the word vocabularies hold 98.64% / 100.00% of the training "
        "tokens >= 98% and 0.059 source words seen once per training pair < 0.15; 25,575 / "
        "15,799 distinct word tokens)"
    )
    subwords = choose_tokenizer(statistics(coverage=(0.9, 0.99), distinct=(60_000, 80_000)))
    assert subwords.describe() == (
        "subwords 8000/8000 (auto: the word vocabularies hold 90.00% / 99.00% of the training "
        "tokens, < 98% on a side; 60,000 / 80,000 distinct word tokens)"
    )
    assert TokenizerChoice("words", 100, 120, requested=("words", 100, 120)).describe() == (
        "words 100/120"
    )


@pytest.mark.parametrize(
    "distinct, expected",
    [
        ((7_435, 11_535), (7439, 11539)),  # every word, + 4 reserved tokens
        ((11_996, 15_996), (12000, 16000)),  # exactly the caps
        ((11_997, 25_562), (12000, 16000)),  # capped at VOCABULARY_SIZES
        ((1, 3), (5, 7)),
    ],
)
def test_word_vocabulary_sizes(distinct, expected):
    choice = choose_tokenizer(statistics(distinct=distinct))
    assert (choice.source_vocabulary_size, choice.target_vocabulary_size) == expected


def test_corpus_statistics_of_a_hand_counted_split():
    pairs = [("The cat.", "Le chat."), ("The dog.", "Le chien.")]
    assert corpus_statistics(pairs) == CorpusStatistics(
        train_pairs=2,
        source_distinct_words=3,  # the, cat., dog.
        target_distinct_words=3,  # le, chat., chien.
        source_characters_per_sentence=8.0,
        target_characters_per_sentence=8.5,
        source_distinct_tokens=4,  # The, cat, ., dog
        target_distinct_tokens=4,  # Le, chat, ., chien
        source_word_coverage=1.0,  # 4 tokens fit in 12,000 entries
        target_word_coverage=1.0,
        source_words_seen_once=2,  # cat, dog (The and . twice)
        target_words_seen_once=2,  # chat, chien
    )


def test_word_coverage_counts_the_tokens_the_capped_vocabularies_hold(monkeypatch):
    # Vocabularies of at most 6 and 7 entries: 4 reserved, so 2 and 3 words.
    monkeypatch.setitem(tokenizer_choice.VOCABULARY_SIZES, "words", (6, 7))
    pairs = [("The cat.", "Le chat."), ("The dog.", "Le chien."), ("The cat.", "Le chat.")]
    result = corpus_statistics(pairs)
    # Source: The 3, . 3, cat 2, dog 1: the 2 most frequent hold 6 of 9 tokens.
    # Target: Le 3, . 3, chat 2, chien 1: the 3 most frequent hold 8 of 9.
    assert (result.source_word_coverage, result.target_word_coverage) == (0.6667, 0.8889)
    assert choose_tokenizer(result).tokenizer == "subwords"


def splits_of(pairs):
    """A `read_sample` that returns `pairs` as the training split, and counts its calls."""

    def read():
        read.calls += 1
        return types.SimpleNamespace(train=pairs)

    read.calls = 0
    return read


SMALL = [("The cat.", "Le chat."), ("The dog.", "Le chien.")] * 3  # 4 distinct tokens a side


@pytest.mark.parametrize(
    "given, expected",
    [
        ({}, ("words", 8, 8)),  # all auto: a small corpus gets words, all its words
        ({"source_vocabulary_size": 50}, ("words", 50, 8)),  # an explicit size wins
        ({"source_vocabulary_size": None}, ("words", 12000, 8)),  # none: the fixed default
        ({"tokenizer": "subwords"}, ("subwords", 8000, 8000)),  # explicit tokenizer, auto sizes
        ({"tokenizer": "subwords", "target_vocabulary_size": 300}, ("subwords", 8000, 300)),
        ({"tokenizer": "words"}, ("words", 8, 8)),
        ({"tokenizer": "words", "source_vocabulary_size": 20, "target_vocabulary_size": 30},
         ("words", 20, 30)),
    ],
)  # fmt: skip
def test_explicit_values_win_and_auto_fills_the_rest(given, expected):
    config = TrainConfig(**given)
    read = splits_of(SMALL)
    choice = resolve_tokenizer(config, read)
    config = choice.resolved(config)
    resolved = (config.tokenizer, config.source_vocabulary_size, config.target_vocabulary_size)
    assert (
        resolved
        == expected
        == (
            choice.tokenizer,
            choice.source_vocabulary_size,
            choice.target_vocabulary_size,
        )
    )
    # The data is read only when the choice needs it (not for subwords or explicit sizes).
    needs_data = given.get("tokenizer") != "subwords" and not (
        "source_vocabulary_size" in given and "target_vocabulary_size" in given
    )
    assert read.calls == int(needs_data)
    if "auto" not in choice.requested:
        assert choice.describe() == f"{expected[0]} {expected[1]}/{expected[2]}"


def test_none_means_the_chosen_tokenizers_fixed_sizes():
    config = TrainConfig(source_vocabulary_size=None, target_vocabulary_size=None)
    assert (config.source_vocabulary_size, config.target_vocabulary_size) == (None, None)
    config = resolve_tokenizer(config, splits_of(SMALL)).resolved(config)
    assert (config.tokenizer, config.source_vocabulary_size) == ("words", 12000)
    assert config.target_vocabulary_size == 16000
    # With an explicit tokenizer, None is resolved at once, as before.
    assert TrainConfig(
        tokenizer="subwords", source_vocabulary_size=None
    ).source_vocabulary_size == (8000)


@pytest.mark.parametrize(
    "given, expected",
    [
        ({"precision": "float32"}, ("words", 8, 6)),  # the target side capped
        ({"precision": "mixed_bfloat16"}, ("words", 8, 8)),
        ({"precision": "float32", "target_vocabulary_size": 8}, ("words", 8, 8)),  # explicit
        ({"precision": "float32", "tokenizer": "subwords"}, ("subwords", 8000, 8000)),
    ],
)
def test_float32_caps_an_auto_target_word_vocabulary(monkeypatch, given, expected):
    # SMALL's target side has 4 distinct words + 4 reserved tokens = 8 entries; a cap of 6.
    monkeypatch.setattr(tokenizer_choice, "FLOAT32_TARGET_WORDS", 6)
    config = TrainConfig(**given)
    choice = resolve_tokenizer(config, splits_of(SMALL))
    config = choice.resolved(config)
    resolved = (config.tokenizer, config.source_vocabulary_size, config.target_vocabulary_size)
    assert resolved == expected
    assert ("target words at most 6 in float32" in choice.reason) == (expected[2] == 6)


def test_auto_is_the_default():
    config = TrainConfig()
    assert (config.tokenizer, config.source_vocabulary_size, config.target_vocabulary_size) == (
        "auto",
        "auto",
        "auto",
    )


@pytest.mark.parametrize(
    "options, message",
    [
        ({"source_vocabulary_size": -3}, "source_vocabulary_size=-3"),
        ({"target_vocabulary_size": 4}, "target_vocabulary_size=4"),
        ({"target_vocabulary_size": "big"}, "target_vocabulary_size='big'"),
        ({"source_vocabulary_size": True}, "source_vocabulary_size=True"),
        ({"tokenizer": "nope"}, r"one of \('auto', 'subwords', 'words'\).*tokenizer='nope'"),
        ({"french_spacing": True}, "french_spacing=True, tokenizer='auto'"),
    ],
)
def test_bad_values_are_clear_errors(options, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**options)


def saved_run(tmp_path, **options):
    """A run directory whose config.json holds a resolved choice: words 20/30."""
    saved = TrainConfig(
        out=str(tmp_path),
        tokenizer="words",
        source_vocabulary_size=20,
        target_vocabulary_size=30,
        **options,
    )
    saved.save(tmp_path)
    return saved


def test_a_run_with_a_saved_choice_keeps_it_without_reading_the_data(tmp_path):
    saved_run(tmp_path)
    config = TrainConfig(out=str(tmp_path))
    read = splits_of(SMALL)
    choice = resolve_run_tokenizer(config, TrainConfig.load(tmp_path), read)
    config = choice.resolved(config)
    assert read.calls == 0
    assert (config.tokenizer, config.source_vocabulary_size, config.target_vocabulary_size) == (
        "words",
        20,
        30,
    )
    assert choice.describe() == (
        f"words 20/30 (auto: the run's saved choice ({tmp_path / 'config.json'}))"
    )


@pytest.mark.parametrize(
    "given",
    [
        {"max_pairs": 100},  # another training split
        {"seed": 1},  # the same size, drawn otherwise
        {"tokenizer": "subwords"},  # an explicit value the saved run does not have
        {"source_vocabulary_size": 21},
        {"source_vocabulary_size": None},  # none = 12000, not the saved 20
        {"precision": "float32"},  # another precision (float32 caps the target words)
    ],
)
def test_a_saved_choice_of_other_inputs_or_values_is_decided_afresh(tmp_path, given):
    saved_run(tmp_path)
    config = TrainConfig(out=str(tmp_path), **given)
    choice = resolve_run_tokenizer(config, TrainConfig.load(tmp_path), splits_of(SMALL))
    config = choice.resolved(config)
    assert "saved choice" not in choice.describe()
    assert (config.source_vocabulary_size, config.target_vocabulary_size) != (20, 30)


@pytest.mark.parametrize("given", [{"epochs": 9}, {"steps_per_epoch": 7}, {"batch_size": 8}])
def test_a_saved_choice_survives_another_budget(tmp_path, given):
    saved_run(tmp_path)
    config = TrainConfig(out=str(tmp_path), **given)
    read = splits_of(SMALL)
    choice = resolve_run_tokenizer(config, TrainConfig.load(tmp_path), read)
    config = choice.resolved(config)
    assert "saved choice" in choice.describe()
    assert (config.source_vocabulary_size, config.target_vocabulary_size, read.calls) == (20, 30, 0)


def test_an_explicit_choice_needs_no_resolution(tmp_path):
    saved_run(tmp_path)
    config = TrainConfig(out=str(tmp_path), tokenizer="words", source_vocabulary_size=20,
                         target_vocabulary_size=30)  # fmt: skip
    saved = TrainConfig.load(tmp_path)
    assert resolve_run_tokenizer(config, saved, splits_of(SMALL)).reason == "given"


# ------------------------------------------------------------- runs


def tiny_argv(corpus, out, *extra):
    """`keras-attention train` flags of a tiny run that leaves the tokenizer to `auto`."""
    return ["train", "--data", str(corpus), "--out", str(out),
            "--embedding-dim", "8", "--encoder-units", "8", "--decoder-units", "16",
            "--attention", "luong", "--score", "general", "--batch-size", "16",
            "--max-pairs", "600", "--validation-fraction", "0.1", "--test-fraction", "0.05",
            "--max-length", "12", "--precision", "float32", "--time-budget-minutes", "none",
            "--steps-per-epoch", "3", *extra]  # fmt: skip


def saved_choice(out):
    config = json.loads((out / "config.json").read_text())
    return config["tokenizer"], config["source_vocabulary_size"], config["target_vocabulary_size"]


def test_a_new_run_prints_and_saves_the_resolved_choice(digits_corpus, tmp_path, capsys):
    from keras_attention.cli import main

    out = tmp_path / "run"
    assert main(tiny_argv(digits_corpus, out, "--epochs", "1")) == 0
    printed = capsys.readouterr().out
    lines = printed_lines(printed)
    assert lines[0] == "Precision: float32"
    # The digits corpus: 10 digits and 10 French words, + 4 reserved tokens.
    assert lines[1].startswith("Tokenizer: words 14/14 (auto: ")
    match = re.search(
        r"the word vocabularies hold 100.00% / 100.00% of the training tokens >= 98% and "
        r"0.000 source words seen once per training pair < 0.15; 10 / 10 distinct word tokens; "
        r"from (\d+) sampled training pairs\)$",
        lines[1],
    )
    assert match, lines[1]
    sampled = json.loads((out / "data.json").read_text())["sample_split_pairs"]["train"]
    assert int(match.group(1)) == sampled
    assert f"Learning the vocabularies from {sampled} sampled training pairs" in printed
    assert saved_choice(out) == ("words", 14, 14)
    vocabulary = (out / "source_vocabulary.txt").read_text().split()
    assert vocabulary[:3] == ["[UNK]", "[START]", "[END]"]  # padding is not written
    assert sorted(vocabulary[3:]) == [str(digit) for digit in range(10)]

    # The same command again: the run completed, so nothing new is printed.
    assert main(tiny_argv(digits_corpus, out, "--epochs", "1")) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and "already completed" in lines[0], lines


class StopAfterFirstEpoch(keras.callbacks.Callback):
    """Sends this process SIGINT after the first step of the second epoch."""

    def on_train_batch_end(self, batch, logs=None):
        if self.model.optimizer.iterations.numpy() == 4:  # 3 steps per epoch
            os.kill(os.getpid(), signal.SIGINT)


def test_a_resumed_run_keeps_its_choice(digits_corpus, tmp_path, capsys, monkeypatch):
    from keras_attention.cli import build_parser, config_from_args, main
    from keras_attention.training.interrupt_on_signal import TrainingInterrupted
    from keras_attention.training.trainer import train

    out = tmp_path / "run"
    argv = tiny_argv(digits_corpus, out, "--epochs", "2")
    config = config_from_args(build_parser().parse_args(argv))
    assert config.tokenizer == "auto"
    with pytest.raises(TrainingInterrupted) as interrupted:
        train(config, verbose=0, callbacks=[StopAfterFirstEpoch()])
    assert interrupted.value.epochs_done == 1
    assert saved_choice(out) == ("words", 14, 14)

    def no_statistics(pairs):
        raise AssertionError("a resumed run must not decide again")

    monkeypatch.setattr(tokenizer_choice, "corpus_statistics", no_statistics)
    assert main(argv) == 0
    lines = printed_lines(capsys.readouterr().out)
    assert lines[1] == (
        f"Tokenizer: words 14/14 (auto: the run's saved choice ({out / 'config.json'}))"
    )
    assert saved_choice(out) == ("words", 14, 14)
    assert "Trained 2 epochs" in lines[-1]


def test_explicit_values_and_bad_values_on_the_command_line(digits_corpus, tmp_path, capsys):
    from keras_attention.cli import main

    out = tmp_path / "run"
    argv = tiny_argv(digits_corpus, out, "--epochs", "1", "--source-vocabulary-size", "9",
                     "--target-vocabulary-size", "none")  # fmt: skip
    assert main(argv) == 0
    assert "Tokenizer: words 9/16000 (auto: " in capsys.readouterr().out
    assert saved_choice(out) == ("words", 9, 16000)

    assert main(tiny_argv(digits_corpus, tmp_path / "bad", "--source-vocabulary-size", "-3")) == 2
    err = capsys.readouterr().err
    assert err.startswith("keras-attention train: error: `source_vocabulary_size` must be")
    assert "Received: source_vocabulary_size=-3" in err
    assert not (tmp_path / "bad").exists()
    for flag, value, message in [
        ("--tokenizer", "nope", "invalid choice: 'nope'"),
        ("--target-vocabulary-size", "lots", "expected an int, 'auto' or 'none'; got 'lots'"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            main(tiny_argv(digits_corpus, tmp_path / "bad", flag, value))
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err


def test_the_reserved_token_count_is_the_vocabularies():
    from keras_attention.text import RESERVED_TOKENS

    assert tokenizer_choice.RESERVED_TOKENS == len(RESERVED_TOKENS)
