"""`RandomSampling`: draw each token from the model's (tempered, top-k, top-p) distribution."""

from __future__ import annotations

import math
import numbers
from typing import Any

import keras
import tensorflow as tf

from keras_attention.decoding.decoding_strategy import check_int
from keras_attention.decoding.greedy_search import GreedySearch
from keras_attention.decoding.renamed_options import accepts_old_max_steps
from keras_attention.decoding_defaults import DEFAULT_MAX_OUTPUT_LENGTH
from keras_attention_client.wire.decoding_options import DEFAULT_TEMPERATURE

_MAX_SEED = 2**31 - 1


@keras.saving.register_keras_serializable(package="keras_attention")
class RandomSampling(GreedySearch):
    """Random sampling with a temperature and optional top-k and top-p (nucleus) cuts.

    Greedy search with one change: the token of each step is drawn at random
    instead of taken as the argmax (as keras-hub's `RandomSampler` /
    `TopKSampler` and OpenNMT-tf's `RandomSampler` do). Everything else — the
    end token, padding, scores, lengths and attention — is `GreedySearch`'s,
    in `DecodingStrategy`'s one `tf.while_loop`.

    At step `t` (0-based), for every sentence:

    1. `log_probs = log_softmax(logits)` in float32.
    2. The sampling logits are `log_probs / temperature`; with `top_k`, only
       the `top_k` most probable ids stay candidates (ties go to the lowest
       id); with `top_p < 1`, only the most probable candidates whose
       probabilities (after the temperature and the top-k cut) sum to at
       least `top_p`: a candidate stays when the mass of the ones ranked
       above it is below `top_p`, so the first one always stays (Holtzman
       et al., 2020).
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
        top_p: float in `(0, 1]` or `None` (no cut), the nucleus mass.
            Defaults to `None`.
        seed: int in `[0, 2**31 - 1]` or `None`. Defaults to `None`.
        max_steps: int >= 1, the most decoding steps (counting the step that
            emits the end token). Defaults to 50.
        end_id: int >= 0, the id that ends a sentence. Defaults to 3.
        pad_id: int >= 0, the id written after a sentence has ended. Defaults
            to 0.

    Call arguments:
        next_fn, initial_state, start_ids: as for `GreedySearch`.
        **options: `temperature`, `top_k`, `top_p`, `seed` and `max_steps`
            for this call only (`call_options`), e.g. one seed per batch. As
            scalar tensors, `top_k = 0` means the whole vocabulary, `top_p =
            1` no cut and `seed < 0` a seed drawn at this call.

    Returns:
        A `DecodeResult`, as for `GreedySearch`.

    Example:

    >>> # After the start token (0): id 2 with p=0.6, id 4 with p=0.3, end 0.1;
    >>> # after 2 or 4 the end token (3) is certain.
    >>> table = tf.math.log([[0.0, 0.0, 0.6, 0.1, 0.3]] + [[0.0, 0.0, 0.0, 1.0, 0.0]] * 4)
    >>> def next_fn(step, token_ids, state):
    ...     return tf.gather(table, token_ids), state, None
    >>> sampler = RandomSampling(seed=7, max_steps=4)
    >>> first = sampler(next_fn, (), tf.zeros([1000], tf.int32)).tokens[:, 0].numpy()
    >>> sorted(set(first.tolist()))  # end (3) is padded to 0
    [0, 2, 4]
    >>> bool(abs((first == 2).mean() - 0.6) < 0.05)
    True
    >>> greedy = RandomSampling(top_k=1, max_steps=4)(next_fn, (), tf.zeros([5], tf.int32))
    >>> greedy.tokens[:, 0].numpy().tolist()
    [2, 2, 2, 2, 2]
    """

    call_options = ("max_steps", "temperature", "top_k", "top_p", "seed")

    @accepts_old_max_steps
    def __init__(
        self,
        temperature: float = DEFAULT_TEMPERATURE,
        top_k: int | None = None,
        seed: int | None = None,
        max_steps: int = DEFAULT_MAX_OUTPUT_LENGTH,
        end_id: int = 3,
        pad_id: int = 0,
        top_p: float | None = None,
    ):
        super().__init__(max_steps=max_steps, end_id=end_id, pad_id=pad_id)
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
        if top_p is not None and (
            not isinstance(top_p, numbers.Real) or isinstance(top_p, bool) or not 0 < top_p <= 1
        ):
            raise ValueError(f"`top_p` must be a number in (0, 1]. Received: top_p={top_p!r}")
        self.top_p = None if top_p is None else float(top_p)
        if seed is not None:
            seed = check_int("seed", seed, minimum=0)
            if seed > _MAX_SEED:
                raise ValueError(f"`seed` must be <= {_MAX_SEED}. Received: seed={seed}")
        self.seed = seed

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update({"temperature": self.temperature, "top_k": self.top_k, "seed": self.seed})
        if self.top_p is not None:
            config["top_p"] = self.top_p
        return config

    def initialize(self, initial_state, start_ids):
        token_ids, state, search = super().initialize(initial_state, start_ids)
        seed = self.seed
        if seed is None:
            # Stateful on purpose: a new draw at every call, eager or in a graph.
            seed = tf.random.uniform([], maxval=_MAX_SEED, dtype=tf.int32)
        elif tf.is_tensor(seed):
            if seed.shape.rank not in (None, 0):
                raise ValueError(f"`seed` must be a scalar. Received: seed.shape={seed.shape}")
            seed = tf.cast(seed, tf.int32)
            # A negative tensor seed asks for a fresh draw, as `None` does.
            seed = tf.where(seed < 0, tf.random.uniform([], maxval=_MAX_SEED, dtype=tf.int32), seed)
        # int32: XLA compiles StatelessMultinomial only with an int32 seed.
        search["seed"] = tf.cast(tf.convert_to_tensor(seed), tf.int32)
        return token_ids, state, search

    def select(self, step, log_probs, search):
        logits = log_probs / self.temperature
        step_seed = tf.stack([search["seed"], step])

        def whole_vocabulary():
            return tf.random.stateless_categorical(logits, 1, step_seed, dtype=tf.int32)[:, 0]

        def candidates():
            return self._sample_candidates(logits, step_seed)

        top_k, top_p = self.top_k, self.top_p
        if not tf.is_tensor(top_k) and not tf.is_tensor(top_p):
            if top_k is None and (top_p is None or top_p >= 1):
                return whole_vocabulary()
            return candidates()
        no_cut = tf.logical_and(
            tf.constant(True) if top_k is None else tf.less_equal(top_k, 0),
            tf.constant(True) if top_p is None else tf.greater_equal(top_p, 1.0),
        )
        return tf.cond(no_cut, whole_vocabulary, candidates)

    def _sample_candidates(self, logits, step_seed):
        """A draw among the top-k, then top-p, candidates of `logits` `(batch, vocab)`."""
        top_k, top_p = self.top_k, self.top_p
        vocab_size = logits.shape[-1] if logits.shape[-1] is not None else tf.shape(logits)[-1]
        if top_k is None:
            k = vocab_size
        elif tf.is_tensor(top_k):
            top_k = tf.cast(top_k, tf.int32)
            k = tf.where(top_k > 0, tf.minimum(top_k, vocab_size), vocab_size)
        else:
            k = (
                min(top_k, vocab_size)
                if isinstance(vocab_size, int)
                else tf.minimum(top_k, vocab_size)
            )
        top_logits, top_ids = tf.math.top_k(logits, k=k)
        if top_p is not None and (tf.is_tensor(top_p) or top_p < 1):
            # top_logits are sorted, so the mass above each candidate is an exclusive cumsum.
            above = tf.math.cumsum(tf.nn.softmax(top_logits), axis=-1, exclusive=True)
            keep = above < top_p
            if tf.is_tensor(top_p):
                keep = tf.logical_or(
                    keep, top_p >= 1.0
                )  # top_p = 1 keeps all, whatever the rounding
            top_logits = tf.where(keep, top_logits, tf.constant(-math.inf, top_logits.dtype))
        choice = tf.random.stateless_categorical(top_logits, 1, step_seed, dtype=tf.int32)
        return tf.gather(top_ids, choice[:, 0], batch_dims=1)
