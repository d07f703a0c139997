"""The plots of `keras-attention plot`: heatmaps, BLEU by length, training curves."""

from __future__ import annotations

import csv
import os
from pathlib import Path

from keras_attention.data import group_references, load_corpus
from keras_attention.inference.trained_run import load_translator
from keras_attention.plotting.attention_plots import (
    plot_attention,
    plot_bleu_by_length,
    plot_training_curves,
)
from keras_attention.runs import run_state
from keras_attention.runs.run_directory import RunDirectory


def read_history(path: Path) -> dict[str, list[float]]:
    """history.csv (Keras CSVLogger) as `{metric: [value per epoch]}`."""
    history: dict[str, list[float]] = {}
    with open(path, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            for key, value in row.items():
                if key != "epoch" and value not in ("", None):
                    history.setdefault(key, []).append(float(value))
    return history


def _evaluation_label(run: RunDirectory, evaluation: dict) -> str:
    """The run's name, flagged when its evaluation is stale or of a partial model."""
    label = run.path.name
    current = run_state.evaluation_is_current(run, evaluation)
    if current is False:
        label += " (stale evaluation)"
    elif evaluation.get("training_state") not in (None, run_state.COMPLETED):
        label += f" (partial: epoch {evaluation.get('epochs')})"
    return label


def plot_runs(
    run_dirs: list[str | os.PathLike],
    sentences: list[str] | None = None,
    out: str | os.PathLike | None = None,
    num_test_sentences: int = 3,
) -> list[Path]:
    """Writes the plots of one or more runs; returns the PNG paths.

    - `attention_NN.png`: attention heatmaps of the first run for `sentences`
      (default: the first `num_test_sentences` sources of its test split).
    - `bleu_by_length.png` (greedy) and `bleu_by_length_beam.png` (beam
      search): BLEU vs source length, one line per evaluated run (needs
      `keras-attention evaluate` first), named by directory and flagged
      "(stale evaluation)" when the model changed since it was evaluated.
    - `training_curves_<run>.png`: each run's history.csv.
    """
    runs = [RunDirectory(path) for path in run_dirs]
    for run in runs:
        run.require_trained()
    out_dir = Path(out) if out else runs[0].plots
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    if not sentences:
        grouped = group_references(load_corpus(runs[0].test_split).pairs)
        sentences = [source for source, _ in grouped[:num_test_sentences]]
    translator = load_translator(runs[0].path)
    for index, result in enumerate(translator.translate_all(list(sentences))):
        written.append(
            plot_attention(
                result.attention,
                result.source_tokens,
                result.tokens,
                out_dir / f"attention_{index:02d}.png",
                title=f"{sentences[index]} → {result.text}",
                decoding="greedy decoding",
            )
        )

    for decoding, filename in (
        ("greedy", "bleu_by_length.png"),
        ("beam", "bleu_by_length_beam.png"),
    ):
        by_length = {}
        widths = set()
        for run in runs:
            evaluation = run.read_metrics().get("evaluation", {})
            if decoding in evaluation:
                by_length[_evaluation_label(run, evaluation)] = evaluation[decoding][
                    "bleu_by_length"
                ]
                widths.add(evaluation[decoding].get("beam_width"))
        if by_length:
            if decoding == "beam":
                how = f"beam search, width {'/'.join(str(w) for w in sorted(widths, key=str))}"
            else:
                how = "greedy decoding"
            title = f"BLEU by source length ({how})"
            written.append(plot_bleu_by_length(by_length, out_dir / filename, title=title))

    for run in runs:
        if run.history.is_file():
            history = read_history(run.history)
            if history:
                written.append(
                    plot_training_curves(
                        history,
                        out_dir / f"training_curves_{run.path.name}.png",
                        title=f"{run.path.name}: teacher-forced training (no decoding)",
                    )
                )
    return [Path(p) for p in written]
