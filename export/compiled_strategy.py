"""`CompiledStrategy`: a decoding strategy run with XLA inside an export."""

from __future__ import annotations

import copy
from typing import Any

import tensorflow as tf


class CompiledStrategy:
    """Runs a decoding strategy with XLA.

    Without per-call options, `strategy(next_fn, state, start_ids)` becomes
    one `tf.function(jit_compile=True)`: the whole `tf.while_loop` is one XLA
    cluster. With options fed as tensors (a signature's decoding inputs) the
    loop's shapes depend on them (the beam axis, `top_k`), which XLA cannot
    compile, so only the model's step (`next_fn`) is compiled and the loop
    runs it. The text processing around it (tf-text, lookups, string ops)
    stays outside, since XLA cannot compile string ops. In a SavedModel the
    compiled functions are calls marked `_XlaMustCompile`, which TensorFlow
    Serving on CPU runs only with `--xla_cpu_compilation_enabled=true`.

    Args:
        strategy: a `GreedySearch`, `BeamSearch` or `RandomSampling`.
    """

    def __init__(self, strategy):
        self.strategy = strategy

    def __call__(self, next_fn, initial_state, start_ids, **options):
        if options:
            step = tf.function(next_fn, jit_compile=True, autograph=False)
            # Every row stays: a batch that shrinks would compile the step again
            # for each of its sizes.
            strategy = copy.copy(self.strategy)
            strategy.drop_finished = False
            return strategy(step, initial_state, start_ids, **options)
        decode = tf.function(
            lambda state, ids: self.strategy(next_fn, state, ids),
            jit_compile=True,
            autograph=False,
        )
        return decode(initial_state, start_ids)

    def get_config(self) -> dict[str, Any]:
        return self.strategy.get_config()
