"""`BasicDecoder`'s decoding on JAX and PyTorch: teacher forcing (`TrainingSampler`)
over the static number of steps of the inputs, one Python step per time step, in
`keras.ops` (`dynamic_decode`'s `tf.while_loop` is TensorFlow's)."""

import numbers

import keras
from keras import ops

from keras_attention.seq2seq.backend_support import require_tensorflow
from keras_attention.seq2seq.training_sampler import TrainingSampler


def _where_finished(finished, if_finished, otherwise):
    """`if_finished` for the finished batch entries, `otherwise` for the others."""
    condition = finished
    while len(condition.shape) < len(otherwise.shape):
        condition = ops.expand_dims(condition, -1)
    return ops.where(condition, if_finished, otherwise)


def unrolled_decode(decoder, inputs, initial_state, training, sampler_kwargs):
    """Runs `decoder` (a `BasicDecoder` with a `TrainingSampler`) for every time step of
    `inputs` (at most `maximum_iterations`): `(outputs, final_state, lengths)` as
    `dynamic_decode`'s.

    `dynamic_decode` stops once every entry has finished, so its outputs have
    `max(sequence_length)` steps; these have the inputs' length, the same whenever the
    longest sequence fills the inputs. The steps past an entry's length are TFA's
    (zeroed, with the state held, under `impute_finished`).
    """
    sampler = decoder.sampler
    if type(sampler) is not TrainingSampler:
        require_tensorflow(
            f"BasicDecoder with {type(sampler).__name__}",
            "dynamic_decode's tf.while_loop; TrainingSampler decodes on every backend",
        )
    finished, step_inputs, state = decoder.initialize(
        inputs, initial_state=initial_state, **sampler_kwargs
    )
    steps = sampler.max_time
    if decoder.maximum_iterations is not None:
        limit = decoder.maximum_iterations
        if isinstance(limit, bool) or not isinstance(limit, numbers.Integral):
            raise ValueError(
                "Off the TensorFlow backend, maximum_iterations must be a Python int (the "
                f"decoder unrolls its steps). Received: {limit!r}"
            )
        steps = min(steps, int(limit))
    if not steps:
        raise ValueError(f"Expected inputs with at least one time step. Received: {steps}")
    lengths = ops.zeros_like(sampler.sequence_length)
    emitted = []
    for time in range(steps):
        outputs, next_state, step_inputs, step_finished = decoder.step(
            time, step_inputs, state, training
        )
        lengths = ops.where(finished, lengths, time + 1)
        if decoder.impute_finished:
            outputs = keras.tree.map_structure(
                lambda out, done=finished: _where_finished(done, ops.zeros_like(out), out),
                outputs,
            )
            next_state = keras.tree.map_structure(
                lambda new, current, done=finished: _where_finished(done, current, new),
                next_state,
                state,
            )
        emitted.append(outputs)
        state = next_state
        finished = ops.logical_or(finished, step_finished)
    axis = 0 if decoder.output_time_major else 1
    stacked = keras.tree.map_structure(lambda *each: ops.stack(each, axis=axis), *emitted)
    return stacked, state, lengths
