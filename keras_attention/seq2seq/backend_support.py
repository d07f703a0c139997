"""Which parts of `keras_attention.seq2seq` run on every Keras backend, and the error
that names the backend when a TensorFlow-only part is used on another one.

On JAX and PyTorch: the attention mechanisms (softmax, hardmax and monotonic
probabilities without pre-sigmoid noise), `AttentionWrapper` (inside
`keras.layers.RNN` or stepped by hand; no `alignment_history`), and `BasicDecoder`
with `TrainingSampler` (teacher forcing). Everything else (`dynamic_decode`'s
`tf.while_loop`, `BeamSearchDecoder`, `gather_tree`, the inference and scheduled
samplers, `SequenceLoss`) needs TensorFlow.
"""

import keras

PORTABLE_PARTS = (
    "the attention mechanisms, AttentionWrapper (in keras.layers.RNN, without "
    "alignment_history) and BasicDecoder with TrainingSampler"
)


def is_tensorflow():
    """Whether Keras runs on the TensorFlow backend."""
    return keras.backend.backend() == "tensorflow"


def require_tensorflow(feature, reason):
    """Raises `NotImplementedError` naming `feature`, `reason` (the TensorFlow machinery
    it needs) and the current backend, unless the backend is TensorFlow."""
    if is_tensorflow():
        return
    raise NotImplementedError(
        f"{feature} needs the TensorFlow backend ({reason}); the Keras backend is "
        f"{keras.backend.backend()!r}. On this backend keras_attention.seq2seq runs "
        f"{PORTABLE_PARTS}."
    )
