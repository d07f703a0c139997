"""Cluster configuration: TF_CONFIG, --worker-hosts/--task-index, roles, clear errors."""

import json
import socket
import threading
import time

import pytest
from helpers.workers import Workers, free_ports, train_command, worker_env

from keras_attention import cli
from keras_attention.runs.train_config import TrainConfig
from keras_attention.training import distribution as dist


def tf_config(cluster, task_type="worker", index=0):
    return json.dumps({"cluster": cluster, "task": {"type": task_type, "index": index}})


TWO = {"worker": ["10.0.0.1:2222", "10.0.0.2:2222"]}


def test_tf_config_is_parsed():
    config = dist.parse_tf_config(tf_config(TWO, index=1))
    assert config["cluster"] == TWO and config["task"] == {"type": "worker", "index": 1}


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "not valid JSON"),
        ('{"task": {"type": "worker", "index": 0}}', 'needs a "cluster"'),
        (tf_config({"worker": ["a:1"], "ps": ["b:1"]}), "task types \\['ps'\\]"),
        (tf_config({"worker": "a:1,b:2"}), "must be a list"),
        (tf_config({"worker": ["a:1", "nohostport"]}), "HOST:PORT"),
        (tf_config({"worker": ["a:1", "a:1"]}), "address twice"),
        (json.dumps({"cluster": TWO}), 'needs a "task"'),
        (tf_config(TWO, "chief", 0), "'chief' is not in the cluster"),
        (tf_config(TWO, index=2), "task index 2 is out of range for the 2 'worker'"),
        (tf_config(TWO, index=-1), "out of range"),
        (tf_config(TWO, index="0"), "must be an int"),
        (tf_config({"worker": []}), 'cluster\\["worker"\\] is empty'),
        (tf_config({"chief": ["a:1", "b:1"]}, "chief"), "more than one chief"),
    ],
)
def test_malformed_tf_config_is_refused_with_the_reason(text, message):
    with pytest.raises(ValueError, match=message):
        dist.parse_tf_config(text)


def test_cluster_from_flags_and_its_errors():
    config = dist.resolve_cluster("h0:1000, h1:1001", 1, environ={})
    assert config == {
        "cluster": {"worker": ["h0:1000", "h1:1001"]},
        "task": {"type": "worker", "index": 1},
    }
    with pytest.raises(ValueError, match="needs a cluster: set TF_CONFIG"):
        dist.resolve_cluster(None, None, environ={})
    with pytest.raises(ValueError, match="needs --task-index"):
        dist.resolve_cluster("h0:1000,h1:1001", None, environ={})
    with pytest.raises(ValueError, match="--task-index 2 is out of range for 2 worker hosts"):
        dist.resolve_cluster("h0:1000,h1:1001", 2, environ={})
    with pytest.raises(ValueError, match="not both"):
        dist.resolve_cluster("h0:1000", 0, environ={"TF_CONFIG": tf_config(TWO)})
    assert dist.resolve_cluster(environ={"TF_CONFIG": tf_config(TWO)})["cluster"] == TWO


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"mode": "horovod"}, "must be one of"),
        ({"mode": "none", "cpu_replicas": 2}, "needs --distribute mirrored"),
        ({"mode": "mirrored", "cpu_replicas": 0}, "positive int"),
        ({"mode": "mirrored", "worker_hosts": "a:1"}, "need --distribute multi-worker"),
        ({"worker_start_timeout": 0}, "positive number of seconds"),
        ({"worker_start_timeout": "60"}, "positive number of seconds"),
    ],
)
def test_options_that_do_not_fit_the_mode_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        dist.make_distribution(**kwargs)


@pytest.mark.parametrize(
    "task_type, index, has_chief_task, chief",
    [
        (None, 0, False, True),
        ("worker", 0, False, True),
        ("worker", 1, False, False),
        ("worker", 0, True, False),
        ("chief", 0, True, True),
    ],
)
def test_the_chief_is_worker_zero_unless_there_is_a_chief_task(
    task_type, index, has_chief_task, chief
):
    distribution = dist.Distribution(
        "multi-worker", None, task_type, index, num_workers=3, has_chief_task=has_chief_task
    )
    assert distribution.is_chief is chief


def test_config_comparison_ignores_paths_only():
    a = TrainConfig(data="/mnt/a/corpus.tsv", out="/mnt/a/run")
    b = TrainConfig(data="/data/corpus.tsv", out="/shared/run")
    assert dist.comparable_config(a) == dist.comparable_config(b)
    c = TrainConfig(data="/mnt/a/corpus.tsv", out="/mnt/a/run", learning_rate=1e-3)
    assert dist.fingerprint(dist.comparable_config(a)) != dist.fingerprint(
        dist.comparable_config(c)
    )


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


def test_waiting_for_workers_names_the_addresses_where_none_answers():
    """Worker 0 of three: worker 1 listens, worker 2 never starts."""
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    with listening:
        me, down = (f"127.0.0.1:{p}" for p in free_ports(2))
        up = f"127.0.0.1:{listening.getsockname()[1]}"
        config = {"cluster": {"worker": [me, up, down]}, "task": {"type": "worker", "index": 0}}
        started = time.monotonic()
        with pytest.raises(dist.DistributedTrainingError) as error:
            dist.wait_for_workers(config, 0.5)
        assert 0.5 <= time.monotonic() - started < 5
        assert str(error.value).startswith(
            f"worker 0 waited 0.5 s for the other workers of the cluster to start: {down} "
            "(worker 2) did not (nothing answers at that address)."
        )
        assert up not in str(error.value)
        config["cluster"]["worker"] = [me, up]
        dist.wait_for_workers(config, 0.5)  # returns at once

        # While it waits, a worker answers at its own address, for the others to see.
        config = {"cluster": {"worker": [up, me]}, "task": {"type": "worker", "index": 1}}
        dist.wait_for_workers(config, 0.5)
        other = {"cluster": {"worker": [down, me]}, "task": {"type": "worker", "index": 1}}
        seen = []
        waiter = threading.Thread(
            target=lambda: seen.append(pytest.raises(dist.DistributedTrainingError,
                                                     dist.wait_for_workers, other, 1.0))
        )  # fmt: skip
        waiter.start()
        time.sleep(0.3)
        assert dist._answers(me)
        waiter.join()
        assert not dist._answers(me), "the port is free again for TensorFlow's server"


def test_a_worker_that_never_starts_makes_the_others_exit_naming_it(digits_corpus, tmp_path):
    """Two 2-worker clusters, each with one worker started (the chief, then worker 1):
    both exit with status 2 soon after --worker-start-timeout, naming the missing address."""
    timeout = 3
    started = time.monotonic()
    with Workers(tmp_path / "logs") as group:
        clusters = []
        for index in (0, 1):
            hosts = [f"127.0.0.1:{p}" for p in free_ports(2)]
            clusters.append(hosts)
            argv = train_command(
                "--data", str(digits_corpus), "--out", str(tmp_path / f"run{index}"),
                "--distribute", "multi-worker", "--worker-hosts", ",".join(hosts),
                "--task-index", str(index), "--worker-start-timeout", str(timeout),
            )  # fmt: skip
            group.start(argv, worker_env(), f"alone{index}")
        assert group.wait(120) == [2, 2], group.outputs()
        elapsed = time.monotonic() - started
        for index, missing in ((0, 1), (1, 0)):
            output = group.output(index)
            assert (
                f"keras-attention train: error: worker {index} waited 3 s for the other workers "
                f"of the cluster to start: {clusters[index][missing]} (worker {missing}) did not"
            ) in output, output[-3000:]
    assert elapsed < 60, f"{elapsed:.0f} s"  # TensorFlow's start, then 3 s; not TF's own wait
    assert not (tmp_path / "run0").exists() and not (tmp_path / "run1").exists()
