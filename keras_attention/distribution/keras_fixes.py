"""Workarounds for Keras 3 bugs in data-parallel `model.fit` on TensorFlow.

`apply_keras_fixes(distribution, model)` applies the ones a strategy needs.

Each fix is gated on the Keras versions known to need it and applied only
when the strategy that triggers the bug is active.
`tests/distribution/test_keras_fixes.py` runs the unpatched code and fails
once upstream has fixed a bug, so the workaround can be deleted.

1. `model.fit` under `MultiWorkerMirroredStrategy` (keras-team/keras#20585):
   `TensorFlowTrainer._maybe_symbolic_build` calls
   `strategy.reduce("MEAN", batch, axis=None)` on the nested `(x, y)` batch,
   which the collective strategy cannot reduce ("Attempt to convert a value
   (PerReplica...) with an unsupported type"). Under `MirroredStrategy` the
   same call fails when the first batch of `fit` or `evaluate` splits
   unevenly across replicas ("Inputs to operation AddN ... must have the
   same size and shape", e.g. a 1-sentence batch on 2 replicas). The batch
   is only needed for its shapes: the fix builds from the first local
   replica's values.
2. Same strategy (tensorflow/tensorflow#72388): `reduce_per_replica` calls
   `strategy.reduce("MEAN", v, axis=0)` on scalar metric values ("Invalid
   reduction dimension 0 for input with 0 dimensions"). The fix reduces
   scalars with `axis=None`.
3. Any strategy with several replicas: the optimizer clips gradients
   (`clipnorm`, `global_clipnorm`, `clipvalue`) on each replica's partial
   gradient, before the cross-replica sum, so the clipped update depends on
   the number of replicas (tf-keras summed first). The fix sums first, then
   clips, then lets the update skip its own sum.
"""

from __future__ import annotations

import logging

import keras
import tensorflow as tf

from keras_attention.distribution.strategy import Distribution

logger = logging.getLogger(__name__)

# The newest Keras release checked to have each bug (bump after checking a
# newer one with tests/distribution/test_keras_fixes.py).
MULTI_WORKER_FIT_BROKEN_THROUGH = (3, 15)
CLIP_BEFORE_ALL_REDUCE_BROKEN_THROUGH = (3, 15)


def keras_version() -> tuple[int, int]:
    major, minor = keras.__version__.split(".")[:2]
    return int(major), int(minor)


def multi_worker_fit_is_broken() -> bool:
    """Whether this Keras needs `fix_multi_worker_fit` (bugs 1 and 2)."""
    return keras_version() <= MULTI_WORKER_FIT_BROKEN_THROUGH


def clip_before_all_reduce_is_broken() -> bool:
    """Whether this Keras needs `all_reduce_before_clipping` (bug 3)."""
    return keras_version() <= CLIP_BEFORE_ALL_REDUCE_BROKEN_THROUGH


def _first_local_value(value):
    if isinstance(value, tf.distribute.DistributedValues):
        return value.values[0]
    return value


def _maybe_symbolic_build(self, iterator=None, data_batch=None):
    """Keras 3.15's `TensorFlowTrainer._maybe_symbolic_build`, without the nested reduce."""
    if self._distribute_strategy is None:
        return
    if iterator is not None:
        for _, _, batches in iterator:
            data_batch = tf.nest.map_structure(_first_local_value, next(batches))
            break
    with self.distribute_strategy.scope():
        self._symbolic_build(data_batch=data_batch)


_patched = False


def fix_multi_worker_fit() -> bool:
    """Patches bugs 1 and 2 in Keras' TensorFlow trainer, if this Keras has them.

    Call it once a strategy with several replicas is in use (it changes
    Keras for the whole process; without a strategy Keras never calls the
    patched code, and bug 2's fix only acts under the multi-worker
    strategy). Idempotent. Returns whether the patch is in place.
    """
    global _patched
    if _patched or not multi_worker_fit_is_broken():
        return _patched
    from keras.src.backend.tensorflow import trainer as tf_trainer

    original_reduce = tf_trainer.reduce_per_replica

    def reduce_per_replica(values, strategy, reduction):
        if not (
            tf_trainer._collective_all_reduce_multi_worker(strategy)
            and reduction in ("auto", "mean")
        ):
            return original_reduce(values, strategy, reduction)

        def reduce(value):
            rank = _first_local_value(value).shape.rank
            return strategy.reduce("MEAN", value, axis=None if rank == 0 else 0)

        return tf.nest.map_structure(reduce, values)

    tf_trainer.reduce_per_replica = reduce_per_replica
    tf_trainer.TensorFlowTrainer._maybe_symbolic_build = _maybe_symbolic_build
    _patched = True
    logger.info("Patched Keras %s for multi-worker model.fit", keras.__version__)
    return True


def _sums_before_clipping(optimizer) -> bool:
    replica = tf.distribute.get_replica_context()
    return (
        replica is not None
        and replica.num_replicas_in_sync > 1
        and bool(optimizer.clipnorm or optimizer.global_clipnorm or optimizer.clipvalue)
    )


def all_reduce_before_clipping(optimizer: keras.optimizers.Optimizer) -> None:
    """Makes `optimizer` clip the summed gradient across replicas (bug 3), if needed.

    Changes this optimizer object only (its saved config is unchanged). With
    one replica, or without clipping, it behaves exactly as before.
    """
    if not clip_before_all_reduce_is_broken():
        return
    clip = optimizer._clip_gradients
    all_reduce = optimizer._all_reduce_sum_gradients

    def clip_summed_gradients(grads):
        if _sums_before_clipping(optimizer):
            present = [g for g in grads if g is not None]
            summed = iter(
                tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, present)
            )
            grads = [None if g is None else next(summed) for g in grads]
        return clip(grads)

    def skip_second_sum(grads_and_vars):
        if _sums_before_clipping(optimizer):
            return list(grads_and_vars)
        return all_reduce(grads_and_vars)

    optimizer._clip_gradients = clip_summed_gradients
    optimizer._all_reduce_sum_gradients = skip_second_sum


def apply_keras_fixes(distribution: Distribution, model) -> None:
    """The workarounds `distribution` needs, applied to Keras and to `model`'s optimizer."""
    if distribution.num_replicas > 1:
        fix_multi_worker_fit()
        if model.optimizer is not None:
            all_reduce_before_clipping(model.optimizer)
