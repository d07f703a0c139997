"""The layer tests run on every Keras backend (`KERAS_BACKEND=jax` / `torch`); tests of
TensorFlow-only features (tf.function, XLA while loops, the Session path, GradientTape)
are marked `tensorflow_only` and skipped on the others."""

import keras
import pytest


def pytest_collection_modifyitems(config, items):
    if keras.backend.backend() == "tensorflow":
        return
    skip = pytest.mark.skip(reason=f"TensorFlow-only; Keras backend is {keras.backend.backend()}")
    for item in items:
        if "tensorflow_only" in item.keywords:
            item.add_marker(skip)
