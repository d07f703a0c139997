"""`DecodingStrategy`: the one decoding loop that every strategy shares.

A strategy knows nothing about the model: the model hands it a next-step
function `next_fn(step, token_ids, state) -> (logits, new_state, attention)`
(the contract: `keras_attention.decoding.next_fn`).

Strategies run the base class's single `tf.while_loop` with
`maximum_iterations` and override its hooks; they use only
core TensorFlow ops (no custom ops, no TF Addons), and work eagerly, inside
`tf.function`, with `jit_compile=True`, and inside an exported SavedModel run
by TensorFlow Serving.

`GreedySearch` and `BeamSearch` can also drop the rows of finished
sentences from the loop (`drop_finished=True`,
`keras_attention.decoding.drop_finished_loop`): the model then computes only
the sentences still running, and its `next_fn` sees a batch that shrinks.
Such a `next_fn` must find everything that belongs to a row in `token_ids`
and `state` (not by the row's position), which is what the contract asks.
"""

from __future__ import annotations

import copy
import inspect
import numbers
from typing import Any

import keras
import tensorflow as tf

from keras_attention.decoding.decode_result import DecodeResult
from keras_attention.decoding.drop_finished_loop import drop_finished_loop
from keras_attention.decoding.next_fn import NextFn, call_next_fn, relaxed_shape
from keras_attention.decoding.renamed_options import (
    accepts_old_max_steps,
    warn_old_name,
    with_max_steps,
)
from keras_attention.decoding_defaults import DEFAULT_MAX_OUTPUT_LENGTH


def check_int(name: str, value: Any, minimum: int) -> int:
    """Returns `value` as an `int`, or raises `ValueError` naming it."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or int(value) < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}. Received: {name}={value!r}")
    return int(value)


def check_bool(name: str, value: Any) -> bool:
    """Returns `value` if it is a `bool`, or raises `ValueError` naming it."""
    if not isinstance(value, bool):
        raise ValueError(f"`{name}` must be True or False. Received: {name}={value!r}")
    return value


def write_column(buffer: tf.Tensor, step: tf.Tensor, values: tf.Tensor) -> tf.Tensor:
    """Sets `buffer[..., step] = values` for a buffer whose last axis is time.

    A masked `tf.where` instead of a scatter keeps every shape fixed, which
    XLA needs.
    """
    length = buffer.shape[-1]
    is_step = tf.equal(tf.range(length), step)
    return tf.where(is_step, values[..., tf.newaxis], buffer)


def in_xla_context() -> bool:
    """Whether the graph being built is compiled by XLA (`jit_compile=True`).

    TensorFlow has no public test for it; this is the one its own
    `tf.while_loop` uses. Eagerly, and where the test is unavailable: False.
    """
    if tf.executing_eagerly():
        return False
    try:
        from tensorflow.python.ops import control_flow_util
    except ImportError:  # pragma: no cover - a TensorFlow without the module
        return False
    return bool(control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()))


def _append_step(recorded: tf.Tensor, step: tf.Tensor, step_attention: tf.Tensor) -> tf.Tensor:
    """`recorded` `(step, ...)` with `step_attention` `(...)` appended (`recorded`
    starts as an empty tensor, reshaped to the step's shape)."""
    recorded = tf.reshape(recorded, tf.concat([[step], tf.shape(step_attention)], axis=0))
    return tf.concat([recorded, step_attention[tf.newaxis]], axis=0)


def _pad_steps(recorded: tf.Tensor, missing: tf.Tensor) -> tf.Tensor:
    """`recorded` `(steps, ...)` padded with zeros to `steps + missing` steps."""
    shape = tf.shape(recorded)
    return tf.concat([recorded, tf.zeros(tf.concat([[missing], shape[1:]], 0), recorded.dtype)], 0)


def prepare_start_ids(start_ids: Any) -> tf.Tensor:
    """Converts `start_ids` to an int32 vector, or raises `ValueError`."""
    start_ids = tf.convert_to_tensor(start_ids)
    if start_ids.shape.rank is not None and start_ids.shape.rank != 1:
        raise ValueError(
            f"`start_ids` must have shape (batch_size,). Received: start_ids.shape={start_ids.shape}"
        )
    return tf.cast(start_ids, tf.int32)


@keras.saving.register_keras_serializable(package="keras_attention")
class DecodingStrategy:
    """Base class of decoding strategies: the one decoding loop.

    `__call__` runs a single `tf.while_loop` with `maximum_iterations=max_steps`
    (as keras-hub's `Sampler.__call__` and OpenNMT-tf's `dynamic_decode` do).
    Each iteration calls the model once and hands the float32 log-probs to the
    strategy's `step` hook; the loop stops when every row of the search state's
    `"finished"` flags is true (after at least one step, so an empty batch still
    has a step to stack) or after `max_steps` steps. A strategy supplies only
    what differs, in three hooks:

    1. `initialize(initial_state, start_ids)` returns `(token_ids, state,
       search)`: the ids fed at step 0, the model state (e.g. tiled for beam
       search), and the strategy's own loop variables, a dict of tensors
       whose leaves have a leading sentence dimension and which holds
       `"finished"`, a bool tensor.
    2. `step(step, log_probs, state, attention, search)` picks the next
       tokens and returns `(token_ids, state, search, attention)`: the ids fed
       to the next step, the (possibly reordered) model state, the updated
       search variables and the attention row to record for this step (or
       the nest of records that `record_dtypes` describes).
    3. `finalize(steps, search, attention)` builds the `DecodeResult` from
       the number of steps run, the final search variables and the recorded
       attention, stacked to `(max_steps, rows, Tv)` (rows past `steps` are
       not meaningful).

    `loop` is the `tf.while_loop` between `initialize` and `finalize`.

    With `drop_finished` (a strategy's choice), `step` sees only the rows of
    the sentences still running and their slice of `search`
    (`drop_finished_loop`): a sentence's rows must be consecutive in
    `token_ids` and `state`, and `step` must not record flat row positions
    (beam search records each hypothesis' parent as a beam index).

    Everything is core TensorFlow, with shapes fixed inside the loop unless
    rows are dropped (never under XLA, which needs them fixed), so every
    strategy runs eagerly, in `tf.function`, with `jit_compile=True`, and in
    an exported SavedModel run by TensorFlow Serving.

    This class also holds the arguments every strategy shares, validates them,
    and round-trips them through `get_config` / `from_config`.

    Args:
        max_steps: int >= 1, the most decoding steps, so the most tokens
            generated per sentence (counting the end token). Formerly
            `max_length`, which is still accepted with a `DeprecationWarning`
            (`keras_attention.decoding.renamed_options`).
        end_id: int >= 0, the id that ends a sentence.
        pad_id: int >= 0, the id written after a sentence has ended.

    Call arguments:
        next_fn: `next_fn(step, token_ids, state) -> (logits, new_state,
            attention)`, see `keras_attention.decoding.next_fn`.
        initial_state: a nest of tensors, every leaf of shape
            `(batch_size, ...)`.
        start_ids: int tensor of shape `(batch_size,)`, the ids fed at step 0.
        **options: values of `call_options` for this call only, as Python
            values (checked like the constructor's) or scalar tensors (e.g. a
            serving signature's inputs, which the export checks in the graph):
            `max_steps` (at most the constructor's, which sizes the loop's
            buffers) and the subclass' own (`beam_width`, `seed`, ...).

    Returns:
        A `DecodeResult`.
    """

    call_options: tuple[str, ...] = ("max_steps",)
    """The options `__call__` may override per call."""

    drop_finished: bool = False
    """Whether the loop drops the rows of finished sentences
    (`drop_finished_loop`); only a strategy whose `step` treats sentences
    alike and records no flat row position may set it."""

    drop_min_rows: int = 8
    """With `drop_finished`, the finished rows that make the loop drop them
    (all of them once every sentence has finished). A drop gathers every
    state tensor and restarts the inner loop, which a row or two of a small
    batch does not pay back: a greedy batch of 8 then stays whole to its end,
    while a batch of 64 drops its finished rows 8 or more at a time
    (measurements: docs/research/model-notes.md#decoding)."""

    tensor_arrays: bool = True
    """Whether the loop records each step's attention in a `TensorArray` (the
    default). False: in a tensor that grows by one step per iteration, so the
    loop's variables are all plain tensors, which LiteRT's converter turns
    into builtin ops for any batch size (it lowers a `TensorArray` only when
    the batch is fixed). Not with `drop_finished`."""

    @accepts_old_max_steps
    def __init__(
        self, max_steps: int = DEFAULT_MAX_OUTPUT_LENGTH, end_id: int = 3, pad_id: int = 0
    ):
        self.max_steps = check_int("max_steps", max_steps, minimum=1)
        self.end_id = check_int("end_id", end_id, minimum=0)
        self.pad_id = check_int("pad_id", pad_id, minimum=0)
        # The loop's step limit: `max_steps` unless a call passes a smaller one.
        self.step_limit: int | tf.Tensor = self.max_steps

    @property
    def max_length(self) -> int:
        """Deprecated: the old name of `max_steps`."""
        warn_old_name()
        return self.max_steps

    @max_length.setter
    def max_length(self, value: int) -> None:
        warn_old_name()
        self.max_steps = self.step_limit = check_int("max_steps", value, minimum=1)

    def with_options(self, **options: Any) -> DecodingStrategy:
        """A copy of this strategy with some `call_options` replaced.

        Python values are checked by building a new strategy from the merged
        config; tensors (scalars) replace the attributes as they are. A
        `max_steps` only limits the steps: the buffers keep this strategy's
        `max_steps`, so a tensor can vary from call to call.

        Raises:
            ValueError: an unknown option, or a bad Python value.
        """
        options = with_max_steps(options)
        unknown = sorted(set(options) - set(self.call_options))
        if unknown:
            raise ValueError(
                f"{type(self).__name__} takes the call options {list(self.call_options)}. "
                f"Received: {unknown}"
            )
        max_steps = options.pop("max_steps", None)
        python = {k: v for k, v in options.items() if not tf.is_tensor(v)}
        tensors = {k: v for k, v in options.items() if tf.is_tensor(v)}
        strategy = (
            type(self).from_config({**self.get_config(), **python}) if python else copy.copy(self)
        )
        for name, value in tensors.items():
            setattr(strategy, name, value)
        if max_steps is not None:
            if tf.is_tensor(max_steps):
                strategy.step_limit = tf.cast(max_steps, tf.int32)
            else:
                steps = check_int("max_steps", max_steps, minimum=1)
                if steps > self.max_steps:
                    raise ValueError(
                        f"`max_steps` must be <= the strategy's max_steps={self.max_steps}. "
                        f"Received: max_steps={max_steps!r}"
                    )
                strategy.step_limit = steps
        return strategy

    def __call__(
        self, next_fn: NextFn, initial_state: Any, start_ids: Any, **options: Any
    ) -> DecodeResult:
        if options:
            return self.with_options(**options)(next_fn, initial_state, start_ids)
        start_ids = prepare_start_ids(start_ids)
        initial_state = tf.nest.map_structure(tf.convert_to_tensor, initial_state)
        token_ids, state, search = self.initialize(initial_state, start_ids)
        if self.drop_finished and self.tensor_arrays and not in_xla_context():
            # XLA needs static shapes; LiteRT, plain tensors in the loop.
            return drop_finished_loop(self, next_fn, token_ids, state, search)
        steps, _, search, records = self.loop(next_fn, token_ids, state, search)
        return self.finalize(steps, search, records)

    def record_dtypes(self) -> Any:
        """The dtype, or a nest of dtypes, of what `step` records each step.

        `tf.float32`: the step's attention. A strategy that records more per
        step (`BeamSearch` with `record_steps`) returns a nest; `finalize`
        then receives the same nest of stacked records.
        """
        return tf.float32

    def loop(
        self, next_fn: NextFn, token_ids: tf.Tensor, state: Any, search: dict[str, tf.Tensor]
    ) -> tuple[tf.Tensor, Any, dict[str, tf.Tensor], Any]:
        """The one `tf.while_loop`, from `initialize`'s values.

        Returns `(steps, state, search, records)`: the number of steps run,
        the final model state and search variables, and each step's records
        (see `record_dtypes`) stacked to `(max_steps, ...)`; `__call__`
        hands all but the state to `finalize`. A caller that needs the final
        state or the search variables themselves (TFA's `BeamSearchDecoder`
        in `keras_attention.seq2seq`) calls `initialize` and `loop` itself.
        """
        tensor_arrays = self.tensor_arrays

        def record(records, step, values):
            return tf.nest.map_structure(
                lambda kept, value: (
                    kept.write(step, value) if tensor_arrays else _append_step(kept, step, value)
                ),
                records,
                values,
            )

        def body(step, token_ids, state, search, records):
            log_probs, new_state, step_attention = call_next_fn(next_fn, step, token_ids, state)
            token_ids, new_state, search, step_records = self.step(
                step, log_probs, new_state, step_attention, search
            )
            return step + 1, token_ids, new_state, search, record(records, step, step_records)

        def cond(step, token_ids, state, search, records):
            # Always one step, so an empty batch still has a step to stack.
            return tf.logical_or(
                tf.equal(step, 0), tf.logical_not(tf.reduce_all(search["finished"]))
            )

        dtypes = self.record_dtypes()
        loop_vars = (
            tf.constant(0, tf.int32),
            token_ids,
            state,
            search,
            tf.nest.map_structure(
                lambda dtype: (
                    tf.TensorArray(dtype, size=self.max_steps)
                    if tensor_arrays
                    else tf.zeros([0], dtype)
                ),
                dtypes,
            ),
        )
        shape_invariants = (
            tf.TensorShape([]),
            relaxed_shape(token_ids),
            tf.nest.map_structure(relaxed_shape, state),
            tf.nest.map_structure(relaxed_shape, search),
            tf.nest.map_structure(lambda _: tf.TensorShape(None), dtypes),
        )
        steps, _, state, search, records = tf.while_loop(
            cond,
            body,
            loop_vars,
            shape_invariants=shape_invariants,
            maximum_iterations=self.step_limit,
        )
        if tensor_arrays:
            records = tf.nest.map_structure(lambda kept: kept.stack(), records)
        else:
            records = tf.nest.map_structure(
                lambda kept: _pad_steps(kept, self.max_steps - steps), records
            )
        return steps, state, search, records

    def initialize(
        self, initial_state: Any, start_ids: tf.Tensor
    ) -> tuple[tf.Tensor, Any, dict[str, tf.Tensor]]:
        """The loop's first `(token_ids, state, search)`; see the class docstring."""
        raise NotImplementedError(f"{type(self).__name__} must implement `initialize`.")

    def step(
        self,
        step: tf.Tensor,
        log_probs: tf.Tensor,
        state: Any,
        attention: tf.Tensor,
        search: dict[str, tf.Tensor],
    ) -> tuple[tf.Tensor, Any, dict[str, tf.Tensor], tf.Tensor]:
        """One step: `(token_ids, state, search, attention)`; see the class docstring."""
        raise NotImplementedError(f"{type(self).__name__} must implement `step`.")

    def finalize(
        self, steps: tf.Tensor, search: dict[str, tf.Tensor], attention: tf.Tensor
    ) -> DecodeResult:
        """The `DecodeResult` of the finished loop; see the class docstring."""
        raise NotImplementedError(f"{type(self).__name__} must implement `finalize`.")

    def get_config(self) -> dict[str, Any]:
        config = {"max_steps": self.max_steps, "end_id": self.end_id, "pad_id": self.pad_id}
        if self.drop_finished:  # only a strategy that takes the argument sets it
            config["drop_finished"] = True
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> DecodingStrategy:
        # A config saved before the rename holds `max_length`; a subclass written before
        # it may still take only `max_length` (its old keyword, which warns).
        config = with_max_steps(config, warn=False)
        parameters = inspect.signature(cls.__init__).parameters
        if "max_steps" not in parameters and "max_length" in parameters:
            config["max_length"] = config.pop("max_steps")
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{key}={value!r}" for key, value in self.get_config().items())
        return f"{type(self).__name__}({args})"
