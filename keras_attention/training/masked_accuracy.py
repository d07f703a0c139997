"""Token accuracy that ignores padding."""

import keras


@keras.saving.register_keras_serializable(package="keras_attention")
class MaskedAccuracy(keras.metrics.Metric):
    """Share of real (non-padding) target tokens whose argmax logit is right.

    Accumulates correct and total token counts over batches, so the epoch
    figure is exact regardless of how padding varies between batches.

    Args:
        pad_id: int, the label id that marks padding.
    """

    def __init__(self, pad_id=0, name="masked_accuracy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.pad_id = pad_id
        self.correct = self.add_variable(shape=(), initializer="zeros", name="correct")
        self.total = self.add_variable(shape=(), initializer="zeros", name="total")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = keras.ops.cast(y_true, "int32")
        mask = keras.ops.cast(keras.ops.not_equal(y_true, self.pad_id), "float32")
        predicted = keras.ops.cast(keras.ops.argmax(y_pred, axis=-1), "int32")
        hits = keras.ops.cast(keras.ops.equal(predicted, y_true), "float32") * mask
        self.correct.assign_add(keras.ops.sum(hits))
        self.total.assign_add(keras.ops.sum(mask))

    def result(self):
        return self.correct / keras.ops.maximum(self.total, 1.0)

    def reset_state(self):
        self.correct.assign(0.0)
        self.total.assign(0.0)

    def get_config(self):
        config = super().get_config()
        config.update({"pad_id": self.pad_id})
        return config
