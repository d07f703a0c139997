"""`LiteRTSettings`: what a LiteRT export decides about its models."""

from __future__ import annotations

import dataclasses
from typing import Any

from keras_attention.decoding_defaults import DEFAULT_BEAM_WIDTH
from keras_attention.shortlist.defaults import DEFAULT_FREQUENT
from keras_attention_client.litert_contract import MODES, WEIGHTS
from keras_attention_client.wire.decoding_options import DEFAULT_LENGTH_PENALTY


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True)
class LiteRTSettings:
    """The models of a LiteRT export (`LiteRTExporter`).

    Args:
        beam_width: int >= 2, the `beam` model's beam width. Defaults to
            `DEFAULT_BEAM_WIDTH` (4).
        length_penalty: float >= 0, its GNMT length penalty. Defaults to
            `DEFAULT_LENGTH_PENALTY`.
        n_best: int in `[1, beam_width]`, the hypotheses the `beam` model
            returns per sentence, or `None` (the default) for `beam_width`.
        attention_width: int >= 1, the source columns the models take, or
            `None` (the default) for the source vectorizer's `max_length`.
        weights: one of `keras_attention_client.litert_contract.WEIGHTS`:
            `"float32"` (the default), `"float16"` or `"int8"`.
        modes: the decoding modes to write, some of `MODES`. Defaults to all.
        shortlist: `K`, an int >= 1: the models decode over a vocabulary
            shortlist of `K` target ids per source id
            (`VocabularyShortlist.from_run`, as a SavedModel's `--shortlist
            K`); `None` (the default): over the whole vocabulary.
        shortlist_frequent: int >= 0, the most frequent target ids the
            shortlist always keeps. Defaults to `DEFAULT_FREQUENT` (300).

    Raises:
        ValueError: a value out of range.
    """

    beam_width: int = DEFAULT_BEAM_WIDTH
    length_penalty: float = DEFAULT_LENGTH_PENALTY
    n_best: int | None = None
    attention_width: int | None = None
    weights: str = "float32"
    modes: tuple[str, ...] = MODES
    shortlist: int | None = None
    shortlist_frequent: int = DEFAULT_FREQUENT

    def __post_init__(self):
        if self.weights not in WEIGHTS:
            raise ValueError(
                f"`weights` must be one of {WEIGHTS}. Received: weights={self.weights!r}"
            )
        modes = tuple(self.modes)
        if not modes or any(mode not in MODES for mode in modes):
            raise ValueError(f"`modes` must be some of {MODES}. Received: modes={self.modes!r}")
        object.__setattr__(self, "modes", modes)
        if not _is_int(self.beam_width) or self.beam_width < 2:
            raise ValueError(
                f"`beam_width` must be an int >= 2. Received: beam_width={self.beam_width!r}"
            )
        if not (isinstance(self.length_penalty, (int, float)) and self.length_penalty >= 0):
            raise ValueError(
                f"`length_penalty` must be a number >= 0. Received: {self.length_penalty!r}"
            )
        object.__setattr__(self, "length_penalty", float(self.length_penalty))
        n_best = self.n_best
        if n_best is not None and (not _is_int(n_best) or not 1 <= n_best <= self.beam_width):
            raise ValueError(
                f"`n_best` must be an int in [1, beam_width={self.beam_width}] or None. "
                f"Received: n_best={n_best!r}"
            )
        if self.shortlist is not None and (not _is_int(self.shortlist) or self.shortlist < 1):
            raise ValueError(
                f"`shortlist` must be an int >= 1 or None. Received: shortlist={self.shortlist!r}"
            )
        if not _is_int(self.shortlist_frequent) or self.shortlist_frequent < 0:
            raise ValueError(
                "`shortlist_frequent` must be an int >= 0. "
                f"Received: shortlist_frequent={self.shortlist_frequent!r}"
            )
        width = self.attention_width
        if width is not None and (not _is_int(width) or width < 1):
            raise ValueError(
                f"`attention_width` must be an int >= 1 or None. Received: attention_width={width!r}"
            )

    @property
    def beam_n_best(self) -> int:
        """The hypotheses the `beam` model returns: `n_best`, or `beam_width`."""
        return self.beam_width if self.n_best is None else self.n_best

    @classmethod
    def of(cls, settings: LiteRTSettings | None = None, **changes: Any) -> LiteRTSettings:
        """`settings` (default: `LiteRTSettings()`) with `changes` (fields by name)."""
        settings = cls() if settings is None else settings
        if not isinstance(settings, cls):
            raise TypeError(f"`settings` must be a LiteRTSettings. Received: {settings!r}")
        return dataclasses.replace(settings, **changes) if changes else settings
