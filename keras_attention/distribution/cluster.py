"""The cluster of a multi-worker run: `TF_CONFIG` or `--worker-hosts`/`--task-index`.

The cluster comes from `TF_CONFIG` when it is set (Kubeflow's TFJob and most
launchers set it), else from `worker_hosts` and `task_index`. Only `"chief"`
and `"worker"` tasks take part in synchronous data-parallel training.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

_TASK_TYPES = ("chief", "worker")


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


def cluster_hosts(tf_config: dict) -> list[tuple[str, str]]:
    """`(task name, "host:port")` of every task of a `TF_CONFIG` dict, chief first."""
    cluster = tf_config["cluster"]
    return [
        (f"{task_type} {index}", address)
        for task_type in _TASK_TYPES
        for index, address in enumerate(cluster.get(task_type, []))
    ]
