"""A resumed run's sample comes back from its run directory, without reading the corpus."""

import dataclasses
import os

import pytest

from keras_attention.runs import run_data
from keras_attention.runs.run_data import (
    claim_run,
    recorded_sample,
    run_splits,
    sample_splits,
    write_run_files,
)


@pytest.fixture
def started_run(digits_corpus, make_train_config, tmp_path):
    """A run that wrote its splits, data summary and vocabularies (as `train` does first)."""
    config = make_train_config(digits_corpus, tmp_path / "run")
    splits = sample_splits(config)
    write_run_files(claim_run(config), config, splits)
    return config, splits


def test_a_started_run_resumes_with_its_recorded_sample(started_run, monkeypatch):
    config, splits = started_run
    recorded = recorded_sample(config)
    assert recorded is not None and recorded.recorded and not recorded.train
    assert (recorded.validation, recorded.test) == (splits.validation, splits.test)
    assert recorded.summary() == splits.summary(), "the same record: workers agree on it"
    assert recorded.training_lines() == splits.training_lines() > 0
    assert recorded.describe() == splits.describe()
    assert recorded.strides == splits.strides and recorded.scans == splits.scans

    def no_reading(*args, **kwargs):
        raise AssertionError("the corpus was read")

    monkeypatch.setattr(run_data, "scan_corpora", no_reading)
    assert run_splits(config, no_reading).summary() == splits.summary()


def test_a_changed_corpus_or_missing_file_reads_the_corpus_again(
    started_run, digits_corpus, tmp_path
):
    config, _ = started_run
    status = os.stat(digits_corpus)
    os.utime(digits_corpus, ns=(status.st_atime_ns, status.st_mtime_ns + 10**9))
    assert recorded_sample(config) is None, "modified since the run scanned it"
    os.utime(digits_corpus, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert recorded_sample(config) is not None

    other = tmp_path / "other.tsv"
    other.write_bytes(digits_corpus.read_bytes())
    config = dataclasses.replace(config, data=[str(other)])
    assert recorded_sample(config) is None, "another corpus"
    config = dataclasses.replace(config, data=[str(digits_corpus)])
    (config_run := tmp_path / "run" / "source_vocabulary.txt").unlink()
    assert recorded_sample(config) is None, f"{config_run.name} was not written yet"


def test_held_out_names_the_sources_of_the_splits_given_as_files():
    """With the run's sample, a validation split given as a file takes no share of the
    corpora and its sources are kept out of training; a sampled test split is not."""
    from types import SimpleNamespace

    from keras_attention.runs.run_data import held_out
    from keras_attention.runs.train_config import TrainConfig

    config = TrainConfig(validation_data="valid.tsv", test_fraction=0.1)
    sample = SimpleNamespace(
        validation=[("b source", "b"), ("a source", "a"), ("b source", "b2")],
        test=[("c source", "c")],
    )
    assert held_out(config).excluded_sources == ()
    given = held_out(config, sample)
    assert given.validation_fraction == 0.0 and given.test_fraction == 0.1
    assert given.excluded_sources == ("a source", "b source")
