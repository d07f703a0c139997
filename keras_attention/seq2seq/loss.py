"""`sequence_loss` and `SequenceLoss`: weighted cross entropy over a sequence of logits
(TFA's API)."""

import keras
import tensorflow as tf

from keras_attention.seq2seq.backend_support import require_tensorflow


def _check_reductions(
    average_across_timesteps, average_across_batch, sum_over_timesteps, sum_over_batch
):
    if average_across_timesteps and sum_over_timesteps:
        raise ValueError(
            "average_across_timesteps and sum_over_timesteps cannot be set to True at same time."
        )
    if average_across_batch and sum_over_batch:
        raise ValueError(
            "average_across_batch and sum_over_batch cannot be set to True at same time."
        )
    if average_across_batch and sum_over_timesteps:
        raise ValueError(
            "average_across_batch and sum_over_timesteps cannot be set to True at same time "
            "because of ambiguous order."
        )
    if sum_over_batch and average_across_timesteps:
        raise ValueError(
            "sum_over_batch and average_across_timesteps cannot be set to True at same time "
            "because of ambiguous order."
        )


def _reduce(crossent, weights, axis, average):
    """Sums `crossent` over `axis`, divided by the weights' sum (`average`) or by the
    count of non-zero weights; 0 where that is 0."""
    total = tf.reduce_sum(crossent, axis=axis)
    if average:
        return tf.math.divide_no_nan(total, tf.reduce_sum(weights, axis=axis))
    count = tf.cast(tf.math.count_nonzero(weights, axis=axis), total.dtype)
    return tf.math.divide_no_nan(total, count)


def sequence_loss(
    logits,
    targets,
    weights,
    average_across_timesteps=True,
    average_across_batch=True,
    sum_over_timesteps=False,
    sum_over_batch=False,
    softmax_loss_function=None,
    **kwargs,
):
    """Weighted cross entropy of `logits` `(batch, time, classes)` against `targets`
    (ids `(batch, time)` or one-hot `(batch, time, classes)`), TFA's `sequence_loss`.

    `average_*` divide the weighted sum by the sum of the weights; `sum_over_*` divide
    it by the count of non-zero weights (a mean over the real tokens). Reducing both
    axes gives a scalar; one axis, a vector over the other; none, `(batch, time)`.
    `average_across_batch` with `sum_over_timesteps` (and `sum_over_batch` with
    `average_across_timesteps`) is refused: the order would be ambiguous.

    Args:
        logits: `(batch_size, sequence_length, num_classes)`.
        targets: `(batch_size, sequence_length)` ids or one-hot rows.
        weights: `(batch_size, sequence_length)` (ones if `None`).
        average_across_timesteps: Boolean. Defaults to `True`.
        average_across_batch: Boolean. Defaults to `True`.
        sum_over_timesteps: Boolean. Defaults to `False`.
        sum_over_batch: Boolean. Defaults to `False`.
        softmax_loss_function: Optional `(labels, logits) -> loss` in place of the
            softmax cross entropy.
        **kwargs: `name`, an optional name scope (as TFA's keyword argument).

    Returns:
        The loss: a scalar, a vector or `(batch_size, sequence_length)`.
    """
    require_tensorflow("sequence_loss", "TensorFlow's cross entropy ops")
    if len(logits.shape) != 3:
        raise ValueError("Logits must be a [batch_size x sequence_length x logits] tensor")
    targets_rank = len(targets.shape)
    if targets_rank not in (2, 3):
        raise ValueError(
            "Targets must be either a [batch_size x sequence_length] tensor of label ids "
            "or a [batch_size x sequence_length x num_classes] tensor of one-hot labels"
        )
    if weights is None:
        weights = tf.ones(tf.shape(logits)[:2], dtype=logits.dtype)
    if len(weights.shape) != 2:
        raise ValueError("Weights must be a [batch_size x sequence_length] tensor")
    _check_reductions(
        average_across_timesteps, average_across_batch, sum_over_timesteps, sum_over_batch
    )
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"Unexpected keyword arguments: {sorted(kwargs)}")
    with tf.name_scope(name or "sequence_loss"):
        num_classes = tf.shape(logits)[2]
        logits_flat = tf.reshape(logits, [-1, num_classes])
        if softmax_loss_function is not None:
            crossent = softmax_loss_function(labels=tf.reshape(targets, [-1]), logits=logits_flat)
        elif targets_rank == 2:
            crossent = tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=tf.reshape(targets, [-1]), logits=logits_flat
            )
        else:
            crossent = tf.nn.softmax_cross_entropy_with_logits(
                labels=tf.reshape(targets, [-1, num_classes]), logits=logits_flat
            )
        weights = tf.cast(weights, crossent.dtype)
        crossent *= tf.reshape(weights, [-1])
        if average_across_timesteps and average_across_batch:
            return _reduce(crossent, weights, None, average=True)
        if sum_over_timesteps and sum_over_batch:
            return _reduce(crossent, weights, None, average=False)
        crossent = tf.reshape(crossent, tf.shape(logits)[0:2])
        if average_across_timesteps or average_across_batch:
            return _reduce(crossent, weights, [0] if average_across_batch else [1], True)
        if sum_over_timesteps or sum_over_batch:
            return _reduce(crossent, weights, [0] if sum_over_batch else [1], False)
        return crossent


@keras.saving.register_keras_serializable(package="keras_attention.seq2seq")
class SequenceLoss(keras.losses.Loss):
    """`sequence_loss` as a Keras loss (TFA's `SequenceLoss`):
    `loss(y_true, y_pred, sample_weight)`, the sample weights being the per-token
    weights. By default the mean over the tokens with non-zero weight.

    Args:
        average_across_timesteps: Boolean. Defaults to `False`.
        average_across_batch: Boolean. Defaults to `False`.
        sum_over_timesteps: Boolean. Defaults to `True`.
        sum_over_batch: Boolean. Defaults to `True`.
        softmax_loss_function: Optional `(labels, logits) -> loss`.
        name: Optional name.
    """

    def __init__(
        self,
        average_across_timesteps=False,
        average_across_batch=False,
        sum_over_timesteps=True,
        sum_over_batch=True,
        softmax_loss_function=None,
        name=None,
    ):
        super().__init__(name=name, reduction="none")
        self.average_across_timesteps = average_across_timesteps
        self.average_across_batch = average_across_batch
        self.sum_over_timesteps = sum_over_timesteps
        self.sum_over_batch = sum_over_batch
        self.softmax_loss_function = softmax_loss_function

    def __call__(self, y_true, y_pred, sample_weight=None):
        return sequence_loss(
            y_pred,
            y_true,
            sample_weight,
            average_across_timesteps=self.average_across_timesteps,
            average_across_batch=self.average_across_batch,
            sum_over_timesteps=self.sum_over_timesteps,
            sum_over_batch=self.sum_over_batch,
            softmax_loss_function=self.softmax_loss_function,
            name=self.name,
        )

    def call(self, y_true, y_pred):
        return sequence_loss(y_pred, y_true, None)

    def get_config(self):
        if self.softmax_loss_function is not None:
            raise NotImplementedError(
                "A SequenceLoss with softmax_loss_function cannot be serialized."
            )
        return {
            "average_across_timesteps": self.average_across_timesteps,
            "average_across_batch": self.average_across_batch,
            "sum_over_timesteps": self.sum_over_timesteps,
            "sum_over_batch": self.sum_over_batch,
            "name": self.name,
        }
