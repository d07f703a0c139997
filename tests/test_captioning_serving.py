"""The captioner of examples/captioning.py exported (PNG bytes in, captions out) and served.

The reference is the Keras model itself: `Captioner.beam_search` on the pixels of the
same PNG files, decoded here with NumPy (the files are written from known 8-bit pixels,
and PNG is lossless), while the export decodes them in its graph.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers.examples import load_example

BEAM_WIDTH = 3


@pytest.fixture(scope="module")
def captioning():
    return load_example("captioning")


def _scenes_as_png(captioning, count: int, seed: int):
    """`(png files, pixels float32 in [0, 1] as the PNG files hold them)` of `count` scenes."""
    scenes = captioning.make_scenes(count, grid=4, seed=seed)
    pixels = np.round(scenes["images"] * 255.0).astype("uint8")
    return captioning.serving_module().png_bytes(scenes["images"]), pixels / np.float32(255.0)


def _reference(captioning, model, pixels) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Captions, scores and attention of the Keras model on `pixels` (eager)."""
    ids, scores, attention = model.best_beam(pixels.astype("float32"), BEAM_WIDTH)
    captions = [" ".join(captioning.words_of(row)) for row in ids.numpy()]
    return captions, scores.numpy(), attention.numpy()


def _serve(base, model_name: str):
    from keras_attention.serving import ModelServer, ServerOptions

    options = ServerOptions(
        port=0, model_name=model_name, model_base_path=str(base), file_system_poll_wait_seconds=0
    )
    server = ModelServer(options)
    server.start()
    return server


def _assert_served_as_reference(captioning, served: dict, reference) -> None:
    captions, scores, attention = reference
    assert [c.decode() for c in served["captions"]] == captions
    np.testing.assert_allclose(served["scores"], scores, rtol=1e-4, atol=1e-4)
    # The served steps run to the longest beam; the reference's too (same decoder).
    np.testing.assert_allclose(served["attention"], attention, atol=1e-4)


@pytest.fixture(scope="module")
def untrained_export(captioning, tmp_path_factory):
    """An untrained tiny captioner and its export (version 1 of a base directory)."""
    import keras

    keras.utils.set_random_seed(0)
    scenes = captioning.make_scenes(2, grid=4, seed=0)
    model = captioning.Captioner(grid=4, filters=8, units=16, embedding_dim=8)
    model((scenes["images"][:1], captioning.teacher_forcing(scenes["tokens"][:1])[0]))
    base = tmp_path_factory.mktemp("captioner")
    return model, captioning.export(model, base, BEAM_WIDTH, scenes["images"])


def test_export_signature_takes_png_bytes_and_returns_captions(untrained_export):
    from keras_attention.export.export_checker import ExportChecker

    _, path = untrained_export
    assert path.name == "1"
    report = ExportChecker().check(path)
    assert report.ok, report.format()
    assert report.contract == "generic"
    signature = report.signatures["serving_default"]
    assert {k: (v["dtype"], v["shape"]) for k, v in signature["inputs"].items()} == {
        "images": ("DT_STRING", [-1])
    }
    assert {k: (v["dtype"], v["shape"]) for k, v in signature["outputs"].items()} == {
        "captions": ("DT_STRING", [-1]),
        "scores": ("DT_FLOAT", [-1]),
        "attention": ("DT_FLOAT", [-1, -1, 16]),  # 4 x 4 grid cells
    }
    assert set(report.ops.values()) == {"core"}  # no custom op, not even tf-text's
    assert "DecodePng" in report.ops
    assert [entry["batch_size"] for entry in report.warmup] == [2]


def test_server_rejects_bytes_that_are_not_png_and_keeps_serving(captioning, untrained_export):
    from keras_attention_client import ServingError, TranslationClient

    model, path = untrained_export
    pngs, pixels = _scenes_as_png(captioning, 3, seed=5)
    server = _serve(path.parent, "captioner")
    try:
        with TranslationClient(server.address, model_name="captioner", timeout=30.0) as client:
            with pytest.raises(ServingError) as raised:
                client.predict({"images": np.array([pngs[0], b"GIF89a not a png"], object)})
            assert raised.value.code == "INVALID_ARGUMENT"
            assert "is not a PNG file. It starts with:" in raised.value.message
            served = client.predict({"images": np.array(pngs, object)})
    finally:
        server.stop(grace=1.0)
    _assert_served_as_reference(captioning, served, _reference(captioning, model, pixels))


@pytest.mark.slow
def test_trained_captioner_passes_check_export_native_and_serves_its_captions(
    captioning, tmp_path, capsys
):
    """300 scenes, 3 epochs (about a minute on 2 cores): the export passes
    `keras-attention check-export --native`, and over gRPC it captions 16 held-out PNG
    files exactly as the Keras model captions their pixels."""
    import keras

    from keras_attention.cli import main as cli_main

    args = captioning.parse_args(["--filters", "16", "--units", "32", "--batch-size", "32"])
    keras.utils.set_random_seed(0)
    train = captioning.make_scenes(300, grid=4, seed=0)
    model = captioning.Captioner(grid=4, filters=16, units=32)
    model((train["images"][:1], captioning.teacher_forcing(train["tokens"][:1])[0]))
    losses = captioning._fit(model, train, args, epochs=3)
    assert losses[-1] < losses[0]
    pngs, pixels = _scenes_as_png(captioning, 16, seed=1)
    path = captioning.export(model, tmp_path / "captioner", BEAM_WIDTH, pixels[:4])
    capsys.readouterr()
    assert cli_main(["check-export", "--native", str(path)]) == 0
    printed = capsys.readouterr().out
    assert "Checked as: a SavedModel of its own" in printed
    assert "TensorFlow's C API" in printed and "loaded, and 1 request (" in printed
    server = _serve(path.parent, "captioner")
    try:
        served = captioning.serving_module().caption_over_grpc(server.address, "captioner", pngs)
    finally:
        server.stop(grace=1.0)
    _assert_served_as_reference(captioning, served, _reference(captioning, model, pixels))
