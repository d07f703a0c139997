"""The example scripts run end to end at tiny sizes and learn better than chance."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load_example(name):
    """Imports examples/<name>.py as a module (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_text_classifier_learns_the_keyword():
    main = load_example("text_classifier_attention").main
    results = main(["--samples", "384", "--epochs", "3", "--seed", "0"])
    assert results["accuracy"] > 0.65  # chance: 0.5
    assert results["keyword_attention"] > 0.5  # attention peaks on the keyword
    assert results["max_weight_on_padding"] == 0.0  # the Embedding mask reached the layer


def test_cnn_attention_finds_the_square():
    main = load_example("cnn_feature_attention").main
    results = main(["--samples", "384", "--epochs", "3", "--batch-size", "16", "--seed", "0"])
    assert results["accuracy"] > 0.5  # chance: 0.25
    assert results["square_attention"] > 0.5


def test_examples_reject_bad_flags():
    with pytest.raises(SystemExit):
        load_example("cnn_feature_attention").main(["--score", "nope"])
    with pytest.raises(ValueError, match="size"):
        load_example("cnn_feature_attention").main(["--size", "7"])


def test_self_attention_encoder_finds_partners():
    main = load_example("self_attention_encoder").main
    results = main(["--seed", "0"])
    assert results["accuracy"] > 0.7  # chance: 0.5; a bag of embeddings cannot see pairs
    assert results["partner_attention"] > 0.6  # a paired token attends to its partner
    assert results["max_weight_on_padding"] == 0.0


@pytest.mark.slow
def test_custom_attention_trains_saves_reloads_and_exports(tmp_path):
    """A user's own registered `BaseAttention` subclass in `Seq2Seq`: `model.fit` lowers
    the loss, the `.keras` file reloads it with identical outputs, and the export passes
    the checks of `check-export --native` (TF Serving's C API loader)."""
    main = load_example("custom_attention").main
    results = main(
        ["--out", str(tmp_path), "--pairs", "1500", "--steps", "60", "--batch-size", "32"]
        + ["--embedding-dim", "16", "--encoder-units", "16"]
    )
    assert results["losses"][1] < results["losses"][0]
    assert results["reloaded_attention"] == "WeightedDistanceAttention"
    assert results["reload_difference"] == 0.0
    assert results["export_ok"]
    assert len(results["translations"]) == 2


def test_tfa_seq2seq_program_trains_and_beam_searches():
    """A program written against `tfa.seq2seq` (`AttentionWrapper` + `LuongAttention`,
    `BasicDecoder` + `TrainingSampler`, `SequenceLoss`, `BeamSearchDecoder` over
    `tile_batch`, `dynamic_decode`) runs on `keras_attention.seq2seq` and learns to
    reverse short sequences."""
    results = load_example("tfa_seq2seq_migration").main(["--steps", "60", "--seed", "0"])
    losses = results["losses"]
    assert len(losses) == 60 and np.all(np.isfinite(losses))
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])
    assert results["predicted_shape"][0] == 16
    assert results["exact"] > 0.5  # chance: about 0 (a random reversal of 2-5 symbols)
