"""Shared pytest setup: quiet TensorFlow, TensorFlow backend for Keras."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import pytest  # noqa: E402
from helpers.training_runs import spelled_digits_pairs, tiny_train_config, write_tsv  # noqa: E402


@pytest.fixture(scope="session")
def digits_corpus(tmp_path_factory):
    """A generated TSV corpus of the spelled-digits task (3,000 pairs)."""
    return write_tsv(tmp_path_factory.mktemp("corpus") / "digits.tsv", spelled_digits_pairs(3000))


@pytest.fixture(scope="session")
def make_train_config():
    """`helpers.training_runs.tiny_train_config` as a fixture."""
    return tiny_train_config


@pytest.fixture(scope="session")
def trained_digits_run(digits_corpus, tmp_path_factory):
    """A run directory trained on the spelled-digits task (about 300 steps)."""
    from keras_attention.training.trainer import train

    out = tmp_path_factory.mktemp("runs") / "digits"
    train(tiny_train_config(digits_corpus, out), verbose=0)
    return out
