"""Waiting, with a time limit, for every worker of a cluster to start."""

from __future__ import annotations

import socket
import time
from collections.abc import Sequence

from keras_attention.distribution.cluster import cluster_hosts
from keras_attention.distribution.errors import DistributedTrainingError

DEFAULT_WORKER_START_TIMEOUT = 300.0  # seconds every worker waits for the others to start


def _split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def _answers(address: str, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection(_split_address(address), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def _listen(address: str) -> socket.socket | None:
    """A listening socket on this worker's port (all interfaces), or `None` if it is taken."""
    try:
        port = _split_address(address)[1]
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    except (OSError, ValueError):
        return None
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("", port))
        listener.listen(64)
    except OSError:
        listener.close()
        return None
    return listener


def worker_start_error(tf_config: dict, timeout: float, missing: Sequence[str]) -> str:
    """The message of a cluster that did not form within `timeout` s: who waited, who is missing.

    `missing`: the task names (`"worker 1"`) that never answered.
    """
    task = tf_config["task"]
    me = f"{task['type']} {task['index']}"
    addresses = dict(cluster_hosts(tf_config))
    names = [f"{addresses[name]} ({name})" for name in missing]
    return (
        f"{me} waited {timeout:g} s for the other workers of the cluster to start: "
        f"{', '.join(names)} did not (nothing answers at "
        f"{'that address' if len(names) == 1 else 'those addresses'}). Start every worker "
        "with the same --worker-hosts (or TF_CONFIG cluster) and its own --task-index, or "
        "give a longer --worker-start-timeout."
    )


def wait_for_workers(tf_config: dict, timeout: float, poll_seconds: float = 0.2) -> None:
    """Returns once every other task of the cluster has started; raises after `timeout` s.

    TensorFlow waits for all workers without a time limit, inside C++ code
    that holds the GIL (no Python thread, signal handler or exception can
    end the wait), so this runs first, in plain Python: this worker listens
    on its own port while it waits, and a worker counts as started once its
    address takes a TCP connection (this check's listener, or TensorFlow's
    server once that worker has moved on to it).

    Raises:
        DistributedTrainingError: naming the addresses that never answered.
    """
    task = tf_config["task"]
    me = f"{task['type']} {task['index']}"
    hosts = cluster_hosts(tf_config)
    pending = {name: address for name, address in hosts if name != me}
    listener = _listen(dict(hosts)[me])
    deadline = time.monotonic() + timeout
    try:
        while True:
            for name, address in list(pending.items()):
                if _answers(address, timeout=min(1.0, max(0.05, deadline - time.monotonic()))):
                    del pending[name]
            if not pending:
                return
            if time.monotonic() >= deadline:
                raise DistributedTrainingError(worker_start_error(tf_config, timeout, pending))
            time.sleep(poll_seconds)
    finally:
        if listener is not None:
            listener.close()
