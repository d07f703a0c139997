"""Plots of a translator: attention heatmaps, BLEU by sentence length, training curves.

Figures are drawn on `matplotlib.figure.Figure` objects and saved with the Agg
renderer, without pyplot: no display is needed, no global backend is switched,
and nothing is kept open after a call. Each function returns the path it
wrote; the format follows the file suffix (`.png` when there is none).
"""

from __future__ import annotations

import math
import os
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

PathLike = str | os.PathLike


def _check_alignment(
    weights: np.ndarray, source_tokens: Sequence[str], target_tokens: Sequence[str]
) -> np.ndarray:
    """Returns `weights` as a float array, or raises `ValueError`."""
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 2:
        raise ValueError(
            "`weights` must have shape (len(target_tokens), len(source_tokens)). "
            f"Received: weights.shape={weights.shape}"
        )
    expected = (len(target_tokens), len(source_tokens))
    if weights.shape != expected:
        raise ValueError(
            f"`weights` must have shape (len(target_tokens), len(source_tokens)) = {expected}. "
            f"Received: weights.shape={weights.shape}"
        )
    if not np.all(np.isfinite(weights)):
        raise ValueError("`weights` must be finite. Received: NaN or infinite values")
    return weights


def _save(figure: Figure, path: PathLike) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format=path.suffix[1:].lower() or "png")
    return path


MAX_HEATMAP_TOKENS = 40
"""Default cap on the rows (output tokens) and columns (source tokens) of a heatmap."""

_MAX_FIGURE_INCHES = 12.0
_MAX_TITLE_CHARACTERS = 240


def repetition_start(tokens: Sequence[str], min_repeats: int = 3, min_span: int = 6) -> int | None:
    """Where a degenerate output's loop begins, if its tail is one cycle repeated.

    Finds the longest tail of `tokens` made of one cycle of tokens repeated
    at least `min_repeats` times and covering at least `min_span` tokens
    (`"le chat le chat le chat"`, a greedy loop), and returns the index just
    after its first cycle: `tokens[:index]` keeps the text up to and
    including one copy of the loop.

    Args:
        tokens: the output tokens.
        min_repeats: repetitions of the cycle needed to call it a loop.
        min_span: tokens the repeated tail must cover.

    Returns:
        The cut index, or `None` when there is no such loop.

    Example:

    >>> repetition_start(["a", "b", "c", "d", "c", "d", "c", "d"])
    4
    >>> repetition_start(["un", "deux", "trois"]) is None
    True
    """
    tokens = list(tokens)
    best: int | None = None
    for period in range(1, len(tokens) // min_repeats + 1):
        cycle = tokens[len(tokens) - period :]
        repeats = 1
        while (repeats + 1) * period <= len(tokens) and tokens[
            len(tokens) - (repeats + 1) * period : len(tokens) - repeats * period
        ] == cycle:
            repeats += 1
        if repeats >= min_repeats and repeats * period >= min_span:
            cut = len(tokens) - repeats * period + period
            if best is None or cut < best:
                best = cut
    return best


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plot_attention(
    weights: np.ndarray,
    source_tokens: Sequence[str],
    target_tokens: Sequence[str],
    path: PathLike,
    title: str | None = None,
    max_tokens: int | None = MAX_HEATMAP_TOKENS,
    truncate_loops: bool = True,
    decoding: str | None = None,
) -> Path:
    """Draws an attention heatmap: one row per target token, one column per source token.

    Weights in [0, 1] (attention probabilities) use a fixed 0-1 colour scale so
    heatmaps are comparable; other values use their own range. An empty
    translation (zero rows) gives a figure saying so.

    The figure stays readable whatever the input: a degenerate output whose
    tail loops (`repetition_start`) is cut after the loop's first cycle,
    rows and columns are capped at `max_tokens`, the figure at 12 x 12
    inches, and the title is wrapped and shortened; what was cut is said in
    the title.

    Args:
        weights: array of shape `(len(target_tokens), len(source_tokens))`,
            `weights[t, s]` = attention of output step `t` on source token `s`.
        source_tokens: the source tokens (x axis).
        target_tokens: the generated tokens (y axis).
        path: the file to write (parent directories are created).
        title: optional figure title (shortened past 240 characters).
        max_tokens: the most output rows and source columns drawn (`None`:
            no cap).
        truncate_loops: cut a looping output after the loop's first cycle.
        decoding: which decoding made the output, e.g. `"greedy decoding"`;
            its own line of the title, never shortened.

    Returns:
        The path written, as a `pathlib.Path`.

    Raises:
        ValueError: if the shape of `weights` does not match the tokens, it
            holds NaN or infinite values, or `max_tokens` is not positive.

    Example:

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> path = plot_attention(np.eye(2), ["I", "am"], ["je", "suis"], f"{folder}/a.png")
    >>> path.name, path.read_bytes()[:4]
    ('a.png', b'\\x89PNG')
    """
    weights = _check_alignment(weights, source_tokens, target_tokens)
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
        raise ValueError(f"`max_tokens` must be a positive int or None. Received: {max_tokens!r}")
    source_tokens, target_tokens = list(source_tokens), list(target_tokens)
    notes = []
    total_rows, total_cols = weights.shape
    cut = repetition_start(target_tokens) if truncate_loops else None
    if cut is not None:
        notes.append(f"cut after token {cut} of {total_rows}: the rest repeats it in a loop")
        weights, target_tokens = weights[:cut], target_tokens[:cut]
    if max_tokens is not None and len(target_tokens) > max_tokens:
        weights, target_tokens = weights[:max_tokens], target_tokens[:max_tokens]
        notes.append(f"first {max_tokens} of {total_rows} output tokens")
    if max_tokens is not None and total_cols > max_tokens:
        weights, source_tokens = weights[:, :max_tokens], source_tokens[:max_tokens]
        notes.append(f"first {max_tokens} of {total_cols} source tokens")
    rows, cols = weights.shape
    width = min(_MAX_FIGURE_INCHES, max(3.5, 0.45 * cols + 2.0))
    height = min(_MAX_FIGURE_INCHES, max(2.5, 0.4 * rows + 1.5))
    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    axes = figure.add_subplot()
    if weights.size == 0:
        axes.text(0.5, 0.5, "(empty translation)", ha="center", va="center")
        axes.set_axis_off()
    else:
        in_unit_range = weights.min() >= 0.0 and weights.max() <= 1.0
        image = axes.imshow(
            weights,
            cmap="viridis",
            aspect="auto",
            interpolation="nearest",
            vmin=0.0 if in_unit_range else None,
            vmax=1.0 if in_unit_range else None,
        )
        font = "medium" if max(rows, cols) <= 25 else "small"
        axes.set_xticks(range(cols), labels=source_tokens, rotation=90, fontsize=font)
        axes.set_yticks(range(rows), labels=target_tokens, fontsize=font)
        axes.set_xlabel("source")
        axes.set_ylabel("output")
        figure.colorbar(image, ax=axes, fraction=0.05)
    full_title = "\n".join(
        part
        for part in (
            title and _shorten(title, _MAX_TITLE_CHARACTERS),
            "; ".join(([decoding] if decoding else []) + notes),
        )
        if part
    )
    if full_title:
        # About 9 characters of a medium title fit in an inch.
        columns = max(30, int(width * 9))
        wrapped = "\n".join(textwrap.fill(line, columns) for line in full_title.split("\n"))
        axes.set_title(wrapped, fontsize="medium")
    return _save(figure, path)


def plot_bleu_by_length(
    runs: Mapping[str, Sequence[Mapping]], path: PathLike, title: str | None = None
) -> Path:
    """BLEU against source-sentence length, one line per run (Bahdanau et al., Figure 2).

    Args:
        runs: run name -> the output of
            `keras_attention.evaluation.bleu_by_length` (dicts with at least
            `"bucket"` and `"bleu"`; `"min_length"` orders the buckets). Runs
            may miss buckets (left as gaps).
        path: the file to write.
        title: optional figure title.

    Returns:
        The path written, as a `pathlib.Path`.

    Raises:
        ValueError: if `runs` is empty or a row lacks `"bucket"` / `"bleu"`.
    """
    if not isinstance(runs, Mapping) or len(runs) == 0:
        raise ValueError(f"`runs` must be a non-empty dict of run name -> rows. Received: {runs!r}")
    order: dict[str, float] = {}
    for name, rows in runs.items():
        for row in rows:
            if not isinstance(row, Mapping) or "bucket" not in row or "bleu" not in row:
                raise ValueError(
                    f"Each row of run {name!r} must be a dict with 'bucket' and 'bleu'. "
                    f"Received: {row!r}"
                )
            order.setdefault(str(row["bucket"]), row.get("min_length", len(order)))
    labels = sorted(order, key=lambda label: order[label])
    position = {label: index for index, label in enumerate(labels)}

    figure = Figure(figsize=(6.0, 4.0), dpi=100, layout="constrained")
    axes = figure.add_subplot()
    for name, rows in runs.items():
        values = [math.nan] * len(labels)
        for row in rows:
            if row["bleu"] is not None:
                values[position[str(row["bucket"])]] = float(row["bleu"])
        axes.plot(range(len(labels)), values, marker="o", label=str(name))
    axes.set_xticks(range(len(labels)), labels=labels)
    axes.set_xlabel("Source sentence length (words)")
    axes.set_ylabel("BLEU")
    axes.set_ylim(bottom=0.0)
    axes.grid(True, alpha=0.3)
    axes.legend()
    if title:
        axes.set_title(title)
    return _save(figure, path)


def plot_training_curves(
    history: Mapping[str, Sequence[float]], path: PathLike, title: str | None = None
) -> Path:
    """Training curves from a Keras `History.history`-like dict.

    One panel per metric; `name` and `val_name` share a panel (training and
    validation), x axis = epoch (1-based).

    Args:
        history: metric name -> one value per epoch, e.g. `{"loss": [...],
            "val_loss": [...], "masked_accuracy": [...], ...}`.
        path: the file to write.
        title: optional figure title.

    Returns:
        The path written, as a `pathlib.Path`.

    Raises:
        ValueError: if `history` is empty or a metric has no values or a
            non-numeric value.
    """
    if not isinstance(history, Mapping) or len(history) == 0:
        raise ValueError(
            f"`history` must be a non-empty dict of metric -> values. Received: {history!r}"
        )
    curves: dict[str, np.ndarray] = {}
    for name, values in history.items():
        try:
            array = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            array = None
        if array is None or array.ndim != 1 or array.size == 0:
            raise ValueError(
                f"`history[{name!r}]` must be a non-empty list of numbers. Received: {values!r}"
            )
        curves[str(name)] = array
    panels: list[str] = []
    for name in curves:
        base = name[4:] if name.startswith("val_") and name[4:] in curves else name
        if base not in panels:
            panels.append(base)

    columns = min(3, len(panels))
    panel_rows = math.ceil(len(panels) / columns)
    figure = Figure(figsize=(4.0 * columns, 3.0 * panel_rows), dpi=100, layout="constrained")
    for index, base in enumerate(panels):
        axes = figure.add_subplot(panel_rows, columns, index + 1)
        pair = f"val_{base}" in curves and base in curves
        for name, label in ((base, "train"), (f"val_{base}", "validation")):
            if name in curves:
                epochs = np.arange(1, curves[name].size + 1)
                axes.plot(epochs, curves[name], marker=".", label=label if pair else name)
        axes.set_title(base)
        axes.set_xlabel("epoch")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.grid(True, alpha=0.3)
        axes.legend()
    if title:
        figure.suptitle(title)
    return _save(figure, path)


# Darker characters for larger weights, from 0 to 1.
_RAMP = " .:-=+*#%@"


def format_alignment(
    weights: np.ndarray,
    source_tokens: Sequence[str],
    target_tokens: Sequence[str],
    style: str = "argmax",
) -> str:
    """A compact text view of an attention matrix, for terminals.

    - `style="argmax"`: one line per output token: the token, `->`, the
      source token it attends to most, and that weight (2 decimals).
    - `style="heatmap"`: a header of source tokens, then one row per output
      token with one character per source token, from `" "` (0) to `"@"` (1),
      placed under the first letter of that source token.

    Args:
        weights: array `(len(target_tokens), len(source_tokens))`.
        source_tokens: the source tokens.
        target_tokens: the output tokens.
        style: `"argmax"` or `"heatmap"`.

    Returns:
        The text, lines joined by `"\\n"` (no trailing newline; `""` for an
        empty translation).

    Raises:
        ValueError: on a shape mismatch, non-finite weights, or an unknown style.

    Example:

    >>> print(format_alignment([[0.9, 0.1], [0.2, 0.8]], ["I", "am"], ["je", "suis"]))
    je   -> I   0.90
    suis -> am  0.80
    """
    if style not in ("argmax", "heatmap"):
        raise ValueError(f"`style` must be 'argmax' or 'heatmap'. Received: style={style!r}")
    weights = _check_alignment(weights, source_tokens, target_tokens)
    if weights.shape[0] == 0:
        return ""
    target_width = max(len(token) for token in target_tokens)
    if style == "argmax" or weights.shape[1] == 0:
        if weights.shape[1] == 0:
            return "\n".join(
                f"{token.ljust(target_width)} -> (no source)" for token in target_tokens
            )
        best = weights.argmax(axis=1)
        source_width = max(len(source_tokens[j]) for j in best)
        lines = [
            f"{token.ljust(target_width)} -> {source_tokens[j].ljust(source_width)}"
            f"  {weights[i, j]:.2f}"
            for i, (token, j) in enumerate(zip(target_tokens, best, strict=True))
        ]
        return "\n".join(lines)
    widths = [max(1, len(token)) for token in source_tokens]
    header = (
        " " * target_width
        + " "
        + " ".join(t.ljust(w) for t, w in zip(source_tokens, widths, strict=True))
    )
    lines = [header.rstrip()]
    levels = np.clip(np.rint(weights * (len(_RAMP) - 1)), 0, len(_RAMP) - 1).astype(int)
    for token, row in zip(target_tokens, levels, strict=True):
        cells = " ".join(_RAMP[level].ljust(w) for level, w in zip(row, widths, strict=True))
        lines.append(f"{token.ljust(target_width)} {cells}".rstrip())
    return "\n".join(lines)
