"""Adam whose update of each variable is one TensorFlow kernel."""

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="keras_attention")
class FusedAdam(keras.optimizers.Adam):
    """`keras.optimizers.Adam` with each variable's update fused into one kernel.

    The same algorithm, arguments and state (`momentums`, `velocities`) as
    Keras' Adam, whose TensorFlow update is eight element-wise ops per
    variable, each a pass over memory; here it is TensorFlow's
    `ResourceApplyAdam`, which reads the gradient and the variable's slots
    once (`m = b1 m + (1 - b1) g`, `v = b2 v + (1 - b2) g^2`,
    `w -= lr sqrt(1 - b2^t) / (1 - b1^t) m / (sqrt(v) + eps)`). A sparse
    gradient (an embedding lookup's) is made dense first, as Keras' Adam
    effectively does. Measurements: docs/research/model-notes.md.

    With `amsgrad=True`, or with the variables mirrored over several replicas
    (a `tf.distribute` strategy), each update falls back to Keras' ops.
    """

    def update_step(self, gradient, variable, learning_rate):
        if self.amsgrad or self._distribution_strategy.num_replicas_in_sync > 1:
            return super().update_step(gradient, variable, learning_rate)
        if isinstance(gradient, tf.IndexedSlices):
            gradient = tf.convert_to_tensor(gradient)
        dtype = variable.dtype
        index = self._get_variable_index(variable)
        local_step = tf.cast(self.iterations + 1, dtype)
        beta_1 = tf.cast(self.beta_1, dtype)
        beta_2 = tf.cast(self.beta_2, dtype)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle,
            m=self._momentums[index].value.handle,
            v=self._velocities[index].value.handle,
            beta1_power=tf.pow(beta_1, local_step),
            beta2_power=tf.pow(beta_2, local_step),
            lr=tf.cast(learning_rate, dtype),
            beta1=beta_1,
            beta2=beta_2,
            epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(gradient, dtype),
        )
