"""Training throughput of Seq2Seq against the tutorial design and this machine's peak.

The tutorial design (as in the classic TensorFlow NMT-with-attention
tutorial): the decoder is called once per target step in a Python loop
(unrolled inside `tf.function`); at every step the attention re-projects the
encoder outputs (`W_k h`) and the output layer projects that step alone onto
the vocabulary. Our `Seq2Seq` projects the keys once per sentence
(`prepare_keys`), runs only the recurrence in a `tf.while_loop`, and applies
the output layers once to all steps after the loop.

Every model has the same sizes and trains with `model.fit` on the same
synthetic batches, in this one process; a row's figure is the median of its
per-batch times, the rows taking turns (`--rounds` of `--steps` steps each).
Each design trains as it is written: the tutorial with
Keras' Adam and its masked cross-entropy and accuracy, `Seq2Seq` as
`keras-attention train` compiles it (`trainer.compile_model`: `FusedAdam`
with global clipping and the cosine schedule, the masked cross-entropy with
its hand-written gradient, masked accuracy). One more row gives the
tutorial design the library's training step, to show how much of the ratio
is the model and how much the step, and one gives the default model the
tutorial's. For each row the script prints the FLOPs per target token
(counted from the layer shapes: matmuls of the forward pass times 3 for
training), target tokens/s, achieved GFLOP/s and the ratio to the tutorial
design in the same precision. It measures the bf16 and fp32 matmul peak
(2048x2048) in the same run, reports the padding fraction of real training
batches of the bundled corpus, greedy decoding speed, and ends with one line
for the default training configuration (`TrainConfig()`):

    default: X.XXx tutorial (bf16), Y.YYx tutorial (fp32), Z% of bf16 peak, F.FFx matmul ceiling

where the last figure is the default training step's time (in the precision
`--precision auto` resolves to on this machine) over the time its training
matmuls take alone in that precision, each timed in this run (the same FLOPs):
how far the step is from doing nothing but its matmuls.

    python benchmarks/train_throughput.py [--steps 10] [--rounds 4] [--batch-size 64]
"""

from __future__ import annotations

import argparse

import harness

harness.quiet_tensorflow()

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_attention.decoding import GreedySearch  # noqa: E402
from keras_attention.models.seq2seq import Seq2Seq  # noqa: E402
from keras_attention.precision import resolve_precision  # noqa: E402
from keras_attention.runs import TrainConfig  # noqa: E402
from keras_attention.training.masked_loss import sparse_cross_entropy  # noqa: E402
from keras_attention.training.trainer import compile_model  # noqa: E402


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


def tutorial_masked_loss(y_true, y_pred):
    """The tutorial's loss: Keras' cross-entropy per token, averaged over real tokens."""
    losses = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")(
        y_true, y_pred
    )
    mask = tf.cast(y_true != 0, losses.dtype)
    return tf.reduce_sum(losses * mask) / tf.reduce_sum(mask)


def tutorial_masked_accuracy(y_true, y_pred):
    """The tutorial's accuracy over real tokens."""
    y_true = tf.cast(y_true, tf.int64)
    match = tf.cast(tf.argmax(y_pred, axis=-1) == y_true, tf.float32)
    mask = tf.cast(y_true != 0, tf.float32)
    return tf.reduce_sum(match * mask) / tf.reduce_sum(mask)


def compile_tutorial(model, jit_compile=False):
    """The tutorial's training step: Keras' Adam, its masked loss and accuracy."""
    model.compile(
        optimizer=keras.optimizers.Adam(),
        loss=tutorial_masked_loss,
        metrics=[tutorial_masked_accuracy],
        jit_compile=jit_compile,
    )


def compile_library(model, jit_compile=False):
    """The library's training step, as `keras-attention train` compiles it."""
    compile_model(model, TrainConfig(jit_compile=jit_compile))


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


def training_matmuls(rows):
    """The forward matmuls with the two backward matmuls of each (dX = dY W^T,
    dW = X^T dY): `(b, m, k, n, count)`, three per forward row."""
    shapes = []
    for _, b, m, k, n, count in rows:
        shapes += [(b, m, k, n, count), (b, m, n, k, count), (b, k, m, n, count)]
    return shapes


def training_flops_per_target_token(kind, sizes, vocabulary, batch, source_length, target_length):
    """Training FLOPs per target token: 3 x the forward matmuls of `harness.forward_matmuls`."""
    rows = harness.forward_matmuls(kind, sizes, vocabulary, batch, source_length, target_length)
    forward = sum(2 * b * m * k * n * count for _, b, m, k, n, count in rows)
    return 3 * forward / (batch * target_length)


def matmul_seconds(b, m, k, n, dtype, repeats=50):
    """Seconds of one `(b, m, k) x (b, k, n)` matmul in `dtype`, alone: the median of
    `repeats` matmuls run back to back in one `tf.while_loop` (no call overhead)."""
    x = tf.cast(tf.random.normal((b, m, k)), dtype)
    w = tf.cast(tf.random.normal((b, k, n)), dtype)

    @tf.function
    def run(x, w):
        def body(i, total):
            # Scaling by the counter keeps the matmul from being hoisted out of the loop.
            y = tf.matmul(x * tf.cast(i, dtype), w)
            return i + 1, total + tf.cast(y[0, 0, 0], tf.float32)

        return tf.while_loop(lambda i, _: i < repeats, body, (1, 0.0))[1]

    return float(np.median(harness.time_calls(lambda: run(x, w).numpy(), 5))) / repeats


def matmul_ceiling(rows, dtype):
    """`(name, seconds, flops)` per forward row of one training batch, its forward and
    backward matmuls each timed alone in `dtype`: summed, the step time if everything
    but the matmuls were free (so a ceiling on the share of the peak)."""
    timed = {}
    ceiling = []
    for row in rows:
        seconds = flops = 0.0
        for b, m, k, n, count in training_matmuls([row]):
            if (b, m, k, n) not in timed:
                timed[(b, m, k, n)] = matmul_seconds(b, m, k, n, dtype)
            seconds += timed[(b, m, k, n)] * count
            flops += 2 * b * m * k * n * count
        ceiling.append((row[0], seconds, flops))
    return ceiling


def output_layer_seconds(tokens, embedding_dim, vocabulary, policy, repeats=10):
    """Median seconds of the forward and backward pass of the tied vocabulary projection
    and the float32 softmax cross-entropy for `tokens` target tokens in one batch: work
    the tutorial design does as well (it projects step by step, the same FLOPs)."""
    compute = "bfloat16" if policy == "mixed_bfloat16" else "float32"
    rng = np.random.default_rng(0)
    features = tf.Variable(rng.normal(size=(tokens, embedding_dim)).astype("float32"))
    embeddings = tf.Variable(rng.normal(size=(vocabulary, embedding_dim)).astype("float32"))
    bias = tf.Variable(np.zeros(vocabulary, "float32"))
    labels = tf.constant(rng.integers(4, vocabulary, tokens), tf.int32)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            logits = tf.nn.bias_add(
                tf.matmul(
                    tf.cast(features, compute), tf.cast(embeddings, compute), transpose_b=True
                ),
                tf.cast(bias, compute),
            )
            loss = tf.reduce_mean(sparse_cross_entropy(labels, tf.cast(logits, tf.float32)))
        return tape.gradient(loss, [features, embeddings, bias])

    return float(np.median(harness.time_calls(lambda: [g.numpy() for g in step()], repeats)))


def prepared(model, data, compile_step, jit_compile=False):
    """`model` compiled by `compile_step(model, jit_compile)`, traced and warmed up."""
    compile_step(model, jit_compile)
    model.fit(data, steps_per_epoch=3, epochs=1, verbose=0)
    return model


def padding_fraction(config, batches=200):
    """Padding share of real training batches of the bundled corpus (source, target),
    with `config`'s tokenizer and vocabularies learned from its training split."""
    from keras_attention.data import DatasetOptions, load_corpus, make_dataset, split_corpus
    from keras_attention.runs.run_directory import RunDirectory
    from keras_attention.runs.run_vectorizers import load_vectorizers

    splits = split_corpus(load_corpus(None).pairs, seed=config.seed)
    source, target = load_vectorizers(RunDirectory(config.out), config, sample=splits)
    data = make_dataset(
        splits.train,
        source,
        target,
        DatasetOptions(batch_size=config.batch_size, max_length=config.max_length, repeat=True),
    )
    counts = np.zeros((2, 2))  # (source, target) x (padding, all)
    for (source_ids, _), target_out in data.take(batches):
        for row, ids in enumerate((source_ids, target_out)):
            counts[row] += (np.sum(ids.numpy() == 0), ids.numpy().size)
    return counts[0, 0] / counts[0, 1], counts[1, 0] / counts[1, 1]


def greedy_sentences_per_second(model, batch_size, source_length, max_steps, repeats):
    search = GreedySearch(max_steps=max_steps, end_id=3)

    @tf.function
    def decode(source):
        state = model.initial_decode_state(source)
        start = tf.fill([tf.shape(source)[0]], 2)
        return search(model.next_logits, state, start)

    source = tf.constant(
        np.random.default_rng(1).integers(4, 1000, (batch_size, source_length)), tf.int32
    )
    return repeats * batch_size / sum(harness.time_calls(lambda: decode(source), repeats))


def print_ceilings(rows, peak, step, tutorial_step, output_layer):
    """What the default model could reach on this machine if only its matmuls took time,
    and how far any design can get from the tutorial's step while it keeps the output
    layer both share (bf16)."""
    ceiling = matmul_ceiling(rows, "bfloat16")
    seconds = sum(row[1] for row in ceiling)
    ceiling_seconds = seconds
    gflops = sum(row[2] for row in ceiling) / seconds / 1e9
    print(
        f"ceiling: the default's training matmuls, each timed alone (bf16), take "
        f"{seconds * 1e3:.1f} ms per batch (the measured step: {step * 1e3:.1f} ms), "
        f"{gflops:.0f} GFLOP/s = {gflops / peak:.0%} of bf16 peak at best"
    )
    for name, row_seconds, flops in ceiling:
        share = flops / row_seconds / 1e9 / peak
        print(f"  {name:<40} {row_seconds * 1e3:7.2f} ms {share:7.1%} of peak")
    print(
        f"output layer + loss alone (tied projection in bf16, float32 softmax cross-entropy, "
        f"forward and backward): {output_layer * 1e3:.1f} ms per batch; the tutorial's step "
        f"{tutorial_step * 1e3:.1f} ms, so a design that keeps this output layer is at most "
        f"{tutorial_step / output_layer:.2f}x the tutorial (bf16)"
    )
    return ceiling_seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--steps", type=int, default=10, help="timed training steps per model and round"
    )
    parser.add_argument("--rounds", type=int, default=4, help="turns the models take")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--source-length", type=int, default=10)
    parser.add_argument("--target-length", type=int, default=12)
    args = parser.parse_args(argv)
    harness.print_machine_header()
    # The default run's tokenizer: what `auto` picks for the bundled corpus (words;
    # None = the word tokenizer's fixed sizes, 12,000 / 16,000, which `auto` reaches
    # there: the corpus has more distinct words on each side).
    default = TrainConfig(
        tokenizer="words", source_vocabulary_size=None, target_vocabulary_size=None
    )
    sizes = dict(
        embedding_dim=default.embedding_dim,
        encoder_units=default.encoder_units,
        decoder_units=default.decoder_units,
    )
    source_size, target_size = default.source_vocabulary_size, default.target_vocabulary_size
    data = synthetic_batches(
        args.batch_size, args.source_length, args.target_length, source_size, target_size
    )
    peaks = {dtype: harness.matmul_peak_gflops(dtype) for dtype in ("bfloat16", "float32")}
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
    default_model = dict(attention=default.attention, score=default.score, tie_embeddings=True)
    kind = default.attention  # "bahdanau" (maxout deep output) or "luong"
    other = "luong" if kind == "bahdanau" else "bahdanau"
    rows = [
        # (name, kind, dtype policy, Seq2Seq options or None for the tutorial, jit,
        #  training step)
        ("tutorial design, float32", "tutorial", "float32", None, False, compile_tutorial),
        (
            "tutorial design, mixed_bfloat16",
            "tutorial",
            "mixed_bfloat16",
            None,
            False,
            compile_tutorial,
        ),
        (
            "tutorial design, bf16, library's step",
            "tutorial",
            "mixed_bfloat16",
            None,
            False,
            compile_library,
        ),
        (
            f"default ({kind}, tied), float32",
            kind,
            "float32",
            default_model,
            False,
            compile_library,
        ),
        ("default, mixed_bfloat16", kind, "mixed_bfloat16", default_model, False, compile_library),
        (
            "default, bf16, the tutorial's step",
            kind,
            "mixed_bfloat16",
            default_model,
            False,
            compile_tutorial,
        ),
        (
            "default, mixed_bfloat16, jit_compile",
            kind,
            "mixed_bfloat16",
            default_model,
            True,
            compile_library,
        ),
        ("default, float32, jit_compile", kind, "float32", default_model, True, compile_library),
        (
            f"{other}{' ' + default.score if other == 'luong' else ''} (tied), mixed_bfloat16",
            other,
            "mixed_bfloat16",
            dict(attention=other, score=default.score, tie_embeddings=True),
            False,
            compile_library,
        ),
    ]
    tutorial = {}
    results = {}
    step_seconds = {}
    # Every row's model is built and warmed up first; then the rows take turns,
    # `--rounds` times `--steps` steps each, so that a change of the machine's
    # speed during the run (this one's varies by a third) falls on all rows alike.
    models = []
    for _, _, policy, options, jit, compile_step in rows:
        keras.utils.set_random_seed(0)
        if options is None:
            keras.config.set_dtype_policy(policy)
            model = TutorialSeq2Seq(source_size, target_size, **sizes)
            keras.config.set_dtype_policy("float32")
        else:
            arguments = harness.seq2seq_arguments(precision=policy, **sizes, **options)
            model = Seq2Seq(source_size, target_size, **arguments)
        models.append(prepared(model, data, compile_step, jit_compile=jit))
    times = [[] for _ in rows]
    for _ in range(args.rounds):
        for row_times, model in zip(times, models, strict=True):
            row_times.extend(harness.fit_step_seconds(model, data, args.steps))
        # The peak is measured in every round too, and the best kept: measured
        # once, it caught a slow moment of the machine (the same run's vocabulary
        # matmul alone then ran at 1.7x "the peak").
        for dtype in peaks:
            peaks[dtype] = max(peaks[dtype], harness.matmul_peak_gflops(dtype))
    print(
        f"matmul peak (2048x2048, best of {args.rounds + 1} measurements over this run): "
        f"bf16 {peaks['bfloat16']:,.0f} GFLOP/s, fp32 {peaks['float32']:,.0f} GFLOP/s"
    )
    print(
        f"{'model':<46} {'params':>11} {'MFLOP/token':>11} {'tokens/s':>9} "
        f"{'GFLOP/s':>8} {'% peak':>7} {'vs tutorial':>11}"
    )
    for (name, row_kind, policy, options, jit, compile_step), model, row_times in zip(
        rows, models, times, strict=True
    ):
        seconds = float(np.median(row_times))
        tokens = args.batch_size * args.target_length / seconds
        flops = training_flops_per_target_token(
            row_kind, sizes, target_size, args.batch_size, args.source_length, args.target_length
        )
        gflops = tokens * flops / 1e9
        peak = peaks["float32" if policy == "float32" else "bfloat16"]
        if options is None and compile_step is compile_tutorial:
            tutorial[policy] = tokens
        ratio = tokens / tutorial[policy if policy in tutorial else "float32"]
        key = (row_kind, policy, jit, compile_step.__name__)
        results[key] = (tokens, gflops / peak, ratio)
        step_seconds[key] = seconds
        print(
            f"{name:<46} {model.count_params():>11,} {flops / 1e6:>11.1f} {tokens:>9,.0f} "
            f"{gflops:>8.1f} {gflops / peak:>7.1%} {ratio:>10.2f}x"
        )

    arguments = harness.seq2seq_arguments(precision="mixed_bfloat16", **sizes, **default_model)
    model = Seq2Seq(source_size, target_size, **arguments)
    for batch_size, repeats in ((1, 20), (64, 5)):
        speed = greedy_sentences_per_second(model, batch_size, args.source_length, 20, repeats)
        print(f"greedy decode (20 steps), batch {batch_size:>2}: {speed:8.1f} sentences/s")

    jit = False  # TrainConfig trains without XLA; see the jit_compile rows
    bf16_ceiling = print_ceilings(
        harness.forward_matmuls(
            kind, sizes, target_size, args.batch_size, args.source_length, args.target_length
        ),
        peaks["bfloat16"],
        step_seconds[(kind, "mixed_bfloat16", jit, "compile_library")],
        step_seconds[("tutorial", "mixed_bfloat16", False, "compile_tutorial")],
        output_layer_seconds(
            args.batch_size * args.target_length,
            sizes["embedding_dim"],
            target_size,
            "mixed_bfloat16",
        ),
    )
    _, bf16_share, bf16_ratio = results[(kind, "mixed_bfloat16", jit, "compile_library")]
    _, _, fp32_ratio = results[(kind, "float32", jit, "compile_library")]
    # The default training step in the precision `--precision auto` picks here, over the
    # time its matmuls take alone in that precision (the same FLOPs).
    policy = resolve_precision(default.precision).policy
    policy = "float32" if policy == "float32" else "mixed_bfloat16"
    ceiling = bf16_ceiling
    if policy == "float32":
        rows = harness.forward_matmuls(
            kind, sizes, target_size, args.batch_size, args.source_length, args.target_length
        )
        ceiling = sum(row[1] for row in matmul_ceiling(rows, "float32"))
    print(f"precision auto: {resolve_precision(default.precision).describe()}")
    print(
        f"default: {bf16_ratio:.2f}x tutorial (bf16), {fp32_ratio:.2f}x tutorial (fp32), "
        f"{bf16_share:.0%} of bf16 peak, "
        f"{step_seconds[(kind, policy, jit, 'compile_library')] / ceiling:.2f}x matmul ceiling"
    )


if __name__ == "__main__":
    main()
