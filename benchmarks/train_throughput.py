"""Training throughput of Seq2Seq against the tutorial design and this machine's peak.

The tutorial design (as in the classic TensorFlow NMT-with-attention
tutorial): the decoder is called once per target step in a Python loop
(unrolled inside `tf.function`); at every step the attention re-projects the
encoder outputs (`W_k h`) and the output layer projects that step alone onto
the vocabulary. Our `Seq2Seq` projects the keys once per sentence
(`prepare_keys`), runs only the recurrence in a `tf.while_loop`, and applies
the output layers once to all steps after the loop.

Every model has the same sizes and trains with `model.fit` on the same
synthetic batches, in this one process; a row's figure is the median of the
per-batch times. For each row the script prints the FLOPs per target token
(counted from the layer shapes: matmuls of the forward pass times 3 for
training), target tokens/s, achieved GFLOP/s and the ratio to the tutorial
design in the same precision. It measures the bf16 and fp32 matmul peak
(2048x2048) in the same run, reports the padding fraction of real training
batches of the bundled corpus, greedy decoding speed, and ends with one line
for the default training configuration (`TrainConfig()`):

    default: X.XXx tutorial (bf16), Y.YYx tutorial (fp32), Z% of bf16 peak

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
from keras_attention.training import TrainConfig  # noqa: E402
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


def gru_flops(inputs, units):
    """Forward matmul FLOPs of one GRU step: input and recurrent kernels."""
    return 2 * (inputs * 3 * units + units * 3 * units)


def training_flops_per_target_token(kind, sizes, vocabulary, source_length, target_length):
    """Training FLOPs per target token from the layer shapes (3 x forward matmuls).

    `kind`: `"tutorial"`, or a `Seq2Seq` attention type (`"luong"` with
    scaled dot and input feeding, `"bahdanau"` with the maxout deep output),
    tied output for `Seq2Seq`. Elementwise ops, softmax and the optimizer are
    not counted.
    """
    e, u, d = sizes["embedding_dim"], sizes["encoder_units"], sizes["decoder_units"]
    dv = 2 * u  # bidirectional annotations
    per_source_token = 2 * gru_flops(e, u)  # both directions
    per_target = 0
    if kind == "luong":
        per_target += gru_flops(e + d, d)  # input feeding: [e; h~]
        per_target += 2 * 2 * source_length * dv  # scores and context
        per_target += 2 * (dv + d) * d  # h~ = tanh(W_c [c; s])
        per_target += 2 * d * e  # readout to the tied embedding size
        per_target += 2 * e * vocabulary
    else:
        units = d  # attention units
        per_target += 2 * d * units  # W_q s
        per_target += 2 * source_length * units  # v . tanh(...)
        per_target += 2 * source_length * dv  # context
        per_target += gru_flops(e + dv, d)
        if kind == "tutorial":
            per_target += 2 * source_length * dv * units  # keys re-projected every step
            per_target += 2 * (d + dv + e) * e + 2 * e * vocabulary
        else:
            per_source_token += 2 * dv * units  # keys projected once
            per_target += 2 * (d + dv + e) * 2 * e + 2 * e * vocabulary  # maxout, tied
    forward = per_target + per_source_token * source_length / target_length
    return 3 * forward


def median_step_seconds(model, data, steps, jit_compile=False):
    """Median wall-clock seconds of one `model.fit` batch (after warm-up)."""
    times = []

    class StepTimer(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            self.started = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            times.append(time.perf_counter() - self.started)

    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=MaskedSparseCategoricalCrossentropy(),
        jit_compile=jit_compile,
    )
    model.fit(data, steps_per_epoch=3, epochs=1, verbose=0)  # trace and warm up
    model.fit(data, steps_per_epoch=steps, epochs=1, verbose=0, callbacks=[StepTimer()])
    return float(np.median(times))


def matmul_peak_gflops(dtype, size=2048, repeats=10):
    """Best GFLOP/s of a `size x size` matmul in `dtype` (this machine, now)."""
    a = tf.random.normal((size, size), dtype=tf.float32)
    a = tf.cast(a, dtype)
    matmul = tf.function(lambda x: tf.matmul(x, x))
    matmul(a).numpy()
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        matmul(a).numpy()
        best = min(best, time.perf_counter() - started)
    return 2 * size**3 / best / 1e9


def padding_fraction(config, batches=200):
    """Padding share of real training batches of the bundled corpus (source, target),
    with `config`'s tokenizer and vocabularies learned from its training split."""
    from keras_attention.data import load_corpus, make_dataset, split_corpus
    from keras_attention.training.run_directory import RunDirectory
    from keras_attention.training.run_vectorizers import load_vectorizers

    splits = split_corpus(load_corpus(None).pairs, seed=config.seed)
    source, target = load_vectorizers(RunDirectory(config.out), config, splits=splits)
    data = make_dataset(
        splits.train,
        source,
        target,
        batch_size=config.batch_size,
        max_length=config.max_length,
        repeat=True,
    )
    counts = np.zeros((2, 2))  # (source, target) x (padding, all)
    for (source_ids, _), target_out in data.take(batches):
        for row, ids in enumerate((source_ids, target_out)):
            counts[row] += (np.sum(ids.numpy() == 0), ids.numpy().size)
    return counts[0, 0] / counts[0, 1], counts[1, 0] / counts[1, 1]


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
    args = parser.parse_args(argv)
    default = TrainConfig()
    sizes = dict(
        embedding_dim=default.embedding_dim,
        encoder_units=default.encoder_units,
        decoder_units=default.decoder_units,
    )
    source_size, target_size = default.source_vocabulary_size, default.target_vocabulary_size
    data = synthetic_batches(
        args.batch_size, args.source_length, args.target_length, source_size, target_size
    )
    peaks = {dtype: matmul_peak_gflops(dtype) for dtype in ("bfloat16", "float32")}
    print(
        f"matmul peak (2048x2048, this run): bf16 {peaks['bfloat16']:,.0f} GFLOP/s, "
        f"fp32 {peaks['float32']:,.0f} GFLOP/s"
    )
    source_padding, target_padding = padding_fraction(default)
    print(
        f"padding in real training batches (bundled corpus, {default.tokenizer}, length "
        f"buckets, batch {default.batch_size}): source {source_padding:.1%}, "
        f"target {target_padding:.1%}"
    )
    print(
        f"batch {args.batch_size}, source {args.source_length} / target {args.target_length} "
        f"tokens, vocabularies {source_size} / {target_size}, {sizes}"
    )
    print(
        f"{'model':<46} {'params':>11} {'MFLOP/token':>11} {'tokens/s':>9} "
        f"{'GFLOP/s':>8} {'% peak':>7} {'vs tutorial':>11}"
    )
    default_model = dict(attention=default.attention, score=default.score, tie_embeddings=True)
    kind = default.attention  # "bahdanau" (maxout deep output) or "luong" (scaled dot)
    other = "luong" if kind == "bahdanau" else "bahdanau"
    rows = [
        # (name, kind, dtype policy, Seq2Seq options or None for the tutorial, jit)
        ("tutorial design, float32", "tutorial", "float32", None, False),
        ("tutorial design, mixed_bfloat16", "tutorial", "mixed_bfloat16", None, False),
        (f"default ({kind}, tied), float32", kind, "float32", default_model, False),
        ("default, mixed_bfloat16", kind, "mixed_bfloat16", default_model, False),
        ("default, mixed_bfloat16, jit_compile", kind, "mixed_bfloat16", default_model, True),
        ("default, float32, jit_compile", kind, "float32", default_model, True),
        (
            f"{other} (tied), mixed_bfloat16",
            other,
            "mixed_bfloat16",
            dict(attention=other, score="scaled_dot", tie_embeddings=True),
            False,
        ),
    ]
    tutorial = {}
    results = {}
    for name, row_kind, policy, options, jit in rows:
        keras.utils.set_random_seed(0)
        if options is None:
            keras.config.set_dtype_policy(policy)
            model = TutorialSeq2Seq(source_size, target_size, **sizes)
            keras.config.set_dtype_policy("float32")
        else:
            model = Seq2Seq(source_size, target_size, dtype=policy, **sizes, **options)
        seconds = median_step_seconds(model, data, args.steps, jit_compile=jit)
        tokens = args.batch_size * args.target_length / seconds
        flops = training_flops_per_target_token(
            row_kind, sizes, target_size, args.source_length, args.target_length
        )
        gflops = tokens * flops / 1e9
        peak = peaks["float32" if policy == "float32" else "bfloat16"]
        if options is None:
            tutorial[policy] = tokens
        ratio = tokens / tutorial[policy if policy in tutorial else "float32"]
        results[(row_kind, policy, jit)] = (tokens, gflops / peak, ratio)
        print(
            f"{name:<46} {model.count_params():>11,} {flops / 1e6:>11.1f} {tokens:>9,.0f} "
            f"{gflops:>8.1f} {gflops / peak:>7.1%} {ratio:>10.2f}x"
        )

    model = Seq2Seq(source_size, target_size, dtype="mixed_bfloat16", **sizes, **default_model)
    for batch_size, repeats in ((1, 20), (64, 5)):
        speed = greedy_sentences_per_second(model, batch_size, args.source_length, 20, repeats)
        print(f"greedy decode (20 steps), batch {batch_size:>2}: {speed:8.1f} sentences/s")

    jit = False  # TrainConfig trains without XLA; see the jit_compile rows
    _, bf16_share, bf16_ratio = results[(kind, "mixed_bfloat16", jit)]
    _, _, fp32_ratio = results[(kind, "float32", jit)]
    print(
        f"default: {bf16_ratio:.2f}x tutorial (bf16), {fp32_ratio:.2f}x tutorial (fp32), "
        f"{bf16_share:.0%} of bf16 peak"
    )


if __name__ == "__main__":
    main()
