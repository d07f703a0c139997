"""Plots and text views: attention heatmaps, BLEU by sentence length, training curves.

Drawn with matplotlib's object API and the Agg renderer (no pyplot, no display).
"""

from keras_attention.plotting.attention_plots import (
    format_alignment,
    plot_attention,
    plot_bleu_by_length,
    plot_training_curves,
)

__all__ = ["format_alignment", "plot_attention", "plot_bleu_by_length", "plot_training_curves"]
