"""The training step with fused GRUs against Keras' GRU path, in one process.

`Seq2Seq` runs its encoder's GRUs, and the GRU of Luong's decoder without input
feeding, through `keras_attention.models.fused_gru.gru_sequence` (the input
projection before the loop, the backward pass written out). This script trains
two copies of the default model (`TrainConfig()`'s sizes, attention and
training step) from the same weights on the same batches: one as the library
runs it, one with the recurrences swapped back to what ran before
(`keras.layers.Bidirectional(GRU)` called on the masked sequence, and the
decoder's step loop over `GRUCell` weights). The batches have the lengths of
bucketed training data (6-24 source tokens, 4-25 % padding), every shape is
traced first, then the two models take turns (`--rounds` of 24 steps each).
It prints the median and mean step time of each and their ratio:

    python benchmarks/fused_gru_step.py [--precision mixed_bfloat16] [--rounds 6]
"""

from __future__ import annotations

import argparse

import harness

LENGTHS = (6, 8, 10, 12, 14, 18, 24)  # source tokens per batch; targets 2 longer


def varied_batches(batch_size, vocabulary, seed=0, count=24):
    """`count` batches of random ids with the lengths of bucketed data, padded with 0."""
    import numpy as np

    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(count):
        source_length = int(rng.choice(LENGTHS))
        target_length = source_length + 2
        source = rng.integers(4, vocabulary, (batch_size, source_length)).astype("int32")
        target = rng.integers(4, vocabulary, (batch_size, target_length + 1)).astype("int32")
        for row in range(batch_size):
            source[row, rng.integers(source_length * 3 // 4, source_length + 1) :] = 0
            target[row, rng.integers(target_length * 3 // 4, target_length + 2) :] = 0
        batches.append(((source, target[:, :-1]), target[:, 1:]))
    return batches


def use_keras_gru_path(model):
    """Swap `model`'s recurrences back to Keras' GRU layers (the encoder's
    inference path, in training too) and the decoder's step loop."""
    encoder = model.encoder
    encoder._run_gru = lambda rnn, x, mask: encoder._run_keras_rnn(rnn, x, mask, training=True)
    model.decoder.__class__ = type(
        "StepLoopDecoder",
        (type(model.decoder),),
        {"_recurrence_is_a_gru": property(lambda self: False)},
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--precision", default="mixed_bfloat16")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args(argv)
    harness.print_machine_header()
    harness.quiet_tensorflow()

    import keras
    import numpy as np
    import tensorflow as tf

    from keras_attention.runs import TrainConfig
    from keras_attention.training.trainer import build_model

    # The default run's sizes: `auto` picks subwords for the bundled corpus at the default
    # budget (None = their fixed sizes, 8,000 pieces a side).
    config = TrainConfig(
        precision=args.precision,
        tokenizer="subwords",
        source_vocabulary_size=None,
        target_vocabulary_size=None,
    )
    vocabulary = config.target_vocabulary_size
    batches = varied_batches(args.batch_size, vocabulary)

    def repeat():
        while True:
            yield from batches

    ids = tf.TensorSpec((args.batch_size, None), tf.int32)
    data = tf.data.Dataset.from_generator(repeat, output_signature=((ids, ids), ids))

    def make_model():
        keras.utils.set_random_seed(config.seed)
        return build_model(config, config.source_vocabulary_size, vocabulary)

    keras_path = make_model()
    use_keras_gru_path(keras_path)
    models = {"fused GRUs (the library)": make_model(), "Keras' GRU path (before)": keras_path}

    for model in models.values():  # trace every batch shape first
        model.fit(data, steps_per_epoch=2 * len(batches), epochs=1, verbose=0)
    times = {name: [] for name in models}
    for _ in range(args.rounds):
        for name, model in models.items():
            times[name] += harness.fit_step_seconds(model, data, len(batches))
    print(
        f"{args.precision}, batch {args.batch_size}, {args.rounds} rounds of {len(batches)} steps"
    )
    medians = {}
    for name, values in times.items():
        medians[name] = 1000 * float(np.median(values))
        print(f"  {name:<28} median {medians[name]:6.1f} ms, mean {1000 * np.mean(values):6.1f} ms")
    fused, before = medians.values()
    print(f"fused GRUs: {before / fused:.2f}x the step of Keras' GRU path ({args.precision})")
    return medians


if __name__ == "__main__":
    main()
