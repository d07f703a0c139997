"""Token-level cross-entropy that ignores padding."""

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="keras_attention")
class MaskedSparseCategoricalCrossentropy(keras.losses.Loss):
    """Mean cross-entropy over the real (non-padding) target tokens.

    `loss = sum_{b,t} m_{b,t} * CE(y_{b,t}, logits_{b,t}) / sum_{b,t} m_{b,t}`
    with `m = (y != pad_id)`. The mask is taken from the labels, explicitly,
    so padding never changes the loss (Keras would otherwise weight by
    whatever mask the prediction carries). A batch with no real token has
    loss 0.

    Under a `tf.distribute` strategy with several replicas, each replica
    divides its sum by the token count of the whole global batch (one
    all-reduce), so the replicas' gradients, which the optimizer sums, add
    up to those of one process on the global batch however the tokens fall
    between replicas. (Keras leaves a loss that is already a scalar as it
    is: it does not divide it by the number of replicas.)

    Args:
        pad_id: int, the label id that marks padding.

    Call arguments:
        y_true: `(batch_size, T)` label ids (Keras may hand them over as float).
        y_pred: `(batch_size, T, V)` logits.
    """

    def __init__(self, pad_id=0, name="masked_sparse_categorical_crossentropy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.pad_id = pad_id

    def call(self, y_true, y_pred):
        y_true = keras.ops.cast(y_true, "int32")
        mask = keras.ops.cast(keras.ops.not_equal(y_true, self.pad_id), "float32")
        losses = keras.ops.sparse_categorical_crossentropy(
            keras.ops.maximum(y_true, 0), keras.ops.cast(y_pred, "float32"), from_logits=True
        )
        tokens = keras.ops.sum(mask)
        replica = tf.distribute.get_replica_context()
        if replica is not None and replica.num_replicas_in_sync > 1:
            tokens = replica.all_reduce(tf.distribute.ReduceOp.SUM, tokens)
        return keras.ops.sum(losses * mask) / keras.ops.maximum(tokens, 1.0)

    def get_config(self):
        config = super().get_config()
        config.update({"pad_id": self.pad_id})
        return config
