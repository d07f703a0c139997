"""Token-level cross-entropy that ignores padding, optionally label-smoothed."""

import keras
import tensorflow as tf


def check_label_smoothing(label_smoothing) -> float:
    """`label_smoothing` as a float in `[0, 1)`; a `ValueError` naming it otherwise."""
    if (
        isinstance(label_smoothing, bool)
        or not isinstance(label_smoothing, (int, float))
        or not 0.0 <= label_smoothing < 1.0
    ):
        raise ValueError(
            "`label_smoothing` must be a number in [0, 1) (0 = no smoothing). "
            f"Received: label_smoothing={label_smoothing!r}"
        )
    return float(label_smoothing)


def _cross_entropy_rows(logits, labels, label_smoothing=0.0):
    """Per-row cross-entropy of float32 `(N, V)` logits against int `(N,)` labels, and
    its gradient; `label_smoothing` is a Python float (0: the plain `logsumexp(z) - z_y`)."""
    smoothing = float(label_smoothing)

    @tf.custom_gradient
    def rows(logits):
        top = tf.reduce_max(logits, axis=-1, keepdims=True)
        exp = tf.exp(logits - top)
        total = tf.reduce_sum(exp, axis=-1, keepdims=True)
        log_total = tf.squeeze(tf.math.log(total) + top, -1)
        picked = tf.gather(logits, labels, batch_dims=1)
        if smoothing:
            # (1 - eps) CE(y) + eps mean_c CE(c) = lse - (1 - eps) z_y - eps mean(z)
            losses = log_total - (1.0 - smoothing) * picked - smoothing * tf.reduce_mean(logits, -1)
        else:
            losses = log_total - picked

        def gradient(upstream):
            rows = tf.range(tf.shape(labels)[0], dtype=labels.dtype)
            grad = exp * (upstream[:, None] / total)
            if smoothing:
                # softmax - (1 - eps) onehot - eps / V, times the upstream gradient
                vocabulary = tf.cast(tf.shape(logits)[-1], logits.dtype)
                grad -= upstream[:, None] * (smoothing / vocabulary)
                at_label = upstream * (1.0 - smoothing)
            else:
                at_label = upstream
            return tf.tensor_scatter_nd_sub(grad, tf.stack([rows, labels], axis=1), at_label)

        return losses, gradient

    return rows(logits)


def sparse_cross_entropy(labels, logits, label_smoothing=0.0):
    """Per-token cross-entropy `logsumexp(z) - z_y` with its gradient written out.

    The same values as `tf.nn.sparse_softmax_cross_entropy_with_logits`, but
    the backward pass is one pass over the logits, `g * softmax(z)` with `g`
    taken off at the label, from the exponentials the forward pass kept: on
    a CPU the large `(tokens, vocabulary)` softmax is a large part of a
    training step, and this is cheaper than TensorFlow's kernel followed by
    its gradient. Measurements: docs/research/model-notes.md.

    With `label_smoothing` `eps > 0` the target is Keras' smoothed one,
    `q = (1 - eps) onehot(y) + eps / V` (the `eps` spread over all `V`
    classes, the true one included), and the loss is
    `-sum_c q_c log softmax(z)_c = logsumexp(z) - (1 - eps) z_y - eps mean(z)`,
    with gradient `softmax(z) - q`.

    Args:
        labels: int `(...)` ids in `[0, V)`.
        logits: float32 `(..., V)`.
        label_smoothing: float in `[0, 1)`, a Python number.

    Returns:
        float32 `(...)`.
    """
    shape = tf.shape(labels)
    flat = _cross_entropy_rows(
        tf.reshape(logits, (-1, tf.shape(logits)[-1])),
        tf.reshape(labels, (-1,)),
        check_label_smoothing(label_smoothing),
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

    With `label_smoothing` `eps > 0`, `CE` is the cross-entropy against
    Keras' smoothed target `(1 - eps) onehot(y) + eps / V`
    (`sparse_cross_entropy`); padding still contributes nothing and the mean
    is still over the real tokens.

    Args:
        pad_id: int, the label id that marks padding.
        name: the loss's name.
        label_smoothing: float in `[0, 1)`, the share of the target spread
            over all classes (default 0: none).

    Call arguments:
        y_true: `(batch_size, T)` label ids (Keras may hand them over as float).
        y_pred: `(batch_size, T, V)` logits.
    """

    def __init__(
        self,
        pad_id=0,
        name="masked_sparse_categorical_crossentropy",
        label_smoothing=0.0,
        **kwargs,
    ):
        super().__init__(name=name, **kwargs)
        self.pad_id = pad_id
        self.label_smoothing = check_label_smoothing(label_smoothing)

    def call(self, y_true, y_pred):
        y_true = keras.ops.cast(y_true, "int32")
        mask = keras.ops.cast(keras.ops.not_equal(y_true, self.pad_id), "float32")
        losses = sparse_cross_entropy(
            keras.ops.maximum(y_true, 0),
            keras.ops.cast(y_pred, "float32"),
            self.label_smoothing,
        )
        tokens = keras.ops.sum(mask)
        replica = tf.distribute.get_replica_context()
        if replica is not None and replica.num_replicas_in_sync > 1:
            tokens = replica.all_reduce(tf.distribute.ReduceOp.SUM, tokens)
        return keras.ops.sum(losses * mask) / keras.ops.maximum(tokens, 1.0)

    def get_config(self):
        config = super().get_config()
        config.update({"pad_id": self.pad_id, "label_smoothing": self.label_smoothing})
        return config
