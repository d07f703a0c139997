"""The `tf.distribute` strategy of a training process, and its role in the cluster.

TensorFlow is imported inside the functions, so the command line's flags
(`keras_attention.distribution.flags`) load without it.

Modes:

- `none`: TensorFlow's default strategy (one process, one device).
- `mirrored`: `tf.distribute.MirroredStrategy` over the local GPUs, or over
  `cpu_replicas` logical CPU devices (the way it runs on a CPU-only machine
  and in the tests).
- `multi-worker`: `tf.distribute.MultiWorkerMirroredStrategy`, one process
  per machine (or several on one machine), synchronous all-reduce, over the
  cluster of `keras_attention.distribution.cluster`. Worker 0 (or the task of
  type `"chief"`) is the chief: the only one that writes the run directory.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

from keras_attention.distribution.cluster import resolve_cluster
from keras_attention.distribution.worker_start import (
    DEFAULT_WORKER_START_TIMEOUT,
    wait_for_workers,
)

logger = logging.getLogger(__name__)

DISTRIBUTE_MODES = ("none", "mirrored", "multi-worker")


@dataclasses.dataclass(frozen=True)
class Distribution:
    """How one training process takes part in data-parallel training.

    Create it with `make_distribution` before any other TensorFlow op runs.

    Attributes:
        mode: one of `DISTRIBUTE_MODES`.
        strategy: the `tf.distribute.Strategy` to build and fit the model under.
        task_type: `"worker"` or `"chief"` (multi-worker), else `None`.
        task_index: this process's index among tasks of its type (0 if alone).
        num_workers: processes in the cluster (1 unless multi-worker).
    """

    mode: str
    strategy: Any
    task_type: str | None = None
    task_index: int = 0
    num_workers: int = 1
    has_chief_task: bool = False

    @property
    def is_chief(self) -> bool:
        """Whether this process writes the run directory (worker 0, or the "chief" task)."""
        if self.task_type is None or self.task_type == "chief":
            return True
        return self.task_index == 0 and not self.has_chief_task

    @property
    def is_multi_worker(self) -> bool:
        return self.num_workers > 1

    @property
    def num_replicas(self) -> int:
        return self.strategy.num_replicas_in_sync

    @property
    def task_name(self) -> str:
        return f"{self.task_type or 'worker'} {self.task_index}"

    def describe(self) -> dict:
        """What metrics.json records about the distribution of a run."""
        return {
            "mode": self.mode,
            "workers": self.num_workers,
            "replicas": self.num_replicas,
        }


def _set_cpu_replicas(count: int) -> None:
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    current = tf.config.get_logical_device_configuration(cpu)
    if current is not None and len(current) == count:
        return
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)]
        )
    except RuntimeError:
        raise ValueError(
            f"cpu_replicas={count} must be set before TensorFlow initializes its devices: "
            "choose the distribution first thing in a fresh process (the CLI does)."
        ) from None


def make_distribution(
    mode: str = "none",
    cpu_replicas: int | None = None,
    worker_hosts: str | Sequence[str] | None = None,
    task_index: int | None = None,
    worker_start_timeout: float | None = DEFAULT_WORKER_START_TIMEOUT,
) -> Distribution:
    """Creates the strategy for `mode`; call it before any other TensorFlow op.

    Args:
        mode: `"none"`, `"mirrored"` or `"multi-worker"`.
        cpu_replicas: int or `None`; with `mirrored`, split the CPU into this
            many logical devices and mirror over them (no effect on GPUs,
            which are used when present and `cpu_replicas` is `None`).
        worker_hosts: `"host:port,..."` or a list, the cluster of a
            `multi-worker` run when `TF_CONFIG` is not set.
        task_index: this worker's position in `worker_hosts`.
        worker_start_timeout: seconds a `multi-worker` process waits for
            every other worker of the cluster to start (`wait_for_workers`);
            then it raises, naming the addresses that did not answer. `None`
            leaves the wait to TensorFlow, without a limit.

    Returns:
        A `Distribution`.

    Raises:
        ValueError: for an unknown mode, flags that do not fit the mode, a
            malformed `TF_CONFIG`, an index out of range, or no cluster.
    """
    if mode not in DISTRIBUTE_MODES:
        raise ValueError(f"`distribute` must be one of {DISTRIBUTE_MODES}. Received: {mode!r}")
    if cpu_replicas is not None and (
        isinstance(cpu_replicas, bool) or not isinstance(cpu_replicas, int) or cpu_replicas < 1
    ):
        raise ValueError(
            f"`cpu_replicas` must be a positive int. Received: cpu_replicas={cpu_replicas!r}"
        )
    if cpu_replicas is not None and mode != "mirrored":
        raise ValueError(f"--cpu-replicas needs --distribute mirrored. Received: {mode!r}")
    if worker_start_timeout is not None and (
        isinstance(worker_start_timeout, bool)
        or not isinstance(worker_start_timeout, (int, float))
        or not worker_start_timeout > 0
    ):
        raise ValueError(
            "`worker_start_timeout` must be a positive number of seconds or None. "
            f"Received: worker_start_timeout={worker_start_timeout!r}"
        )
    if mode != "multi-worker" and (worker_hosts or task_index is not None):
        raise ValueError(
            f"--worker-hosts and --task-index need --distribute multi-worker. Received: {mode!r}"
        )

    if mode == "multi-worker":
        tf_config = resolve_cluster(worker_hosts, task_index)  # before TensorFlow starts
    import tensorflow as tf

    if mode == "none":
        return Distribution(mode, tf.distribute.get_strategy())
    if mode == "mirrored":
        if cpu_replicas is not None:
            _set_cpu_replicas(cpu_replicas)
            devices = [d.name for d in tf.config.list_logical_devices("CPU")][:cpu_replicas]
            strategy = tf.distribute.MirroredStrategy(devices)
        else:
            strategy = tf.distribute.MirroredStrategy()
        logger.info("MirroredStrategy over %s", strategy.extended.worker_devices)
        return Distribution(mode, strategy)

    cluster = tf_config["cluster"]
    task = tf_config["task"]
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster),
        task_type=task["type"],
        task_id=task["index"],
        rpc_layer="grpc",
    )
    logger.info(
        "Joining a cluster of %d workers as %s %d; waiting for all of them",
        sum(len(h) for h in cluster.values()),
        task["type"],
        task["index"],
    )
    if worker_start_timeout is not None:
        wait_for_workers(tf_config, worker_start_timeout)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
    return Distribution(
        mode,
        strategy,
        task_type=task["type"],
        task_index=task["index"],
        num_workers=sum(len(h) for h in cluster.values()),
        has_chief_task=bool(cluster.get("chief")),
    )


def as_distribution(distribute: str | Distribution | None) -> Distribution:
    """`distribute` as a `Distribution` (a mode name is created with its defaults)."""
    if isinstance(distribute, Distribution):
        return distribute
    return make_distribution("none" if distribute is None else distribute)
