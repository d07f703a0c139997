"""Workers agree on the config and data before training, or all stop with the reason."""

import pytest
from helpers.workers import Workers, free_ports, train_command, worker_env

from keras_attention.distribution.agreement import comparable_config, fingerprint
from keras_attention.runs.train_config import TrainConfig


def test_config_comparison_ignores_paths_only():
    a = TrainConfig(data="/mnt/a/corpus.tsv", out="/mnt/a/run")
    b = TrainConfig(data="/data/corpus.tsv", out="/shared/run")
    assert comparable_config(a) == comparable_config(b)
    c = TrainConfig(data="/mnt/a/corpus.tsv", out="/mnt/a/run", learning_rate=1e-3)
    assert fingerprint(comparable_config(a)) != fingerprint(comparable_config(c))


@pytest.mark.slow
def test_workers_with_different_configs_fail_fast(digits_corpus, tmp_path):
    """Two workers whose --learning-rate differs: both stop with a message, no hang."""
    hosts = ",".join(f"127.0.0.1:{p}" for p in free_ports(2))
    common = [
        "--data", str(digits_corpus), "--out", str(tmp_path / "run"), "--embedding-dim", "8",
        "--encoder-units", "8", "--decoder-units", "16", "--attention", "luong", "--score", "general",
        "--tokenizer", "words", "--source-vocabulary-size", "30", "--target-vocabulary-size", "30",
        "--epochs", "1",
        "--steps-per-epoch", "2", "--distribute", "multi-worker", "--worker-hosts", hosts,
    ]  # fmt: skip
    with Workers(tmp_path / "logs") as group:
        for index, rate in enumerate(["0.001", "0.002"]):
            argv = train_command(*common, "--task-index", str(index), "--learning-rate", rate)
            group.start(argv, worker_env(), f"worker{index}")
        assert group.wait(180) == [2, 2], group.outputs()
        for index in range(2):
            output = group.output(index)
            assert "started with different config" in output, output[-3000:]
            assert "learning_rate" in output
