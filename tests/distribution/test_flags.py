"""The distributed-training flags: the command line reports cluster errors at once."""

import time

import pytest

from keras_attention import cli


@pytest.mark.parametrize(
    "argv, environ, message",
    [
        (["--distribute", "multi-worker"], {}, "needs a cluster"),
        (["--distribute", "multi-worker"], {"TF_CONFIG": "{oops"}, "not valid JSON"),
        (
            ["--distribute", "multi-worker", "--worker-hosts", "a:1,b:2", "--task-index", "5"],
            {},
            "--task-index 5 is out of range",
        ),
        (["--cpu-replicas", "2"], {}, "needs --distribute mirrored"),
    ],
)
def test_cli_reports_cluster_errors_at_once(argv, environ, message, monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    started = time.monotonic()
    code = cli.main(["train", "--out", str(tmp_path / "run"), *argv])
    assert code == 2
    assert message in capsys.readouterr().err
    assert time.monotonic() - started < 5
    assert not (tmp_path / "run").exists()
