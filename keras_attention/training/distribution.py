"""Data-parallel training: which `tf.distribute` strategy, which cluster, which role.

The one place that knows `--distribute`, `--cpu-replicas`, `--worker-hosts`,
`--task-index` and `TF_CONFIG`. TensorFlow is imported inside the functions
(the CLI imports this module for its flags).

Modes:

- `none`: TensorFlow's default strategy (one process, one device).
- `mirrored`: `tf.distribute.MirroredStrategy` over the local GPUs, or over
  `cpu_replicas` logical CPU devices (the way it runs on a CPU-only machine
  and in the tests).
- `multi-worker`: `tf.distribute.MultiWorkerMirroredStrategy`, one process
  per machine (or several on one machine), synchronous all-reduce. The
  cluster comes from `TF_CONFIG` when it is set (Kubeflow's TFJob and most
  launchers set it), else from `worker_hosts` and `task_index`. Worker 0 (or
  the task of type `"chief"`) is the chief: the only one that writes the run
  directory.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Sequence
from typing import Any

logger = logging.getLogger(__name__)

DISTRIBUTE_MODES = ("none", "mirrored", "multi-worker")
DEFAULT_WORKER_START_TIMEOUT = 300.0  # seconds every worker waits for the others to start
_TASK_TYPES = ("chief", "worker")


class DistributedTrainingError(RuntimeError):
    """A data-parallel run cannot go on: a peer failed, or the workers disagree."""


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


def parse_worker_hosts(text: str | Sequence[str]) -> list[str]:
    """`"host:port,host:port"` (or a list) as a list of `host:port` addresses."""
    hosts = [h.strip() for h in (text.split(",") if isinstance(text, str) else text)]
    hosts = [h for h in hosts if h]
    if not hosts:
        raise ValueError(f"`worker_hosts` lists no host. Received: worker_hosts={text!r}")
    for host in hosts:
        name, _, port = host.rpartition(":")
        if not name or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(
                f"Each worker host must be HOST:PORT with a port in 1-65535. Received: {host!r} "
                f"in worker_hosts={text!r}"
            )
    if len(set(hosts)) != len(hosts):
        raise ValueError(f"`worker_hosts` lists an address twice. Received: worker_hosts={text!r}")
    return hosts


def parse_tf_config(text: str) -> dict:
    """Checks a `TF_CONFIG` JSON string; returns it as a dict.

    Expected form: `{"cluster": {"worker": ["host:port", ...], "chief": [...]},
    "task": {"type": "worker", "index": i}}`, `"chief"` optional. A task of
    type `"ps"` or `"evaluator"` is refused (parameter servers are not
    supported by Keras 3; evaluators are not part of synchronous training).
    """
    where = "the TF_CONFIG environment variable"
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{where} is not valid JSON ({error}). Received: {text!r}") from None
    if not isinstance(config, dict) or not isinstance(config.get("cluster"), dict):
        raise ValueError(
            f'{where} needs a "cluster" object, e.g. {{"cluster": {{"worker": '
            f'["host0:2222", "host1:2222"]}}, "task": {{"type": "worker", "index": 0}}}}. '
            f"Received: {text!r}"
        )
    cluster = config["cluster"]
    unsupported = sorted(set(cluster) - set(_TASK_TYPES))
    if unsupported:
        raise ValueError(
            f"{where} lists task types {unsupported}; synchronous data-parallel training "
            f"uses only {list(_TASK_TYPES)} tasks. Received: {text!r}"
        )
    for task_type, hosts in cluster.items():
        if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
            raise ValueError(
                f'{where}: cluster["{task_type}"] must be a list of "host:port" strings. '
                f"Received: {text!r}"
            )
        if not hosts:
            raise ValueError(f'{where}: cluster["{task_type}"] is empty. Received: {text!r}')
        parse_worker_hosts(hosts)
    if len(cluster.get("chief", [])) > 1:
        raise ValueError(f"{where} lists more than one chief. Received: {text!r}")
    if not cluster.get("worker") and not cluster.get("chief"):
        raise ValueError(f"{where} has an empty cluster. Received: {text!r}")
    task = config.get("task")
    if not isinstance(task, dict) or "type" not in task or "index" not in task:
        raise ValueError(
            f'{where} needs a "task" object with "type" and "index", e.g. '
            f'{{"type": "worker", "index": 0}}. Received: {text!r}'
        )
    task_type, index = task["type"], task["index"]
    if task_type not in cluster:
        raise ValueError(
            f"{where}: task type {task_type!r} is not in the cluster {sorted(cluster)}. "
            f"Received: {text!r}"
        )
    if isinstance(index, bool) or not isinstance(index, int):
        raise ValueError(f"{where}: task index must be an int. Received: {text!r}")
    if not 0 <= index < len(cluster[task_type]):
        raise ValueError(
            f"{where}: task index {index} is out of range for the "
            f"{len(cluster[task_type])} {task_type!r} task(s) of the cluster. Received: {text!r}"
        )
    return config


def resolve_cluster(
    worker_hosts: str | Sequence[str] | None = None,
    task_index: int | None = None,
    environ: dict | None = None,
) -> dict:
    """The `TF_CONFIG` dict of this process: from `environ["TF_CONFIG"]`, else the flags.

    Raises:
        ValueError: for a malformed `TF_CONFIG`, an index out of range, both
            `TF_CONFIG` and flags, or neither.
    """
    environ = os.environ if environ is None else environ
    text = environ.get("TF_CONFIG", "").strip()
    if text:
        if worker_hosts or task_index is not None:
            raise ValueError(
                "Give the cluster either in TF_CONFIG or with --worker-hosts/--task-index, "
                "not both: TF_CONFIG is set in the environment."
            )
        return parse_tf_config(text)
    if not worker_hosts:
        raise ValueError(
            "--distribute multi-worker needs a cluster: set TF_CONFIG, or give "
            "--worker-hosts HOST:PORT,HOST:PORT and --task-index I (the same hosts, in the "
            "same order, on every worker)."
        )
    hosts = parse_worker_hosts(worker_hosts)
    if task_index is None:
        raise ValueError(
            f"--worker-hosts needs --task-index (0 to {len(hosts) - 1}): the position of "
            "this worker's address in the list."
        )
    if isinstance(task_index, bool) or not isinstance(task_index, int):
        raise ValueError(f"`task_index` must be an int. Received: task_index={task_index!r}")
    if not 0 <= task_index < len(hosts):
        raise ValueError(
            f"--task-index {task_index} is out of range for {len(hosts)} worker hosts "
            f"(0 to {len(hosts) - 1}). Received: worker_hosts={','.join(hosts)}"
        )
    return {"cluster": {"worker": hosts}, "task": {"type": "worker", "index": task_index}}


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


def cluster_hosts(tf_config: dict) -> list[tuple[str, str]]:
    """`(task name, "host:port")` of every task of a `TF_CONFIG` dict, chief first."""
    cluster = tf_config["cluster"]
    return [
        (f"{task_type} {index}", address)
        for task_type in _TASK_TYPES
        for index, address in enumerate(cluster.get(task_type, []))
    ]


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


def fingerprint(values: dict) -> str:
    """A short hex digest of a JSON-able dict (sorted keys)."""
    text = json.dumps(values, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def check_workers_agree(distribution: Distribution, **values: Any) -> None:
    """Fails fast, on every worker, unless all workers hold equal `values`.

    Each value is hashed; one all-gather of the hashes (a fixed-shape
    collective, so it cannot hang on different configs) lets every worker
    compare them. Use it before the first training step, e.g. with the
    config, a fingerprint of the data and the epoch restored from the backup.

    Raises:
        DistributedTrainingError: naming the values that differ and the
            workers that hold each version.
    """
    if not distribution.is_multi_worker:
        return
    import numpy as np
    import tensorflow as tf

    names = sorted(values)
    local = np.array(
        [int(fingerprint({"value": values[n]})[:15], 16) for n in names], dtype=np.int64
    )
    strategy = distribution.strategy

    def gather(row):
        return strategy.gather(strategy.run(lambda: tf.constant(row)), axis=0).numpy()

    try:
        gathered = gather(local[None, :])
    except tf.errors.OpError as error:
        raise DistributedTrainingError(
            f"{distribution.task_name}: another worker stopped during the start-up check "
            f"({type(error).__name__}); see its log for the reason."
        ) from None
    try:
        # A second round, so that no worker leaves (and aborts the first
        # round on the others) before all have its result.
        gather(np.zeros((1, 1), np.int64))
    except tf.errors.OpError:
        pass
    # One row per replica; replicas of one worker are adjacent.
    per_worker = gathered.reshape(distribution.num_workers, -1, len(names))[:, 0, :]
    differing = [n for i, n in enumerate(names) if len(set(per_worker[:, i].tolist())) > 1]
    if differing:
        groups = {
            n: sorted(
                {
                    tuple(w for w in range(distribution.num_workers) if per_worker[w, i] == h)
                    for h in per_worker[:, i].tolist()
                }
            )
            for i, n in enumerate(names)
            if n in differing
        }
        raise DistributedTrainingError(
            f"The workers were started with different {', '.join(differing)}: every worker "
            "must run the same command (same options, same data; for 'resume_epoch' or "
            "'completed', the same shared run directory) to train one model. Workers that "
            f"agree with each other: {groups}. This worker ({distribution.task_name}) has "
            f"{json.dumps({n: values[n] for n in differing}, default=str)[:2000]}."
        )


def as_distribution(distribute: str | Distribution | None) -> Distribution:
    """`distribute` as a `Distribution` (a mode name is created with its defaults)."""
    if isinstance(distribute, Distribution):
        return distribute
    return make_distribution("none" if distribute is None else distribute)


def comparable_config(config) -> dict:
    """A `TrainConfig` as a dict without the fields that may differ between machines.

    `out` and `data` are paths (a shared volume may be mounted at another
    path on each machine); the data is compared by content instead.
    """
    values = dataclasses.asdict(config)
    values.pop("out")
    values.pop("data")
    return values


def shard_by_data(dataset):
    """`dataset` with explicit per-element sharding across workers.

    Every worker builds the same stream of global batches (same vocabulary,
    same seeded shuffle); `tf.distribute` splits each global batch into one
    slice per replica, so every example is seen by exactly one replica per
    step. A short global batch gives some replicas fewer (or no) examples
    but every replica still takes part in every step.
    """
    import tensorflow as tf

    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return dataset.with_options(options)


def pad_to_replicas(dataset, replicas: int):
    """Pads each `((source, target_in), target_out)` batch to a multiple of `replicas` rows.

    The added rows have an all-padding target (so no loss, no gradient and
    no metric count) and a one-token source (so the attention softmax stays
    finite). With equal rows per replica, Keras' per-replica loss and metric
    trackers, which weight each replica by its rows, report the same
    figures as one process; an uneven split would over-weight the replica
    with fewer rows (a 1-sentence batch on 2 replicas doubled its loss).
    """
    if replicas == 1:
        return dataset
    import tensorflow as tf

    def pad(inputs, target_out):
        source, target_in = inputs
        extra = -tf.shape(source)[0] % replicas
        filler = tf.pad(tf.ones([extra, 1], source.dtype), [[0, 0], [0, tf.shape(source)[1] - 1]])
        source = tf.concat([source, filler], axis=0)
        target_in = tf.pad(target_in, [[0, extra], [0, 0]])
        target_out = tf.pad(target_out, [[0, extra], [0, 0]])
        return (source, target_in), target_out

    return dataset.map(pad)


def apply_keras_fixes(distribution: Distribution, model) -> None:
    """The `keras_compat` workarounds this distribution needs, on `model`."""
    from keras_attention.training import keras_compat

    if distribution.num_replicas > 1:
        keras_compat.fix_multi_worker_fit()
        if model.optimizer is not None:
            keras_compat.all_reduce_before_clipping(model.optimizer)


def any_worker(distribution: Distribution):
    """A function `flag -> bool` that is True on every worker when it is on any.

    For decisions taken in callbacks (stop training now) that all workers
    must take together, or the others wait forever in the next collective.
    """
    if not distribution.is_multi_worker:
        return lambda flag: bool(flag)
    import tensorflow as tf

    strategy = distribution.strategy

    @tf.function
    def count(flag):
        per_replica = strategy.run(lambda: tf.identity(flag))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    def agree(flag) -> bool:
        return bool(count(tf.constant(1 if flag else 0, tf.int32)) > 0)

    return agree


def writable_run_directory(distribution: Distribution, run):
    """The run directory for the chief; a private temporary one for other workers.

    The other workers run the same callbacks (checkpoints, logs) as the
    chief, so that all run the same collectives, but into a directory that
    is removed when the process exits.
    """
    if distribution.is_chief:
        return run
    from keras_attention.runs.run_directory import RunDirectory

    private = tempfile.mkdtemp(prefix=f"keras_attention_worker{distribution.task_index}_")
    atexit.register(shutil.rmtree, private, ignore_errors=True)
    return RunDirectory(private)


@contextlib.contextmanager
def peer_failures(distribution: Distribution, run):
    """Turns the errors a lost peer causes into one clear `DistributedTrainingError`."""
    if not distribution.is_multi_worker:
        yield
        return
    import tensorflow as tf

    from keras_attention.training.shared_backup import backed_up_epoch

    lost = (
        tf.errors.UnavailableError,
        tf.errors.AbortedError,
        tf.errors.CancelledError,
        tf.errors.DeadlineExceededError,
        tf.errors.InternalError,
    )
    try:
        yield
    except lost as error:
        detail = str(error).strip().splitlines()[0][:400] if str(error).strip() else ""
        raise DistributedTrainingError(
            f"{distribution.task_name} lost the cluster: another worker stopped or cannot be "
            f"reached ({type(error).__name__}: {detail}). Relaunch every worker with the same "
            f"command to resume from epoch {backed_up_epoch(run.backup) + 1} "
            f"(the last backup in {str(run.backup)!r})."
        ) from None


def add_distribute_arguments(parser: argparse.ArgumentParser) -> None:
    """The `--distribute`, `--cpu-replicas`, `--worker-hosts`, `--task-index` flags."""
    group = parser.add_argument_group("distributed training")
    group.add_argument(
        "--distribute",
        choices=DISTRIBUTE_MODES,
        default="none",
        help="none: one device; mirrored: all local GPUs (or --cpu-replicas logical CPUs); "
        "multi-worker: one process per machine, cluster from TF_CONFIG or --worker-hosts "
        "(default: none). --batch-size stays the global batch.",
    )
    group.add_argument(
        "--cpu-replicas",
        type=int,
        default=None,
        help="with --distribute mirrored: split the CPU into N logical devices",
    )
    group.add_argument(
        "--worker-hosts",
        default=None,
        help="with --distribute multi-worker and no TF_CONFIG: HOST:PORT,HOST:PORT,... "
        "(the same list on every worker; the first is the chief)",
    )
    group.add_argument(
        "--task-index",
        type=int,
        default=None,
        help="with --worker-hosts: this worker's position in the list (0 = chief)",
    )
    group.add_argument(
        "--worker-start-timeout",
        type=float,
        default=DEFAULT_WORKER_START_TIMEOUT,
        metavar="SECONDS",
        help="with --distribute multi-worker: how long each worker waits for all the others "
        "to start; then every waiting worker exits with an error naming the addresses that "
        f"did not answer (default: {DEFAULT_WORKER_START_TIMEOUT:g})",
    )


def distribution_from_args(args: argparse.Namespace) -> Distribution:
    return make_distribution(
        args.distribute,
        cpu_replicas=args.cpu_replicas,
        worker_hosts=args.worker_hosts,
        task_index=args.task_index,
        worker_start_timeout=args.worker_start_timeout,
    )
