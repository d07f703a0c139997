"""Decoding with the weights cast once per call against casting them at every step.

Under a mixed precision policy Keras layers cast their float32 variables to
the compute dtype at every call, so a decoding step that reads them casts the
embedding matrix and every kernel again. `Translator.step_function` casts them
once per call (`BaseDecoder.decoding_weights`); `Seq2Seq.next_logits`, called
at each step, still reads them itself. This script translates the same test
sources both ways, in one process, each way one `tf.function`, the two taking
turns over `--repeats` rounds (best kept):

- `per step`: the search's step function is `Translator.next_logits` (weights
  read and cast at every step, as decoding ran before 2026-12-02);
- `once`: `Translator.step_function(state)`, as `Translator.translate` and
  the exports run;

for greedy search and beam search (width 4) at each batch size, and checks
that both give the same tokens. Then, for a GRU encoder, the encoder's two
inference paths under the run's policy: Keras' GRU layers against
`gru_sequence` (`Encoder._fused_inference`), whole greedy translations.

    python benchmarks/decoding_weights.py --run-dir RUN [--batch-sizes 1,8,64] [--repeats 3]

The run should be trained in `mixed_bfloat16` (what `--precision auto` picks
on a CPU with native bfloat16); in float32 the casts cost nothing and the
ratios are about 1. The last line printed is
`decoding weights once: A.AAx greedy batch 1, B.BBx greedy batch N` (N the
largest batch size).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402


@contextlib.contextmanager
def encoder_path(fused: bool):
    """Within: `Encoder` inference runs `gru_sequence` (`fused`) or Keras' layers."""
    from keras_attention.models.encoder import Encoder

    saved = Encoder._fused_inference
    Encoder._fused_inference = property(lambda self: fused)
    try:
        yield
    finally:
        Encoder._fused_inference = saved


def translate_function(translator, strategy, per_step: bool):
    """A `tf.function` strings -> tokens, whose step reads the weights at every
    step (`per_step`: `Translator.next_logits`, which builds the step function
    inside the loop) or once per call (`Translator.step_function`)."""
    import tensorflow as tf

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def run(texts):
        source_ids, _ = translator.encode_source(texts)
        state = translator.model.initial_decode_state(source_ids)
        start = tf.fill([tf.shape(texts)[0]], translator.target_vectorizer.start_id)
        next_fn = translator.next_logits if per_step else translator.step_function(state)
        return strategy(next_fn, state, start).tokens

    return run


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    harness.add_race_arguments(parser, sentences=128, run_help="a trained run (mixed_bfloat16)")
    args = parser.parse_args(argv)
    batch_sizes, translator, sources = harness.race_setup(args)
    import numpy as np
    import tensorflow as tf

    from keras_attention.decoding import BeamSearch, GreedySearch

    end_id = translator.target_vectorizer.end_id
    strategies = {
        "greedy": GreedySearch(max_steps=translator.max_output_length, end_id=end_id),
        "beam 4": BeamSearch(4, max_steps=translator.max_output_length, end_id=end_id),
    }
    ratios = {}
    print("\nsentences/s | per step | once | once / per step | same tokens")
    for name, strategy in strategies.items():
        functions = {
            "per step": translate_function(translator, strategy, per_step=True),
            "once": translate_function(translator, strategy, per_step=False),
        }
        for batch_size in batch_sizes:
            batches = harness.source_batches(sources, batch_size, args.sentences)
            count = sum(len(b) for b in batches)
            outputs = {k: [f(b).numpy() for b in batches[:2]] for k, f in functions.items()}
            same = all(
                np.array_equal(a, b)
                for a, b in zip(outputs["per step"], outputs["once"], strict=True)
            )
            best = harness.race(functions, batches, args.repeats)
            ratio = best["per step"] / best["once"]
            ratios[name, batch_size] = ratio
            print(
                f"{name} batch {batch_size} | {count / best['per step']:.1f} | "
                f"{count / best['once']:.1f} | {ratio:.2f}x | {same}",
                flush=True,
            )

    if translator.model.encoder.cell == "gru":
        print("\nencoder (greedy, sentences/s) | Keras' layers | gru_sequence | ratio | same")
        functions = {}
        for label, fused in (("keras", False), ("fused", True)):
            with encoder_path(fused):
                function = translate_function(translator, strategies["greedy"], False)
                function(tf.constant(sources[:1]))  # traced with this path
            functions[label] = function
        for batch_size in batch_sizes:
            batches = harness.source_batches(sources, batch_size, args.sentences)
            count = sum(len(b) for b in batches)
            for function in functions.values():
                function(batches[0])
            same = np.mean(
                [
                    harness.same_rows(functions["keras"](b).numpy(), functions["fused"](b).numpy())
                    for b in batches
                ]
            )
            best = harness.race(functions, batches, args.repeats)
            print(
                f"batch {batch_size} | {count / best['keras']:.1f} | {count / best['fused']:.1f} "
                f"| {best['keras'] / best['fused']:.2f}x | {same:.1%}",
                flush=True,
            )
    largest = batch_sizes[-1]
    first = batch_sizes[0]
    print(
        f"\ndecoding weights once: {ratios['greedy', first]:.2f}x greedy batch {first}, "
        f"{ratios['greedy', largest]:.2f}x greedy batch {largest}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
