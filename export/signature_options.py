"""`SignatureOptions`: which signatures an export has and how they decode."""

from __future__ import annotations

import dataclasses
from typing import Any

from keras_attention.decoding_defaults import DEFAULT_BEAM_WIDTH
from keras_attention_client.wire.decoding_options import DEFAULT_LENGTH_PENALTY, DecodingOptions

DEFAULT_MAX_BEAM_WIDTH = 16
"""The largest `beam_width` a request may ask for, unless the export sets another cap."""


@dataclasses.dataclass(frozen=True)
class SignatureOptions:
    """The signatures of a translator export and their decoding (see `TranslationSignatures`).

    Args:
        beam_width: int >= 2, the `beam_search` beam width (fixed in its
            graph). Defaults to `DEFAULT_BEAM_WIDTH` (4).
        length_penalty: float >= 0, the GNMT length penalty of
            `beam_search`, and the default `length_penalty` input of
            `search`. Defaults to `DEFAULT_LENGTH_PENALTY`.
        max_beam_width: int >= `beam_width`, the largest `beam_width` input
            accepted (recorded in the manifest). `None` (the default):
            `max(DEFAULT_MAX_BEAM_WIDTH, beam_width)`.
        decoding_inputs: whether the `search` and `sample` signatures exist.
            `False` gives the signatures of exports made before decoding
            inputs existed. Defaults to `True`.
        jit_compile: compile the decoding with XLA (TF Serving on CPU then
            needs `--xla_cpu_compilation_enabled=true`). Defaults to `False`.
        score_signature: add `score_translation`. Defaults to `True`.

    Raises:
        ValueError: a `beam_width` or `max_beam_width` out of range (a bad
            `length_penalty` fails when the beam search is built).
    """

    beam_width: int = DEFAULT_BEAM_WIDTH
    length_penalty: float = DEFAULT_LENGTH_PENALTY
    max_beam_width: int | None = None
    decoding_inputs: bool = True
    jit_compile: bool = False
    score_signature: bool = True

    def __post_init__(self):
        beam_width, max_beam_width = self.beam_width, self.max_beam_width
        if isinstance(beam_width, bool) or not isinstance(beam_width, int) or beam_width < 2:
            raise ValueError(
                "`beam_width` must be an integer >= 2 (beam width 1 is `serving_default`). "
                f"Received: beam_width={beam_width!r}"
            )
        if max_beam_width is not None and (
            isinstance(max_beam_width, bool)
            or not isinstance(max_beam_width, int)
            or max_beam_width < beam_width
        ):
            raise ValueError(
                "`max_beam_width` must be an integer >= beam_width. "
                f"Received: max_beam_width={max_beam_width!r}, beam_width={beam_width}"
            )

    @classmethod
    def of(cls, options: SignatureOptions | None = None, **changes: Any) -> SignatureOptions:
        """`options` (default: `SignatureOptions()`) with `changes`.

        Raises:
            TypeError: `options` is not a `SignatureOptions`.
        """
        options = cls() if options is None else options
        if not isinstance(options, cls):
            raise TypeError(f"`options` must be a SignatureOptions. Received: {options!r}")
        return dataclasses.replace(options, **changes) if changes else options

    @property
    def beam_cap(self) -> int:
        """The largest `beam_width` input accepted (`max_beam_width` or its default)."""
        if self.max_beam_width is not None:
            return self.max_beam_width
        return max(DEFAULT_MAX_BEAM_WIDTH, self.beam_width)

    @property
    def beam_search(self) -> DecodingOptions:
        """The decoding of the `beam_search` signature."""
        return DecodingOptions(beam_width=self.beam_width, length_penalty=self.length_penalty)
