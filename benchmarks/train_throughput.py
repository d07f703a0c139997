"""Training throughput of Seq2Seq vs. the usual tutorial design, and greedy decode speed.

The tutorial design (as in the classic TensorFlow NMT-with-attention
tutorial): the decoder is called once per target step in a Python loop
(unrolled inside `tf.function`); at every step the attention re-projects the
encoder outputs (`W_k h`) and the output layer projects that step alone onto
the vocabulary. Our `Seq2Seq` projects the keys once per sentence
(`prepare_keys`), runs the recurrence in a `tf.while_loop`, and projects all
steps onto the vocabulary in one matmul after the loop.

Both models have the same sizes and train with `model.fit` on the same
synthetic batches, in this one process. Prints target tokens/second and the
ratio, then greedy decoding sentences/second at batch 1 and 64.

    python benchmarks/train_throughput.py [--steps 30] [--batch-size 64]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_attention.decoding import GreedySearch  # noqa: E402
from keras_attention.models.seq2seq import Seq2Seq  # noqa: E402
from keras_attention.training.masked_loss import MaskedSparseCategoricalCrossentropy  # noqa: E402


class TutorialAttention(keras.layers.Layer):
    """Bahdanau attention as tutorials write it: keys re-projected every call."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.w_query = keras.layers.Dense(units)
        self.w_keys = keras.layers.Dense(units)
        self.v = keras.layers.Dense(1)

    def call(self, query, values):
        scores = self.v(tf.tanh(self.w_query(query)[:, None, :] + self.w_keys(values)))
        weights = tf.nn.softmax(scores, axis=1)
        return tf.reduce_sum(weights * values, axis=1), weights


class TutorialSeq2Seq(keras.Model):
    """The tutorial design, same sizes as `Seq2Seq`'s Bahdanau model."""

    def __init__(self, source_size, target_size, embedding_dim, encoder_units, decoder_units):
        super().__init__()
        self.source_embedding = keras.layers.Embedding(source_size, embedding_dim)
        self.encoder = keras.layers.Bidirectional(
            keras.layers.GRU(encoder_units, return_sequences=True, return_state=True)
        )
        self.bridge = keras.layers.Dense(decoder_units, activation="tanh")
        self.target_embedding = keras.layers.Embedding(target_size, embedding_dim)
        self.attention = TutorialAttention(decoder_units)
        self.cell = keras.layers.GRUCell(decoder_units)
        self.readout = keras.layers.Dense(embedding_dim, activation="tanh")
        self.output_layer = keras.layers.Dense(target_size)

    def call(self, inputs):
        source, target_in = inputs
        annotations, forward, backward = self.encoder(
            self.source_embedding(source), mask=tf.not_equal(source, 0)
        )
        state = self.bridge(tf.concat([forward, backward], -1))
        outputs = []
        for t in range(target_in.shape[1]):  # a Python loop: unrolled in the graph
            embedded = self.target_embedding(target_in[:, t])
            context, _ = self.attention(state, annotations)
            state, _ = self.cell(tf.concat([embedded, context], -1), [state])
            features = self.readout(tf.concat([state, context, embedded], -1))
            outputs.append(self.output_layer(features))
        return tf.stack(outputs, axis=1)


def synthetic_batches(batch_size, source_length, target_length, source_size, target_size):
    rng = np.random.default_rng(0)
    n = batch_size * 16
    source = rng.integers(4, source_size, (n, source_length)).astype("int32")
    target = rng.integers(4, target_size, (n, target_length + 1)).astype("int32")
    data = tf.data.Dataset.from_tensor_slices(((source, target[:, :-1]), target[:, 1:]))
    return data.batch(batch_size, drop_remainder=True).cache().repeat()


def tokens_per_second(model, data, steps, batch_size, target_length):
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=MaskedSparseCategoricalCrossentropy())
    model.fit(data, steps_per_epoch=3, epochs=1, verbose=0)  # trace and warm up
    started = time.perf_counter()
    model.fit(data, steps_per_epoch=steps, epochs=1, verbose=0)
    return steps * batch_size * target_length / (time.perf_counter() - started)


def greedy_sentences_per_second(model, batch_size, source_length, max_length, repeats):
    search = GreedySearch(max_length=max_length, end_id=3)

    @tf.function
    def decode(source):
        state = model.initial_decode_state(source)
        start = tf.fill([tf.shape(source)[0]], 2)
        return search(model.next_logits, state, start)

    source = tf.constant(
        np.random.default_rng(1).integers(4, 1000, (batch_size, source_length)), tf.int32
    )
    decode(source)
    started = time.perf_counter()
    for _ in range(repeats):
        decode(source)
    return repeats * batch_size / (time.perf_counter() - started)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="timed training steps per model")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--source-length", type=int, default=10)
    parser.add_argument("--target-length", type=int, default=12)
    parser.add_argument("--source-vocabulary", type=int, default=12000)
    parser.add_argument("--target-vocabulary", type=int, default=16000)
    args = parser.parse_args(argv)
    sizes = dict(embedding_dim=256, encoder_units=256, decoder_units=512)
    data = synthetic_batches(
        args.batch_size,
        args.source_length,
        args.target_length,
        args.source_vocabulary,
        args.target_vocabulary,
    )
    print(
        f"batch {args.batch_size}, source {args.source_length} / target {args.target_length} "
        f"tokens, vocabularies {args.source_vocabulary} / {args.target_vocabulary}, {sizes}"
    )
    print(f"{'model':<44} {'params':>10} {'target tokens/s':>16} {'vs tutorial':>12}")
    rows = [
        ("tutorial design (per-step keys and output)", "float32", None),
        ("Seq2Seq bahdanau, untied output", "float32", dict(tie_embeddings=False)),
        ("Seq2Seq bahdanau, tied output", "float32", dict(tie_embeddings=True)),
        ("Seq2Seq bahdanau, tied, mixed_bfloat16", "mixed_bfloat16", dict(tie_embeddings=True)),
    ]
    baseline = None
    for name, dtype, options in rows:
        keras.utils.set_random_seed(0)
        if options is None:
            model = TutorialSeq2Seq(args.source_vocabulary, args.target_vocabulary, **sizes)
        else:
            model = Seq2Seq(
                args.source_vocabulary, args.target_vocabulary, dtype=dtype, **sizes, **options
            )
        speed = tokens_per_second(model, data, args.steps, args.batch_size, args.target_length)
        baseline = baseline or speed
        print(f"{name:<44} {model.count_params():>10,} {speed:>16,.0f} {speed / baseline:>11.2f}x")

    model = Seq2Seq(
        args.source_vocabulary,
        args.target_vocabulary,
        dtype="mixed_bfloat16",
        tie_embeddings=True,
        **sizes,
    )
    for batch_size, repeats in ((1, 20), (64, 5)):
        speed = greedy_sentences_per_second(model, batch_size, args.source_length, 20, repeats)
        print(f"greedy decode (20 steps), batch {batch_size:>2}: {speed:8.1f} sentences/s")


if __name__ == "__main__":
    main()
