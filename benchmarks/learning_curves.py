"""Validation loss every N steps for model variants on the bundled corpus: a quick signal.

Each variant is `ATTENTION[:KEY=VALUE...]` with any `Seq2Seq` argument, e.g.
`bahdanau`, `bahdanau:deep_output=tanh`, `luong:score=general`, `none`. Every variant
gets the same data order, seed and steps; the script prints the validation loss after
every `--every` steps, the final token accuracy and the mean relative entropy of the
attention weights on the validation batch (1.0 = uniform over the source, 0 = one-hot),
which shows whether the attention learned anything at all.

    python benchmarks/learning_curves.py bahdanau bahdanau:deep_output=tanh none --steps 600
"""

from __future__ import annotations

import argparse

import harness


def parse_variant(spec: str) -> dict:
    """`"luong:score=general:tie_embeddings=false"` -> model settings (`TrainConfig`
    fields, or other `Seq2Seq` arguments such as `deep_output`)."""
    attention, *options = spec.split(":")
    kwargs: dict = {"attention": attention}
    for option in options:
        key, separator, value = option.partition("=")
        if not separator:
            raise ValueError(f"Expected KEY=VALUE in {spec!r}. Received: {option!r}")
        if value.lower() in ("true", "false"):
            kwargs[key] = value.lower() == "true"
        elif value.isdigit():
            kwargs[key] = int(value)
        else:
            kwargs[key] = value
    return kwargs


def main(argv: list[str] | None = None) -> dict[str, list[float]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("variants", nargs="+", metavar="VARIANT")
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--every", type=int, default=150)
    parser.add_argument("--embedding-dim", type=int, default=128)
    parser.add_argument("--encoder-units", type=int, default=128)
    parser.add_argument("--decoder-units", type=int, default=256)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--max-pairs", type=int, default=60000)
    parser.add_argument("--tie-embeddings", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--precision", default="float32")
    parser.add_argument("--dropout", type=float, default=0.1)
    args = parser.parse_args(argv)
    harness.print_machine_header()
    harness.quiet_tensorflow()

    import keras
    import tensorflow as tf

    from keras_attention import Seq2Seq
    from keras_attention.data import DatasetOptions, load_corpus, make_dataset, split_corpus
    from keras_attention.text import TextVectorizer, build_vocabulary
    from keras_attention.training import MaskedAccuracy, MaskedSparseCategoricalCrossentropy

    variants = {spec: parse_variant(spec) for spec in args.variants}
    splits = split_corpus(load_corpus(None).pairs, seed=0, max_pairs=args.max_pairs)
    source = TextVectorizer(build_vocabulary((s for s, _ in splits.train), 8000), max_length=30)
    target = TextVectorizer(build_vocabulary((t for _, t in splits.train), 10000), max_length=30)
    train = make_dataset(
        splits.train,
        source,
        target,
        DatasetOptions(batch_size=64, shuffle=True, seed=0, max_length=30),
    ).repeat()
    validation = make_dataset(
        splits.validation[:1000],
        source,
        target,
        DatasetOptions(batch_size=100, shuffle=False, max_length=30),
    ).cache()
    curves = {}
    for spec, kwargs in variants.items():
        keras.utils.set_random_seed(0)
        arguments = harness.seq2seq_arguments(
            embedding_dim=args.embedding_dim,
            encoder_units=args.encoder_units,
            decoder_units=args.decoder_units,
            tie_embeddings=args.tie_embeddings,
            dropout=args.dropout,
            max_length=30,
            precision=args.precision,
            **kwargs,
        )
        model = Seq2Seq(source.vocabulary_size, target.vocabulary_size, **arguments)
        model.compile(
            optimizer=keras.optimizers.Adam(args.learning_rate, global_clipnorm=5.0),
            loss=MaskedSparseCategoricalCrossentropy(),
            metrics=[MaskedAccuracy()],
        )
        with harness.Stopwatch() as watch:
            history = model.fit(
                train,
                validation_data=validation,
                epochs=args.steps // args.every,
                steps_per_epoch=args.every,
                verbose=0,
            )
        (source_ids, target_in), _ = next(iter(validation))
        _, attention = model.call_with_attention((source_ids, target_in))
        real_steps = tf.cast(tf.not_equal(target_in, 0), tf.float32)
        entropy = -tf.reduce_sum(attention * tf.math.log(attention + 1e-9), -1)
        source_length = tf.reduce_sum(tf.cast(tf.not_equal(source_ids, 0), tf.float32), -1)
        relative = entropy / tf.math.log(tf.maximum(source_length, 2.0))[:, None]
        relative = float(tf.reduce_sum(relative * real_steps) / tf.reduce_sum(real_steps))
        curves[spec] = history.history["val_loss"]
        print(
            f"{spec:40s} val loss {' '.join(f'{x:.2f}' for x in curves[spec])}  "
            f"accuracy {history.history['val_masked_accuracy'][-1]:.3f}  "
            f"attention entropy {relative:.2f}  {watch.seconds / args.steps * 1000:.0f} ms/step",
            flush=True,
        )
    return curves


if __name__ == "__main__":
    main()
