"""The captioner of `examples/captioning.py` as a TF Serving model: PNG bytes in, captions out.

`export_captioner` writes a versioned SavedModel (`BASE/<version>/`, the layout TF Serving
polls) with `keras.export.ExportArchive`. Its `serving_default` signature takes a batch of
encoded PNG images and runs everything in the graph, with plain TensorFlow ops only:

1. a check that each file starts with the PNG signature (else `INVALID_ARGUMENT`, "not
   a PNG file"), `tf.io.decode_png` (3 channels), `tf.image.convert_image_dtype` to
   float32 in [0, 1] (the training images' range) and `tf.image.resize` to the model's
   `grid * CELL` pixels (the identity for an image of that size);
2. the CNN encoder and `BeamSearchDecoder` through `dynamic_decode` (`Captioner.best_beam`);
3. the best beam's ids up to `<end>` looked up in the vocabulary and joined with spaces.

    Inputs:  images    DT_STRING [batch]          encoded PNG files
    Outputs: captions  DT_STRING [batch]          "a red circle left of a blue square"
             scores    DT_FLOAT  [batch]          the caption's summed log-probability
             attention DT_FLOAT  [batch, steps, cells]  the best beam's alignments

Warmup requests (`assets.extra/tf_serving_warmup_requests`) are written beside it, so the
model server and `keras-attention check-export` replay them. `caption_over_grpc` calls a
server with `keras_attention_client.TranslationClient.predict` (its generic Predict).

    python examples/captioning.py --export models/captioner
    keras-attention check-export --native models/captioner/1
    keras-attention serve --port 8500 --model-name captioner --model-base-path models/captioner
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

IMAGES_INPUT = "images"
SIGNATURE = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"  # the first 8 bytes of every PNG file


def png_bytes(images: np.ndarray) -> list[bytes]:
    """Encodes float images `(batch, height, width, 3)` in [0, 1] as PNG files (8 bits)."""
    pixels = np.clip(np.round(np.asarray(images) * 255.0), 0, 255).astype("uint8")
    return [tf.io.encode_png(image).numpy() for image in pixels]


def caption_function(model, vocabulary: Sequence[str], end: int, beam_width: int, max_steps: int):
    """The `tf.function` of the signature: PNG bytes `(batch,)` -> captions, scores, attention.

    Args:
        model: a trained `Captioner`.
        vocabulary: the words by id.
        end: the id of `<end>`.
        beam_width: the beam of `BeamSearchDecoder`.
        max_steps: most decoding steps.
    """
    size = model.image_size
    words = tf.constant(list(vocabulary))

    def decode(png):
        # decode_png also reads GIF, BMP and JPEG files: refuse what is not a PNG by name.
        signature = tf.strings.substr(png, 0, len(PNG_SIGNATURE))
        is_png = tf.debugging.Assert(
            tf.equal(signature, PNG_SIGNATURE),
            [f"An {IMAGES_INPUT!r} input is not a PNG file. It starts with:", signature],
        )
        with tf.control_dependencies([is_png]):
            image = tf.io.decode_png(png, channels=3)
        image = tf.image.convert_image_dtype(image, tf.float32)
        return tf.image.resize(image, [size, size])

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name=IMAGES_INPUT)])
    def serve(images):
        pixels = tf.map_fn(
            decode, images, fn_output_signature=tf.TensorSpec([size, size, 3], tf.float32)
        )
        ids, scores, attention = model.best_beam(pixels, beam_width, max_steps)
        before_end = tf.equal(tf.cumsum(tf.cast(tf.equal(ids, end), tf.int32), axis=1), 0)
        tokens = tf.ragged.boolean_mask(tf.gather(words, ids), before_end)
        captions = tf.strings.reduce_join(tokens, axis=1, separator=" ")
        return {"captions": captions, "scores": scores, "attention": attention}

    return serve


def export_captioner(
    model,
    base: str | os.PathLike,
    settings: dict,
    warmup_images: Sequence[bytes] = (),
) -> Path:
    """Writes the captioner as the next version under `base`; returns the version directory.

    Args:
        model: a trained `Captioner`.
        base: the model's base directory (the server's `--model_base_path`).
        settings: `vocabulary`, `end`, `beam_width`, `max_steps` (`caption_function`'s).
        warmup_images: PNG files for one warmup request (none: no warmup file).
    """
    from keras_attention.export.version_directory import VersionDirectory
    from keras_attention.export.warmup import predict_log, write_warmup_requests

    serve = caption_function(model, **settings)
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(SIGNATURE, serve)
    versions = VersionDirectory(base)
    with versions.staging() as staging:
        archive.write_out(str(staging), verbose=False)
        if warmup_images:
            request = {IMAGES_INPUT: np.array(list(warmup_images), object)}
            write_warmup_requests(staging, [predict_log(SIGNATURE, request)])
        _, path = versions.commit(staging)
    return path


def caption_over_grpc(target: str, model_name: str, images: Sequence[bytes]) -> dict:
    """Captions PNG files with a served captioner (gRPC Predict); returns the outputs by name."""
    from keras_attention_client import TranslationClient

    with TranslationClient(target, model_name=model_name, timeout=60.0) as client:
        return client.predict({IMAGES_INPUT: np.array(list(images), object)})
