"""Waiting for the workers of a cluster to start, with a time limit and clear errors."""

import socket
import threading
import time

import pytest
from helpers.workers import Workers, free_ports, train_command, worker_env

from keras_attention.distribution.errors import DistributedTrainingError
from keras_attention.distribution.worker_start import _answers, wait_for_workers


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
        with pytest.raises(DistributedTrainingError) as error:
            wait_for_workers(config, 0.5)
        assert 0.5 <= time.monotonic() - started < 5
        assert str(error.value).startswith(
            f"worker 0 waited 0.5 s for the other workers of the cluster to start: {down} "
            "(worker 2) did not (nothing answers at that address)."
        )
        assert up not in str(error.value)
        config["cluster"]["worker"] = [me, up]
        wait_for_workers(config, 0.5)  # returns at once

        # While it waits, a worker answers at its own address, for the others to see.
        config = {"cluster": {"worker": [up, me]}, "task": {"type": "worker", "index": 1}}
        wait_for_workers(config, 0.5)
        other = {"cluster": {"worker": [down, me]}, "task": {"type": "worker", "index": 1}}
        seen = []
        waiter = threading.Thread(
            target=lambda: seen.append(pytest.raises(DistributedTrainingError,
                                                     wait_for_workers, other, 1.0))
        )  # fmt: skip
        waiter.start()
        time.sleep(0.3)
        assert _answers(me)
        waiter.join()
        assert not _answers(me), "the port is free again for TensorFlow's server"


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
