"""`RandomSampling`: draw each token from the model's (tempered, top-k) distribution."""

from __future__ import annotations

import math
import numbers
from typing import Any

import keras
import tensorflow as tf

from keras_attention.decoding.decoding_strategy import check_int
from keras_attention.decoding.greedy_search import GreedySearch

_MAX_SEED = 2**31 - 1


@keras.saving.register_keras_serializable(package="keras_attention")
class RandomSampling(GreedySearch):
    """Random sampling with a temperature and an optional top-k cut.

    Greedy search with one change: the token of each step is drawn at random
    instead of taken as the argmax (as keras-hub's `RandomSampler` /
    `TopKSampler` and OpenNMT-tf's `RandomSampler` do). Everything else — the
    end token, padding, scores, lengths and attention — is `GreedySearch`'s,
    in `DecodingStrategy`'s one `tf.while_loop`.

    At step `t` (0-based), for every sentence:

    1. `log_probs = log_softmax(logits)` in float32.
    2. The sampling logits are `log_probs / temperature`; with `top_k`, only
       the `top_k` most probable ids stay candidates (ties go to the lowest
       id).
    3. A token is drawn from `softmax` of those logits with
       `tf.random.stateless_categorical`, seeded by `(seed, t)`.
    4. `score += log_probs[token]`: the score is the model's own
       log-probability of the sampled translation (untempered), as for the
       other strategies.

    `top_k=1` (or a temperature near 0) is greedy search. With a `seed` the
    output is deterministic for the same inputs in the same batch (a row's
    draw depends on its position in the batch); without one, a seed is drawn
    with `tf.random.uniform` at every call (also inside an exported
    SavedModel), which follows TensorFlow's global seed if one is set. The ops are core
    TensorFlow, so it runs eagerly, in `tf.function`, with `jit_compile=True`
    and in a SavedModel.

    Args:
        temperature: float > 0. Below 1 sharpens the distribution, above 1
            flattens it. Defaults to 1.0.
        top_k: int >= 1 or `None` (the whole vocabulary), the number of most
            probable ids to sample from. Defaults to `None`.
        seed: int in `[0, 2**31 - 1]` or `None`. Defaults to `None`.
        max_length: int >= 1, the most decoding steps (counting the step that
            emits the end token). Defaults to 50.
        end_id: int >= 0, the id that ends a sentence. Defaults to 3.
        pad_id: int >= 0, the id written after a sentence has ended. Defaults
            to 0.

    Call arguments:
        next_fn, initial_state, start_ids: as for `GreedySearch`.
        seed: optional scalar int tensor (or int) that replaces the
            constructor's `seed` for this call, e.g. one per batch.

    Returns:
        A `DecodeResult`, as for `GreedySearch`.

    Example:

    >>> # After the start token (0): id 2 with p=0.6, id 4 with p=0.3, end 0.1;
    >>> # after 2 or 4 the end token (3) is certain.
    >>> table = tf.math.log([[0.0, 0.0, 0.6, 0.1, 0.3]] + [[0.0, 0.0, 0.0, 1.0, 0.0]] * 4)
    >>> def next_fn(step, token_ids, state):
    ...     return tf.gather(table, token_ids), state, None
    >>> sampler = RandomSampling(seed=7, max_length=4)
    >>> first = sampler(next_fn, (), tf.zeros([1000], tf.int32)).tokens[:, 0].numpy()
    >>> sorted(set(first.tolist()))  # end (3) is padded to 0
    [0, 2, 4]
    >>> bool(abs((first == 2).mean() - 0.6) < 0.05)
    True
    >>> greedy = RandomSampling(top_k=1, max_length=4)(next_fn, (), tf.zeros([5], tf.int32))
    >>> greedy.tokens[:, 0].numpy().tolist()
    [2, 2, 2, 2, 2]
    """

    def __init__(
        self,
        temperature: float = 1.0,
        top_k: int | None = None,
        seed: int | None = None,
        max_length: int = 50,
        end_id: int = 3,
        pad_id: int = 0,
    ):
        super().__init__(max_length=max_length, end_id=end_id, pad_id=pad_id)
        if (
            not isinstance(temperature, numbers.Real)
            or isinstance(temperature, bool)
            or not math.isfinite(temperature)
            or temperature <= 0
        ):
            raise ValueError(
                f"`temperature` must be a finite number > 0. Received: temperature={temperature!r}"
            )
        self.temperature = float(temperature)
        self.top_k = None if top_k is None else check_int("top_k", top_k, minimum=1)
        if seed is not None:
            seed = check_int("seed", seed, minimum=0)
            if seed > _MAX_SEED:
                raise ValueError(f"`seed` must be <= {_MAX_SEED}. Received: seed={seed}")
        self.seed = seed

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update({"temperature": self.temperature, "top_k": self.top_k, "seed": self.seed})
        return config

    def initialize(self, initial_state, start_ids, seed=None):
        token_ids, state, search = super().initialize(initial_state, start_ids)
        if seed is None:
            seed = self.seed
        if seed is None:
            # Stateful on purpose: a new draw at every call, eager or in a graph.
            seed = tf.random.uniform([], maxval=_MAX_SEED, dtype=tf.int32)
        # int32: XLA compiles StatelessMultinomial only with an int32 seed.
        search["seed"] = tf.cast(tf.convert_to_tensor(seed), tf.int32)
        if search["seed"].shape.rank != 0:
            raise ValueError(f"`seed` must be a scalar. Received: seed.shape={seed.shape}")
        return token_ids, state, search

    def select(self, step, log_probs, search):
        logits = log_probs / self.temperature
        step_seed = tf.stack([search["seed"], step])
        if self.top_k is None:
            return tf.random.stateless_categorical(logits, 1, step_seed, dtype=tf.int32)[:, 0]
        top_k = self.top_k
        if logits.shape[-1] is not None:
            top_k = min(top_k, logits.shape[-1])
        top_logits, top_ids = tf.math.top_k(logits, k=top_k)
        choice = tf.random.stateless_categorical(top_logits, 1, step_seed, dtype=tf.int32)
        return tf.gather(top_ids, choice[:, 0], batch_dims=1)
