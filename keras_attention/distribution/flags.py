"""The command line's distributed-training flags, and the `Distribution` they choose.

`--distribute`, `--cpu-replicas`, `--worker-hosts`, `--task-index` and
`--worker-start-timeout`. Importing this module does not load TensorFlow.
"""

from __future__ import annotations

import argparse

from keras_attention.distribution.strategy import (
    DISTRIBUTE_MODES,
    Distribution,
    make_distribution,
)
from keras_attention.distribution.worker_start import DEFAULT_WORKER_START_TIMEOUT


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
