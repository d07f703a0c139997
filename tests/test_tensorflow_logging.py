"""`keras_attention.tensorflow_logging`: which settings quiet TensorFlow, and when they don't."""

import os
import warnings

import pytest

from keras_attention import tensorflow_logging


@pytest.mark.parametrize(
    "value, verbose", [("1", True), ("true", True), ("YES", True), ("0", False), ("", False)]
)
def test_verbose_environment_variable(monkeypatch, value, verbose):
    monkeypatch.setenv("KERAS_ATTENTION_VERBOSE", value)
    assert tensorflow_logging.verbose_from_environment() is verbose


def test_configure_sets_the_cpp_level_unless_the_user_did(monkeypatch):
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    with warnings.catch_warnings():
        assert tensorflow_logging.configure(verbose=False) is True
        assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "3"
        assert warnings.filters[0][0] == "ignore"
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "1")
    with warnings.catch_warnings():
        assert tensorflow_logging.configure(verbose=False) is False
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "1", "the user's own level is kept"
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL")
    with warnings.catch_warnings():
        assert tensorflow_logging.configure(verbose=True) is False
    assert "TF_CPP_MIN_LOG_LEVEL" not in os.environ
