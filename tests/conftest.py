"""Shared pytest setup: quiet TensorFlow, TensorFlow backend for Keras."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
