"""Fixtures for the export tests: one tiny trained run and one export per session."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.export_testing import train_export_run


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory) -> Path:
    """A tiny trained run directory (about 20 s on 2 CPU cores)."""
    return train_export_run(tmp_path_factory.mktemp("export_run"))


@pytest.fixture(scope="session")
def translator(run_dir):
    from keras_attention.inference.trained_run import load_translator

    return load_translator(run_dir)


@pytest.fixture(scope="session")
def exporter(run_dir):
    from keras_attention.export import TranslatorExporter

    return TranslatorExporter.from_run(run_dir, beam_width=3, length_penalty=0.6)


@pytest.fixture(scope="session")
def exported(exporter, tmp_path_factory):
    """Version 1 of a base directory, exported once; tests must not modify it."""
    base = tmp_path_factory.mktemp("export_base")
    return exporter.export(base)


@pytest.fixture(scope="session")
def serving_session(exported):
    """The export loaded as TF Serving loads it (tag "serve", TF1 Session)."""
    from keras_attention.export import SavedModelSession

    with SavedModelSession(exported.path) as session:
        yield session


@pytest.fixture(scope="session")
def loaded(exported):
    """The export loaded with `tf.saved_model.load` (the TF2 path)."""
    import tensorflow as tf

    return tf.saved_model.load(str(exported.path))


@pytest.fixture()
def export_copy(exported, tmp_path) -> Path:
    """A private copy of the version directory, for tests that break it."""
    import shutil

    return Path(shutil.copytree(exported.path, tmp_path / "base" / "1"))
