"""Time one decoder step of attention: keys prepared once vs. re-projected every step.

In step-wise decoding the values (encoder outputs) do not change between steps, so the
key projection `W_k h` can be computed once per sequence (`layer.prepare_keys(values)`)
and each step reduces to the query projection and the score. The common tutorial
pattern applies `W_k` inside the step, re-projecting all `Tv` keys at every step.

Every variant runs inside its own `tf.function`; the table gives the median time per
call (milliseconds) over several repeats, at batch 64 and 256 units by default:

- `prepared`: `BahdanauAttention(query, values, mask=mask, keys=keys)`, keys computed once.
- `reprojected`: the same layer with `keys=None`, so `W_k h` is recomputed each step.
- `tutorial`: the TensorFlow NMT tutorial's `Dense` W1, W2, V pattern (re-projects too).
- `keras_additive`: `keras.layers.AdditiveAttention` on the same shapes (no projections).
- `luong_dot` / `keras_dot`: `LuongAttention("dot")` vs `keras.layers.Attention`.
- `luong_general`: `LuongAttention("general")` with prepared keys (`h W_a^T`).

    python benchmarks/attention_step.py
    python benchmarks/attention_step.py --lengths 16 64 --repeats 3
"""

import argparse
import statistics
from collections.abc import Callable

import harness

harness.quiet_tensorflow()

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_attention.layers import BahdanauAttention, LuongAttention  # noqa: E402


class TutorialBahdanau(keras.layers.Layer):
    """The tutorial pattern: all three projections applied inside every step."""

    def __init__(self, units: int, **kwargs):
        super().__init__(**kwargs)
        self.w1 = keras.layers.Dense(units)
        self.w2 = keras.layers.Dense(units)
        self.v = keras.layers.Dense(1)

    def call(self, query, values, mask):
        # (batch, 1, units) + (batch, Tv, units) -> scores (batch, Tv, 1)
        score = self.v(tf.tanh(self.w1(query[:, None, :]) + self.w2(values)))
        score = tf.where(mask[:, :, None], score, -1e9)
        weights = tf.nn.softmax(score, axis=1)
        return tf.reduce_sum(weights * values, axis=1), weights[..., 0]


def time_per_call(fn: Callable[[], object], repeats: int, min_seconds: float) -> float:
    """Median seconds per call over `repeats` timed batches of calls (after warm-up)."""
    single = max(harness.time_calls(fn, 1)[0], 1e-6)  # the warm-up call traces
    calls = max(3, int(min_seconds / single))

    def batch_of_calls():
        for _ in range(calls):
            result = fn()
        tf.nest.map_structure(lambda t: t.numpy(), result)  # make sure the work is done

    return statistics.median(harness.time_calls(batch_of_calls, repeats, warmup=0)) / calls


def bench_length(args: argparse.Namespace, length: int, rng: np.random.Generator) -> dict:
    batch, dim = args.batch, args.dim
    query = tf.constant(rng.normal(size=(batch, dim)), tf.float32)
    values = tf.constant(rng.normal(size=(batch, length, dim)), tf.float32)
    lengths = rng.integers(length // 2, length + 1, size=batch)
    mask = tf.constant(np.arange(length)[None, :] < lengths[:, None])

    bahdanau = BahdanauAttention(args.units)
    bahdanau(query, values, mask=mask)
    keys = bahdanau.prepare_keys(values)
    tutorial = TutorialBahdanau(args.units)
    tutorial(query, values, mask)
    additive = keras.layers.AdditiveAttention()
    dot = LuongAttention("dot")
    general = LuongAttention("general")
    general(query, values)
    general_keys = general.prepare_keys(values)
    keras_dot = keras.layers.Attention()
    query3 = query[:, None, :]

    steps = {
        "prepared": tf.function(lambda: bahdanau(query, values, mask=mask, keys=keys)),
        "reprojected": tf.function(lambda: bahdanau(query, values, mask=mask)),
        "tutorial": tf.function(lambda: tutorial(query, values, mask)),
        "keras_additive": tf.function(
            lambda: additive([query3, values], mask=[None, mask], return_attention_scores=True)
        ),
        "luong_dot": tf.function(lambda: dot(query, values, mask=mask)),
        "keras_dot": tf.function(
            lambda: keras_dot([query3, values], mask=[None, mask], return_attention_scores=True)
        ),
        "luong_general": tf.function(lambda: general(query, values, mask=mask, keys=general_keys)),
    }
    # Sanity: the prepared and re-projected steps compute the same thing.
    np.testing.assert_allclose(
        steps["prepared"]()[0].numpy(), steps["reprojected"]()[0].numpy(), rtol=1e-4, atol=1e-5
    )
    return {
        name: time_per_call(fn, args.repeats, args.min_seconds) * 1e3 for name, fn in steps.items()
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[16, 64, 256], help="Tv")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--dim", type=int, default=256, help="query and values dimension")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--min-seconds", type=float, default=0.25, help="per timed batch")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[int, dict[str, float]]:
    args = parse_args(argv)
    harness.print_machine_header()
    keras.utils.set_random_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    print(f"devices: {[d.device_type for d in tf.config.list_logical_devices()]}")
    print(
        f"batch {args.batch}, units {args.units}, query/values dim {args.dim}; "
        f"median ms per call of {args.repeats} repeats (shared machine: noisy)"
    )
    results = {length: bench_length(args, length, rng) for length in args.lengths}
    names = list(next(iter(results.values())))
    header = f"{'Tv':>5} " + " ".join(f"{name:>14}" for name in names) + f" {'reproj/prep':>12}"
    print(header)
    print("-" * len(header))
    for length, times in results.items():
        ratio = times["reprojected"] / times["prepared"]
        row = " ".join(f"{times[name]:14.3f}" for name in names)
        print(f"{length:>5} {row} {ratio:11.2f}x")
    return results


if __name__ == "__main__":
    main()
