"""A score function of your own inside the translator: define, train, save, reload, export.

`WeightedDistanceAttention` is a new score, written as a `BaseAttention` subclass
that only defines the score (masking, softmax, the weighted sum and dropout come
from the base):

    score(s, h_i) = -sum_k w_k (s_k - h_ik)^2 / sqrt(d)

with a learned weight `w_k >= 0` per dimension (softplus of a variable, starting
at 1). Registered with Keras, it goes into `Seq2Seq(attention=...)` with either
decoder family, trains with plain `model.fit` on the bundled corpus, saves to and
reloads from a `.keras` file, and exports for TensorFlow Serving (checked on the
C API loader TF Serving uses, as `keras-attention check-export --native` does).

    python examples/custom_attention.py --pairs 20000 --steps 1500 --out runs/custom
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import keras
import numpy as np
from keras import ops

from keras_attention.layers import BaseAttention


@keras.saving.register_keras_serializable(package="custom_attention_example")
class WeightedDistanceAttention(BaseAttention):
    """`score(s, h_i) = -sum_k w_k (s_k - h_ik)^2 / sqrt(d)`, `w = softplus(v)`.

    Needs `dq == dv` (the query is compared with the values directly).
    """

    def build(self, query_shape, values_shape):
        self._check_matching_dims(query_shape, values_shape, "WeightedDistanceAttention")
        super().build(query_shape, values_shape)
        # softplus(0.5413) = 1.0: every dimension starts with weight 1.
        self.dimension_weights = self.add_weight(
            name="dimension_weights",
            shape=(values_shape[-1],),
            initializer=keras.initializers.Constant(0.5413),
        )

    def _score(self, query, keys):
        weights = ops.softplus(self._cast(self.dimension_weights))
        # (batch, Tq, 1, d) - (batch, 1, Tv, d) -> (batch, Tq, Tv, d)
        difference = ops.expand_dims(query, 2) - ops.expand_dims(keys, 1)
        distance = ops.sum(weights * difference * difference, axis=-1)
        return -distance / math.sqrt(keys.shape[-1])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs/custom-attention", help="output directory")
    parser.add_argument("--pairs", type=int, default=20000, help="sentence pairs to use")
    parser.add_argument("--steps", type=int, default=1500, help="training steps")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--embedding-dim", type=int, default=128)
    parser.add_argument("--encoder-units", type=int, default=128)
    parser.add_argument(
        "--decoder", choices=("luong", "bahdanau"), default="luong", help="decoder family"
    )
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    """Trains, saves, reloads and exports; returns the figures the test checks."""
    args = parse_args(argv)
    from keras_attention.data import DatasetOptions, load_corpus, make_dataset, split_corpus
    from keras_attention.export import ExportChecker, TranslatorExporter
    from keras_attention.inference.translator import Translator
    from keras_attention.models import Seq2Seq
    from keras_attention.text import TextVectorizer, build_vocabulary
    from keras_attention.training import MaskedSparseCategoricalCrossentropy

    keras.utils.set_random_seed(args.seed)
    out = Path(args.out)
    splits = split_corpus(load_corpus(None).pairs, seed=args.seed, max_pairs=args.pairs)
    source = TextVectorizer(build_vocabulary((s for s, _ in splits.train), 4000), max_length=20)
    target = TextVectorizer(build_vocabulary((t for _, t in splits.train), 4000), max_length=20)
    train = make_dataset(
        splits.train,
        source,
        target,
        DatasetOptions(batch_size=args.batch_size, seed=args.seed, max_length=20),
    ).repeat()

    model = Seq2Seq(
        source.vocabulary_size,
        target.vocabulary_size,
        embedding_dim=args.embedding_dim,
        encoder_units=args.encoder_units,
        decoder_units=2 * args.encoder_units,  # dq == dv: the bidirectional annotations
        attention=WeightedDistanceAttention(name="attention"),
        decoder=args.decoder,
        tie_embeddings=True,
    )
    model.compile(
        optimizer=keras.optimizers.Adam(2e-3, global_clipnorm=5.0),
        loss=MaskedSparseCategoricalCrossentropy(),
    )
    history = model.fit(train, steps_per_epoch=max(1, args.steps // 2), epochs=2, verbose=2)

    out.mkdir(parents=True, exist_ok=True)
    path = out / "model.keras"
    model.save(path)
    reloaded = keras.saving.load_model(path)
    batch = next(iter(train.take(1)))[0]
    original_logits = keras.ops.convert_to_numpy(model(batch))
    reloaded_logits = keras.ops.convert_to_numpy(reloaded(batch))

    translator = Translator(reloaded, source, target, max_output_length=20)
    exported = TranslatorExporter(translator, beam_width=2).export(out / "export")
    report = ExportChecker(native=True).check(exported.path)
    print(report.format())
    sentences = ["I am hungry.", "Where is the station?"]
    translations = [r.text for r in translator.translate_all(sentences)]
    for sentence, translation in zip(sentences, translations, strict=True):
        print(f"{sentence} -> {translation}")
    return {
        "losses": [float(loss) for loss in history.history["loss"]],
        "reloaded_attention": type(reloaded.decoder.attention_layer).__name__,
        "reload_difference": float(np.abs(original_logits - reloaded_logits).max()),
        "export_path": str(exported.path),
        "export_ok": report.ok,
        "translations": translations,
    }


if __name__ == "__main__":
    main()
