"""A tiny deterministic stand-in for the translator export, with the same signature contract.

`build_translator_export` is the one place that writes it; when the real
exporter lands, swap its body for a call to the exporter and the serving
tests run against the real model.

Contract (each signature takes `text`: DT_STRING [batch]):

- `translation` DT_STRING [batch], `score` DT_FLOAT [batch], `length`
  DT_INT32 [batch], `tokens` DT_STRING [batch, T_out] (padded with ""),
  `source_tokens` DT_STRING [batch, T_in] (padded with ""), `attention`
  DT_FLOAT [batch, T_out, T_in].

The stand-in "translates" by reversing the whitespace tokens and changing
their case (upper-case in variant "upper", lower-case in "lower"), so
`T_out == T_in` and output token t aligns with source token n-1-t. Its
attention row t is softmax(-|s - (n-1-t)|) over the n source tokens; its score
is `-length * weight - 0.25 * known` (a Keras variable `weight`, `known` the
number of tokens found in a lookup table), minus another 0.125 for
`beam_search`. `reference_outputs` is the same computation in NumPy.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

KNOWN_WORDS = ("the", "a", "cat", "dog")
VARIANTS = {"upper": 0.5, "lower": 0.25}
BEAM_OFFSET = 0.125


def build_translator_export(
    export_dir: str | os.PathLike,
    version: int = 1,
    *,
    variant: str = "upper",
    warmup_texts: list[str] | None = None,
) -> Path:
    """Writes the stand-in translator SavedModel at `export_dir/<version>`; returns that path."""
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras
    import tensorflow as tf
    import tensorflow_text as tf_text

    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}. Received: {variant!r}")

    class Scale(keras.layers.Layer):
        def __init__(self, value: float, **kwargs):
            super().__init__(**kwargs)
            self.value = value

        def build(self, input_shape):
            self.weight = self.add_weight(
                shape=(), initializer=keras.initializers.Constant(self.value), name="weight"
            )

        def call(self, x):
            return x * self.weight

    scale = Scale(VARIANTS[variant])
    scale.build(())
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(KNOWN_WORDS), tf.range(1, len(KNOWN_WORDS) + 1, dtype=tf.int64)
        ),
        default_value=0,
    )
    tokenizer = tf_text.WhitespaceTokenizer()
    case = tf.strings.upper if variant == "upper" else tf.strings.lower

    def translate(text, offset):
        source = tokenizer.tokenize(text)
        n = tf.cast(source.row_lengths(), tf.int32)
        source_tokens = source.to_tensor("")
        width = tf.shape(source_tokens)[1]
        mask = tf.sequence_mask(n, width)
        reversed_tokens = tf.reverse_sequence(
            source_tokens, tf.cast(n, tf.int64), seq_axis=1, batch_axis=0
        )
        tokens = tf.where(mask, case(reversed_tokens), "")
        translation = tf.strings.reduce_join(tokens, axis=1, separator=" ")
        translation = tf.strings.strip(tf.strings.regex_replace(translation, " +", " "))
        known = tf.reduce_sum(tf.cast((table.lookup(source_tokens) > 0) & mask, tf.float32), axis=1)
        score = scale(-tf.cast(n, tf.float32)) - 0.25 * known - offset
        t = tf.range(width)[None, :, None]
        s = tf.range(width)[None, None, :]
        aligned = n[:, None, None] - 1 - t
        logits = -tf.abs(tf.cast(s - aligned, tf.float32))
        valid = mask[:, None, :] & mask[:, :, None]
        weights = tf.where(valid, tf.exp(logits), 0.0)
        attention = tf.math.divide_no_nan(weights, tf.reduce_sum(weights, axis=2, keepdims=True))
        return {
            "translation": translation,
            "score": score,
            "length": n,
            "tokens": tokens,
            "source_tokens": source_tokens,
            "attention": attention,
        }

    archive = keras.export.ExportArchive()
    archive.track(scale)
    archive.track(table)
    spec = [tf.TensorSpec([None], tf.string, name="text")]
    archive.add_endpoint("serving_default", lambda text: translate(text, 0.0), input_signature=spec)
    archive.add_endpoint(
        "beam_search", lambda text: translate(text, BEAM_OFFSET), input_signature=spec
    )
    path = Path(export_dir) / str(version)
    archive.write_out(str(path), verbose=False)
    if warmup_texts:
        write_warmup_requests(path, warmup_texts)
    return path


def reference_outputs(
    texts: list[str], *, variant: str = "upper", signature: str = "serving_default"
) -> dict[str, np.ndarray]:
    """The stand-in's outputs for `texts`, computed in NumPy (an independent reference)."""
    rows = [text.split() for text in texts]
    width = max((len(row) for row in rows), default=0)
    batch = len(texts)
    tokens = np.full((batch, width), b"", dtype=object)
    source = np.full((batch, width), b"", dtype=object)
    attention = np.zeros((batch, width, width), np.float32)
    scores = np.zeros(batch, np.float32)
    for i, row in enumerate(rows):
        n = len(row)
        for j, word in enumerate(row):
            source[i, j] = word.encode()
            changed = word.upper() if variant == "upper" else word.lower()
            tokens[i, n - 1 - j] = changed.encode()
        for t in range(n):
            logits = -np.abs(np.arange(n) - (n - 1 - t)).astype(np.float32)
            weights = np.exp(logits)
            attention[i, t, :n] = weights / weights.sum()
        known = sum(word in KNOWN_WORDS for word in row)
        offset = BEAM_OFFSET if signature == "beam_search" else 0.0
        scores[i] = -n * VARIANTS[variant] - 0.25 * known - offset
    translation = np.array([b" ".join(t for t in row if t) for row in tokens], dtype=object)
    if batch and not width:
        translation = np.array([b""] * batch, dtype=object)
    return {
        "translation": translation,
        "score": scores,
        "length": np.array([len(row) for row in rows], np.int32),
        "tokens": tokens,
        "source_tokens": source,
        "attention": attention,
    }


def write_warmup_requests(version_dir: str | os.PathLike, texts: list[str]) -> Path:
    """Writes `assets.extra/tf_serving_warmup_requests` (one Predict per text)."""
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2, prediction_log_pb2

    path = Path(version_dir) / "assets.extra" / "tf_serving_warmup_requests"
    path.parent.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for text in texts:
            request = predict_pb2.PredictRequest()
            request.model_spec.name = "warmup"
            request.model_spec.signature_name = "serving_default"
            request.inputs["text"].CopyFrom(tf.make_tensor_proto([text], dtype=tf.string))
            log = prediction_log_pb2.PredictionLog(
                predict_log=prediction_log_pb2.PredictLog(request=request)
            )
            writer.write(log.SerializeToString())
    return path


def build_slow_export(export_dir: str | os.PathLike, version: int = 1) -> Path:
    """A model whose `serving_default` spins `iterations` (DT_INT64 [batch]) loop steps.

    Output `count` (DT_INT64 [batch]) is `iterations`; the run takes time
    proportional to `max(iterations)`, for deadline and shutdown tests.
    """
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras
    import tensorflow as tf

    def spin(iterations):
        limit = tf.reduce_max(tf.concat([iterations, tf.zeros([1], tf.int64)], axis=0))

        def body(i, acc):
            return i + 1, tf.sin(acc) + 1.0

        steps, _ = tf.while_loop(
            lambda i, acc: i < limit, body, (tf.constant(0, tf.int64), tf.constant(0.0))
        )
        return {"count": tf.minimum(iterations, steps)}

    archive = keras.export.ExportArchive()
    archive.add_endpoint(
        "serving_default",
        spin,
        input_signature=[tf.TensorSpec([None], tf.int64, name="iterations")],
    )
    path = Path(export_dir) / str(version)
    archive.write_out(str(path), verbose=False)
    return path


def build_gate_export(export_dir: str | os.PathLike, version: int = 1) -> Path:
    """A model that announces each request and holds it until the test releases it.

    `serving_default` takes `gate` (DT_STRING [1], a directory) and `tag`
    (DT_STRING [1]). It first writes `<gate>/arrived-<tag>`, then loops until
    `<gate>/release` exists, and returns `tag`. A test waits for the
    `arrived-*` files to know its requests are inside the Session run, acts
    (SIGTERM, stop, a version switch), then creates `release`: ordering by
    events, not by sleeps, so a loaded machine cannot reorder it. A held
    request spins on one of the Session's inter-op threads: serve it with
    `tensorflow_inter_op_parallelism` above the number of requests held at once.
    """
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras
    import tensorflow as tf

    def hold(gate, tag):
        directory, name = gate[0], tag[0]
        arrived = tf.io.write_file(tf.strings.join([directory, "/arrived-", name]), name)
        release = tf.strings.join([directory, "/release"])
        with tf.control_dependencies([arrived]):
            start = tf.constant(0, tf.int64)
        (spins,) = tf.while_loop(
            lambda n: tf.equal(tf.size(tf.io.matching_files(release)), 0),
            lambda n: (n + 1,),
            (start,),
        )
        with tf.control_dependencies([spins]):
            return {"tag": tf.identity(tag)}

    archive = keras.export.ExportArchive()
    archive.add_endpoint(
        "serving_default",
        hold,
        input_signature=[
            tf.TensorSpec([None], tf.string, name="gate"),
            tf.TensorSpec([None], tf.string, name="tag"),
        ],
    )
    path = Path(export_dir) / str(version)
    archive.write_out(str(path), verbose=False)
    return path
