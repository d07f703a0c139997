"""`init_seed`: the seed of a run's initialization and training order, apart from `seed`,
which draws the held-out splits (and so the vocabularies).

Three tiny word runs on the spelled-digits corpus, two steps each: `seed=3`;
`seed=3, init_seed=5`; `seed=5`. Splits and vocabularies are compared as files, weights
through the saved models.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.cli import main
from keras_attention.inference.trained_run import load_ensemble
from keras_attention.runs.run_directory import RunDirectory
from keras_attention.runs.train_config import TrainConfig
from keras_attention.training.trainer import train

RUNS = {"seed3": {"seed": 3}, "seed3_init5": {"seed": 3, "init_seed": 5}, "seed5": {"seed": 5}}


@pytest.fixture(scope="module")
def runs(digits_corpus, make_train_config, tmp_path_factory):
    root = tmp_path_factory.mktemp("init_seed")
    for name, seeds in RUNS.items():
        config = make_train_config(
            digits_corpus, root / name, embedding_dim=8, encoder_units=8, decoder_units=16,
            epochs=1, steps_per_epoch=2, max_pairs=600, **seeds,
        )  # fmt: skip
        train(config, verbose=0)
    return {name: root / name for name in RUNS}


def held_out_and_vocabulary_files(run) -> dict[str, bytes]:
    directory = RunDirectory(run)
    files = [
        *sorted((directory.path / "splits").glob("*.tsv")),
        *directory.tokenizer_files("words"),
    ]
    assert len(files) >= 4  # the validation and test splits, both vocabularies
    return {path.name: path.read_bytes() for path in files}


def saved_weights(run) -> list:
    model = keras.saving.load_model(RunDirectory(run).model, compile=False)
    return [np.array(w.numpy()) for w in model.weights]


def test_init_seed_keeps_the_splits_and_vocabularies_that_seed_draws(runs):
    same_seed = held_out_and_vocabulary_files(runs["seed3"])
    assert held_out_and_vocabulary_files(runs["seed3_init5"]) == same_seed
    other_seed = held_out_and_vocabulary_files(runs["seed5"])
    assert other_seed["test.tsv"] != same_seed["test.tsv"]


def test_init_seed_draws_other_initial_weights_and_training_order(runs):
    first, second = saved_weights(runs["seed3"]), saved_weights(runs["seed3_init5"])
    assert len(first) == len(second)
    assert all(a.shape == b.shape for a, b in zip(first, second, strict=True))
    # Every weight matrix differs (biases may still be at their zero start after two steps).
    assert all(not np.array_equal(a, b) for a, b in zip(first, second, strict=True) if a.ndim == 2)


def test_runs_that_differ_by_init_seed_make_an_ensemble(runs):
    translator = load_ensemble([runs["seed3"], runs["seed3_init5"]])
    assert len(translator.model.members) == 2
    result = translator.translate(tf.constant(["3 1 4", "2 7"]), translator.strategy(beam_width=1))
    assert result["translation"].shape == (2,)


def test_training_seed_is_init_seed_or_seed():
    assert TrainConfig(seed=3).training_seed == 3
    assert TrainConfig(seed=3, init_seed=5).training_seed == 5
    assert TrainConfig(seed=3, init_seed=0).training_seed == 0


@pytest.mark.parametrize("value", [-1, 1.5, True])
def test_a_bad_init_seed_is_refused_by_name(value):
    with pytest.raises(ValueError, match="init_seed"):
        TrainConfig(init_seed=value)


def test_the_train_command_takes_init_seed(tmp_path, capsys):
    """`--init-seed` parses into the config (`--help` lists it; `none` is the default)."""
    from keras_attention.cli.parser import build_parser

    args = build_parser().parse_args(["train", "--init-seed", "7", "--out", str(tmp_path)])
    assert args.init_seed == 7
    args = build_parser().parse_args(["train", "--init-seed", "none", "--out", str(tmp_path)])
    assert args.init_seed is None
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    assert "--init-seed" in capsys.readouterr().out
