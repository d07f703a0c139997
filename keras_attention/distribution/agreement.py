"""Decisions all workers take together: equal configs and data, a flag set on any worker."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from keras_attention.distribution.errors import DistributedTrainingError
from keras_attention.distribution.strategy import Distribution


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


def comparable_config(config) -> dict:
    """A `TrainConfig` as a dict without the fields that may differ between machines.

    `out` and `data` are paths (a shared volume may be mounted at another
    path on each machine); the data is compared by content instead.
    """
    values = dataclasses.asdict(config)
    values.pop("out")
    values.pop("data")
    return values


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


def mean_over_workers(distribution: Distribution):
    """A function `value -> float`: the mean of a float over all workers.

    For measurements that all workers must act on alike (a planned step
    count); called by every worker at the same point.
    """
    if not distribution.is_multi_worker:
        return float
    import tensorflow as tf

    strategy = distribution.strategy

    @tf.function
    def mean(value):
        per_replica = strategy.run(lambda: tf.identity(value))
        return strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica, axis=None)

    return lambda value: float(mean(tf.constant(value, tf.float64)))
