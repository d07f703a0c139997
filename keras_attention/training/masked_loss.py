"""Token-level cross-entropy that ignores padding."""

import keras
import tensorflow as tf


@tf.custom_gradient
def _cross_entropy_rows(logits, labels):
    """Per-row `logsumexp(z) - z_y` of float32 `(N, V)` logits, and its gradient."""
    top = tf.reduce_max(logits, axis=-1, keepdims=True)
    exp = tf.exp(logits - top)
    total = tf.reduce_sum(exp, axis=-1, keepdims=True)
    losses = tf.squeeze(tf.math.log(total) + top, -1) - tf.gather(logits, labels, batch_dims=1)

    def gradient(upstream):
        rows = tf.range(tf.shape(labels)[0], dtype=labels.dtype)
        grad = tf.tensor_scatter_nd_sub(
            exp * (upstream[:, None] / total), tf.stack([rows, labels], axis=1), upstream
        )
        return grad, None

    return losses, gradient


def sparse_cross_entropy(labels, logits):
    """Per-token cross-entropy `logsumexp(z) - z_y` with its gradient written out.

    The same values as `tf.nn.sparse_softmax_cross_entropy_with_logits`, but
    the backward pass is one pass over the logits, `g * softmax(z)` with `g`
    taken off at the label, from the exponentials the forward pass kept: on
    a CPU the large `(tokens, vocabulary)` softmax is a large part of a
    training step, and this is cheaper than TensorFlow's kernel followed by
    its gradient. Measurements: docs/research/model-notes.md.

    Args:
        labels: int `(...)` ids in `[0, V)`.
        logits: float32 `(..., V)`.

    Returns:
        float32 `(...)`.
    """
    shape = tf.shape(labels)
    flat = _cross_entropy_rows(
        tf.reshape(logits, (-1, tf.shape(logits)[-1])), tf.reshape(labels, (-1,))
    )
    return tf.reshape(flat, shape)


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
        losses = sparse_cross_entropy(
            keras.ops.maximum(y_true, 0), keras.ops.cast(y_pred, "float32")
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
