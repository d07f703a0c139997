"""Teacher forcing: `TeacherForcing`, the part of `BaseDecoder` that runs it over a whole
target sequence in training.

The recurrence runs over the target in one `tf.while_loop` (or, for a plain
GRU over the target embeddings, as `fused_gru.gru_sequence`); only what depends
on the previous step runs inside it (`BaseDecoder.recurrent_step`), and the
rest (`output_features`) and the projection over the vocabulary run once on
all steps after it. Inference steps the same decoder one token at a time
(`BaseDecoder.step`).
"""

import keras
import tensorflow as tf

from keras_attention.models.fused_gru import gru_sequence

MEMORY_KEYS = ("values", "keys", "mask", "summary")
"""The parts of the decoding state that stay the same at every step."""


class TeacherForcing:
    """`BaseDecoder`'s training pass (`call`): the decoder's own methods
    (`embed`, `initial_state`, `recurrent_step`, `output_features`, `logits`)
    run over a whole target sequence."""

    def call(self, target_in, annotations, source_mask, summary, training=False):
        """Teacher-forced decoding of a whole target sequence.

        Args:
            target_in: int `(batch_size, Tt)`, `[START]` followed by the target.
            annotations: `(batch_size, Ts, dv)` encoder outputs.
            source_mask: bool `(batch_size, Ts)`, True on real tokens.
            summary: `(batch_size, ds)` encoder summary vector.
            training: bool, whether dropout is applied.

        Returns:
            `(logits, attention)`: float32 `(batch_size, Tt, vocabulary_size)`
            and `(batch_size, Tt, Ts)`.
        """
        embedded = self.embed(target_in, training=training)
        state = self.initial_state(annotations, source_mask, summary)
        # Only the recurrent part of the state goes through the loop; the
        # encoder memory (values, keys, mask, summary) is captured, not
        # carried, so the backward pass does not stack a copy of it per step.
        memory = {k: v for k, v in state.items() if k in MEMORY_KEYS}
        recurrent = {k: v for k, v in state.items() if k not in MEMORY_KEYS}
        cell_weights = self._cell_weights(state, split=True)
        # The embeddings' part of the cell's input projection for all steps at once.
        projected = self._projected_inputs(embedded, cell_weights)
        if self._recurrence_is_a_gru:
            outputs = self._gru_recurrence(projected, recurrent, cell_weights, training)
            weights = None
        else:
            outputs, weights = self._loop_recurrence(projected, recurrent, memory, cell_weights)
        # Everything after the recurrence runs once on all steps.
        outputs, attention = self.output_features(outputs, embedded, memory)
        if attention is None:
            attention = weights
        return self.logits(outputs, training=training), keras.ops.cast(attention, "float32")

    def _gru_recurrence(self, projected, recurrent, cell_weights, training=False):
        """`recurrent_step`'s outputs `s_1..s_T` for `_recurrence_is_a_gru`:
        `(batch_size, Tt, units)`."""
        dtype = self.compute_dtype
        steps, batch_size = tf.shape(projected)[1], tf.shape(projected)[0]
        outputs, _ = gru_sequence(
            tf.transpose(projected, [1, 0, 2])[:, None],  # (Tt, 1, B, 3U)
            keras.ops.cast(cell_weights.recurrent_kernel, dtype)[None],
            keras.ops.cast(cell_weights.recurrent_bias, dtype)[None],
            tf.ones([steps, 1, batch_size], tf.bool),
            recurrent["rnn"][0][None],
            training=training,
        )
        return tf.transpose(outputs[:, 0], [1, 0, 2])

    def _loop_recurrence(self, projected, recurrent, memory, cell_weights):
        """`recurrent_step` in a `tf.while_loop` over the target: `(outputs
        (batch_size, Tt, ...), attention (batch_size, Tt, Ts) or None)`."""
        steps = tf.shape(projected)[1]
        # Read step by step from a TensorArray (not `projected[t]`: the
        # gradient of a slice is a full-size tensor per step).
        projected_by_step = tf.TensorArray(projected.dtype, size=steps).unstack(
            tf.transpose(projected, [1, 0, 2])
        )
        outputs = tf.TensorArray(self.compute_dtype, size=steps)
        # The attention weights come out of the loop unless `output_features`
        # computes them: an unwritten TensorArray in the loop would break its
        # XLA gradient.
        weights = [] if self._attention_after_loop else [tf.TensorArray(tf.float32, size=steps)]

        def body(t, recurrent, outputs, weights):
            output, new_state, attention = self.recurrent_step(
                projected_by_step.read(t), {**memory, **recurrent}, cell_weights
            )
            recurrent = {k: new_state[k] for k in recurrent}
            weights = [w.write(t, keras.ops.cast(attention, "float32")) for w in weights]
            return t + 1, recurrent, outputs.write(t, output), weights

        _, _, outputs, weights = tf.while_loop(
            lambda t, *_: t < steps,
            body,
            (tf.constant(0), recurrent, outputs, weights),
            maximum_iterations=steps,
        )
        outputs = tf.transpose(outputs.stack(), [1, 0, 2])
        return outputs, tf.transpose(weights[0].stack(), [1, 0, 2]) if weights else None
