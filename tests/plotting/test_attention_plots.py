import numpy as np
import pytest
from PIL import Image

from keras_attention.plotting import (
    format_alignment,
    plot_attention,
    plot_bleu_by_length,
    plot_training_curves,
)
from keras_attention.plotting.attention_plots import repetition_start

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SOURCE = ["I", "am", "happy", "."]
TARGET = ["je", "suis", "heureux", "."]


def assert_png(path):
    """A valid PNG that Pillow can decode, with real content (not one colour)."""
    with open(path, "rb") as f:
        assert f.read(8) == PNG_SIGNATURE
    with Image.open(path) as image:
        image.verify()
    with Image.open(path) as image:
        pixels = np.asarray(image.convert("RGB"))
    assert pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 10
    return pixels


def test_plot_attention_writes_a_heatmap(tmp_path):
    weights = np.eye(4) * 0.9 + 0.025
    path = plot_attention(weights, SOURCE, TARGET, tmp_path / "sub" / "attention.png", title="t")
    assert path == tmp_path / "sub" / "attention.png"
    pixels = assert_png(path)
    # viridis: 0.9 is yellow-green, 0.025 dark purple; both must be drawn.
    yellowish = (pixels[..., 0] > 150) & (pixels[..., 1] > 180) & (pixels[..., 2] < 100)
    purple = (pixels[..., 0] > 50) & (pixels[..., 0] < 90) & (pixels[..., 2] > 70)
    purple &= pixels[..., 1] < 40
    assert yellowish.sum() > 500 and purple.sum() > 500


def test_plot_attention_empty_translation(tmp_path):
    assert_png(plot_attention(np.zeros([0, 3]), ["a", "b", "c"], [], tmp_path / "empty.png"))


@pytest.mark.parametrize(
    "weights, source, target, match",
    [
        (np.ones([3, 4]), SOURCE, TARGET, r"\(4, 4\). Received: weights.shape=\(3, 4\)"),
        (np.ones([4]), SOURCE, TARGET, r"Received: weights.shape=\(4,\)"),
        (np.full([4, 4], np.nan), SOURCE, TARGET, "finite"),
    ],
)
def test_shape_mismatch_raises(tmp_path, weights, source, target, match):
    with pytest.raises(ValueError, match=match):
        plot_attention(weights, source, target, tmp_path / "x.png")
    with pytest.raises(ValueError, match=match):
        format_alignment(weights, source, target)
    assert not (tmp_path / "x.png").exists()


def test_plot_bleu_by_length(tmp_path):
    runs = {
        "attention": [
            {"bucket": "1-5", "min_length": 1, "bleu": 35.0, "count": 10},
            {"bucket": "6-10", "min_length": 6, "bleu": 30.0, "count": 8},
            {"bucket": "21+", "min_length": 21, "bleu": 26.0, "count": 2},
        ],
        "no attention": [
            {"bucket": "6-10", "min_length": 6, "bleu": 20.0, "count": 8},
            {"bucket": "1-5", "min_length": 1, "bleu": 33.0, "count": 10},
        ],
    }
    assert_png(plot_bleu_by_length(runs, tmp_path / "bleu.png", title="BLEU"))


@pytest.mark.parametrize(
    "runs, match",
    [({}, "non-empty"), ({"a": [{"bleu": 1.0}]}, "'bucket' and 'bleu'")],
)
def test_plot_bleu_by_length_invalid(tmp_path, runs, match):
    with pytest.raises(ValueError, match=match):
        plot_bleu_by_length(runs, tmp_path / "bleu.png")


def test_plot_training_curves(tmp_path):
    history = {
        "loss": [3.0, 2.0, 1.5],
        "masked_accuracy": [0.2, 0.4, 0.5],
        "val_loss": [3.1, 2.5, 2.2],
        "val_masked_accuracy": [0.2, 0.35, 0.4],
        "learning_rate": [1e-3, 1e-3, 5e-4],
    }
    path = plot_training_curves(history, str(tmp_path / "curves.png"))
    assert str(path) == str(tmp_path / "curves.png")
    pixels = assert_png(path)
    # Three panels side by side: loss, masked_accuracy, learning_rate.
    assert pixels.shape[1] > 2 * pixels.shape[0]


@pytest.mark.parametrize(
    "history, match",
    [({}, "non-empty"), ({"loss": []}, r"history\['loss'\]"), ({"loss": ["a"]}, "numbers")],
)
def test_plot_training_curves_invalid(tmp_path, history, match):
    with pytest.raises(ValueError, match=match):
        plot_training_curves(history, tmp_path / "curves.png")


def test_plots_leave_no_global_pyplot_state(tmp_path):
    import sys

    plot_attention(np.eye(2), ["a", "b"], ["x", "y"], tmp_path / "a.png")
    if "matplotlib.pyplot" in sys.modules:  # imported by someone else
        import matplotlib.pyplot as plt

        assert plt.get_fignums() == []


def test_format_alignment_argmax():
    weights = np.array(
        [
            [0.80, 0.10, 0.05, 0.05],
            [0.10, 0.70, 0.10, 0.10],
            [0.00, 0.10, 0.85, 0.05],
            [0.00, 0.00, 0.04, 0.96],
        ]
    )
    text = format_alignment(weights, SOURCE, TARGET)
    assert text == (
        "je      -> I      0.80\n"
        "suis    -> am     0.70\n"
        "heureux -> happy  0.85\n"
        ".       -> .      0.96"
    )


def test_format_alignment_heatmap():
    weights = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 0.12]])
    text = format_alignment(weights, ["I", "am"], ["je", "suis", "là"], style="heatmap")
    # Ramp " .:-=+*#%@": 1.0 -> "@", 0.5 -> "=" (rint(4.5) = 4), 0.12 -> "." (rint(1.08) = 1).
    assert text.split("\n") == ["     I am", "je   @", "suis = =", "là     ."]


def test_format_alignment_edge_cases():
    assert format_alignment(np.zeros([0, 2]), ["a", "b"], []) == ""
    with pytest.raises(ValueError, match="style='bars'"):
        format_alignment(np.eye(2), ["a", "b"], ["x", "y"], style="bars")


def test_docstring_examples():
    import doctest

    import keras_attention.plotting.attention_plots as module

    results = doctest.testmod(module, extraglobs={"np": np})
    assert results.attempted > 0 and results.failed == 0


@pytest.mark.parametrize(
    "tokens, cut",
    [
        (["le", "chat", "dort", "dort", "dort", "dort", "dort", "dort"], 3),  # period 1
        (["a", "b", "c", "d", "c", "d", "c", "d"], 4),  # period 2, three times
        (["x"] + ["p", "q", "r"] * 3, 4),  # period 3
        (["un", "deux", "trois"], None),
        (["ha", "ha", "ha"], None),  # a short repetition is not a loop (min_span 6)
        (["a", "b", "a", "b", "c"], None),  # the tail must repeat to the end
        ([], None),
    ],
)
def test_repetition_start(tokens, cut):
    assert repetition_start(tokens) == cut
    if cut is not None:
        # What is cut is the kept loop's cycle, repeated whole to the end.
        removed = tokens[cut:]
        assert any(
            len(removed) % p == 0 and removed == tokens[cut - p : cut] * (len(removed) // p)
            for p in range(1, cut + 1)
        )


def test_degenerate_output_is_cut_and_capped(tmp_path):
    """A greedy loop of 50 tokens over 60 source tokens: a bounded image, notes in the title."""
    target = ["ceci", "est"] + ["un", "test"] * 24
    source = [f"w{i}" for i in range(60)]
    weights = np.full((len(target), len(source)), 1 / len(source))
    path = plot_attention(weights, source, target, tmp_path / "loop.png", title="x " * 200)
    with Image.open(path) as image:
        width, height = image.size
    assert width <= 1200 and height <= 1200, image.size
    small = plot_attention(weights[:4], source, target[:4], tmp_path / "s.png", max_tokens=None)
    with Image.open(small) as image:
        assert image.size[0] <= 1200  # 60 columns, but the figure is capped too
    with pytest.raises(ValueError, match="max_tokens"):
        plot_attention(weights, source, target, tmp_path / "bad.png", max_tokens=0)


def test_plot_attention_title_notes(tmp_path, monkeypatch):
    """What was cut is said in the title."""
    titles = []
    from matplotlib.axes import Axes

    original = Axes.set_title

    def record(self, label, *args, **kwargs):
        titles.append(label)
        return original(self, label, *args, **kwargs)

    monkeypatch.setattr(Axes, "set_title", record)
    target = ["a", "b"] + ["c"] * 48
    plot_attention(np.ones((50, 45)) / 45, [f"s{i}" for i in range(45)], target,
                   tmp_path / "a.png", title="hello " * 100, decoding="beam search, width 4")  # fmt: skip
    text = " ".join(titles[-1].split())
    assert text.startswith("hello hello") and len(text) < 400
    assert "hello… beam search, width 4; cut after token 3 of 50: the rest repeats" in text
    assert "first 40 of 45 source tokens" in text
    plot_attention(np.ones((45, 2)) / 2, ["s", "t"], [f"o{i}" for i in range(45)],
                   tmp_path / "b.png")  # fmt: skip
    assert titles[-1] == "first 40 of 45 output tokens"
