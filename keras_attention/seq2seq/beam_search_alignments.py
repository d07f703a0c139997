"""The attention of a `BeamSearchDecoder`'s cell: the alignments its search records (for
TFA's coverage penalty and the alignment history), and the `AttentionWrapperState`s'
alignment histories, kept out of the search's loop and put back after it."""

import tensorflow as tf

from keras_attention.seq2seq.attention_wrapper import AttentionWrapperState


def map_wrapper_states(fn, state):
    """`state` with `fn` applied to its `AttentionWrapperState`s (itself or items)."""
    if isinstance(state, AttentionWrapperState):
        return fn(state)
    if isinstance(state, tuple) and not hasattr(state, "_fields"):
        return tuple(map_wrapper_states(fn, item) for item in state)
    return state


def wrapper_states(state):
    found = []
    map_wrapper_states(lambda s: found.append(s) or s, state)
    return found


def _mean(tensors):
    tensors = list(tensors)
    return tensors[0] if len(tensors) == 1 else tf.reduce_mean(tf.stack(tensors, -1), -1)


def attention_probs(state):
    """TFA's attention for the coverage penalty: the alignments, averaged over the
    mechanisms and the wrappers; `None` without an `AttentionWrapper`."""
    wrappers = wrapper_states(state)
    if not wrappers:
        return None
    return _mean(_mean(tf.nest.flatten(wrapper.alignments)) for wrapper in wrappers)


def is_history(value):
    return isinstance(value, tf.TensorArray)


def without_history(state):
    return map_wrapper_states(
        lambda s: s._replace(
            alignment_history=tf.nest.map_structure(lambda _: (), s.alignment_history)
            if any(is_history(h) for h in tf.nest.flatten(s.alignment_history))
            else s.alignment_history
        ),
        state,
    )


def with_histories(state, wrappers):
    """`state` whose `AttentionWrapperState`s take the alignment histories of
    `wrappers` (the same wrappers, in order) where `state` has none."""
    wrappers = list(wrappers)

    def put_back(current):
        original = wrappers.pop(0)
        if tf.nest.flatten(current.alignment_history) or not tf.nest.flatten(
            original.alignment_history
        ):
            return current
        return current._replace(alignment_history=original.alignment_history)

    return map_wrapper_states(put_back, state)


def fresh_history(wrapper):
    """`wrapper` with empty alignment histories (a step writes into them; the search
    keeps the alignments itself)."""

    def fresh(history):
        if not is_history(history):
            return history
        return tf.TensorArray(
            history.dtype, size=0, dynamic_size=True, element_shape=history.element_shape
        )

    return wrapper._replace(
        alignment_history=tf.nest.map_structure(fresh, wrapper.alignment_history)
    )
