"""The translation recipe's attention settings: what `Seq2Seq(attention="luong")` and
`keras-attention train` turn on beyond the plain equations.

The layers compute their score exactly as written unless asked
(`LuongAttention(scale=..., scale_by_dimension=...)`); the recipe asks for the
options that measured better (docs/results.md, docs/research/model-notes.md).
Plain Python, so a `TrainConfig` can be read without TensorFlow.
"""

from __future__ import annotations

RECIPE_SCALES = {"score_scale": ("cosine", "scaled_dot"), "scale_by_dimension": ("general",)}
"""The Luong scores for which the recipe turns on each option: a learned scale `g` for
cosine and scaled_dot, and the division by sqrt(d) for general."""

RECIPE_CONDITIONAL = True
"""Whether the recipe's Bahdanau decoder queries with the conditional GRU's state (GRU
cells only)."""


def luong_scaling(score: str) -> dict[str, bool]:
    """The recipe's `LuongAttention` scaling arguments for `score`.

    >>> luong_scaling("cosine")
    {'scale': True, 'scale_by_dimension': False}
    >>> luong_scaling("general")
    {'scale': False, 'scale_by_dimension': True}
    """
    return {
        "scale": score in RECIPE_SCALES["score_scale"],
        "scale_by_dimension": score in RECIPE_SCALES["scale_by_dimension"],
    }


def conditional_query(attention: str, cell: str) -> bool:
    """Whether the recipe's decoder for `attention` and `cell` uses the conditional GRU."""
    return RECIPE_CONDITIONAL and attention == "bahdanau" and cell == "gru"
