"""Training datasets across the replicas of a strategy: split evenly, or one per worker."""

from __future__ import annotations


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


def per_worker(distribution, make_batches):
    """Each worker's own batches: `make_batches((i, n))` on worker `i` of `n`.

    Through `tf.distribute`'s `distribute_datasets_from_function`: nothing is
    sharded or rebatched after the fact, so each worker reads and tokenizes
    only its part of the corpus, and its batches (its share of each global
    batch) go to its replicas.
    """

    def make(context):
        return make_batches((context.input_pipeline_id, context.num_input_pipelines))

    return distribution.strategy.distribute_datasets_from_function(make)
