"""`AttentionWrapperState`: the state an `AttentionWrapper` carries from step to step."""

import collections

import keras
import tensorflow as tf

from keras_attention.seq2seq.backend_support import is_tensorflow


class AttentionWrapperState(
    collections.namedtuple(
        "AttentionWrapperState",
        ("cell_state", "attention", "alignments", "alignment_history", "attention_state"),
    )
):
    """The state of an `AttentionWrapper`.

    Attributes:
        cell_state: The wrapped cell's state at the previous step.
        attention: The attention emitted at the previous step.
        alignments: The previous step's alignments (a tuple of them with several
            mechanisms).
        alignment_history: With `alignment_history=True`, a time-major `TensorArray`
            of every step's alignments (call `.stack()`), else `()`.
        attention_state: The mechanisms' states (the alignments, for TFA's ones).
    """

    def clone(self, **kwargs):
        """A copy with the fields in `kwargs` replaced (shapes must match).

        Example: `state.clone(cell_state=encoder_final_state)`.
        """

        def with_same_shape(old, new):
            if not (hasattr(old, "shape") and hasattr(new, "shape")):
                return new  # TensorArrays and empty histories
            if is_tensorflow() and not tf.executing_eagerly():
                assertion = tf.debugging.assert_equal(tf.shape(new), tf.shape(old))
                with tf.control_dependencies([assertion]):
                    return tf.identity(new)
            if tuple(old.shape) != tuple(new.shape):
                raise ValueError(
                    "The shape of the AttentionWrapperState is expected to be the same "
                    f"as the one to clone. Received: {tuple(old.shape)} and {tuple(new.shape)}"
                )
            return new

        return keras.tree.map_structure(with_same_shape, self, super()._replace(**kwargs))
