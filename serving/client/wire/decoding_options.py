"""`DecodingOptions`: how a translation is decoded, with the one set of defaults.

Plain Python, so the clients (no TensorFlow), the command lines, the
`Translator`, the export's signatures and the server all read the same value.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

DEFAULT_LENGTH_PENALTY = 0.6
"""The GNMT length penalty alpha of beam search when none is given."""

DEFAULT_TEMPERATURE = 1.0
"""The sampling temperature when none is given (the model's own distribution)."""

INT_FIELDS = ("beam_width", "n_best", "max_output_length", "top_k", "seed")
FLOAT_FIELDS = ("length_penalty", "temperature", "top_p")
SEARCH_FIELDS = ("beam_width", "n_best", "length_penalty", "max_output_length")
"""The options of greedy and beam search (the `search` signature's inputs)."""
SAMPLING_FIELDS = ("temperature", "top_k", "top_p", "seed")
"""The options that only go with `sample=True` (besides `max_output_length`)."""


@dataclasses.dataclass(frozen=True)
class DecodingOptions:
    """How to decode: greedy or beam search, or random sampling.

    A field left `None` is not given: whoever decodes applies its default
    (`DEFAULTS` for a local `Translator`; over the wire, the export's
    SignatureDef defaults, and a request with no option given stays a
    `text`-only request to `serving_default` or `beam_search`).

    Args:
        beam_width: hypotheses kept per sentence; 1 is greedy search.
            Default 1.
        n_best: translations returned per sentence, `<= beam_width`; `None`
            returns the best one without an n-best list.
        length_penalty: GNMT length penalty alpha of beam search, >= 0.
            Default `DEFAULT_LENGTH_PENALTY` (an export's own over the wire).
        max_output_length: most tokens of a translation (default: the
            translator's or the export's).
        sample: draw each translation at random instead of searching.
        temperature: with `sample`, > 0. Default `DEFAULT_TEMPERATURE`.
        top_k: with `sample`, draw from the `top_k` most probable tokens only
            (default: all).
        top_p: with `sample`, draw from the most probable tokens whose mass
            reaches `top_p`, in `(0, 1]` (default: no cut).
        seed: with `sample`, an int for repeatable draws (default: a new draw
            each time).

    Raises:
        TypeError: a value of the wrong type.
        ValueError: an int outside int32, sampling options without `sample`,
            or beam options with it. (Ranges are checked where the options
            are used: the decoding strategies, or the export's graph.)

    Example:

    >>> options = DecodingOptions(beam_width=4)
    >>> options.value("length_penalty") == DEFAULT_LENGTH_PENALTY, options.given()
    (True, {'beam_width': 4})
    """

    beam_width: int | None = None
    n_best: int | None = None
    length_penalty: float | None = None
    max_output_length: int | None = None
    sample: bool = False
    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    seed: int | None = None

    DEFAULTS: ClassVar[Mapping[str, Any]] = MappingProxyType(
        {
            "beam_width": 1,
            "length_penalty": DEFAULT_LENGTH_PENALTY,
            "temperature": DEFAULT_TEMPERATURE,
        }
    )
    """The value of an option not given, where it has one (the others stay `None`)."""

    def __post_init__(self):
        if not isinstance(self.sample, bool):
            raise TypeError(f"sample must be a bool. Received: sample={self.sample!r}")
        for name in INT_FIELDS:
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(f"{name} must be an int. Received: {name}={value!r}")
            if not -(2**31) <= int(value) < 2**31:
                raise ValueError(f"{name} must fit in int32. Received: {name}={value!r}")
        for name in FLOAT_FIELDS:
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, numbers.Real)
            ):
                raise TypeError(f"{name} must be a number. Received: {name}={value!r}")
        beam, sampling = self.conflicts()
        if beam:
            received = ", ".join(f"{name}={getattr(self, name)!r}" for name in beam)
            raise ValueError(
                "Sampling draws one translation per sentence; it cannot be combined with "
                f"beam search. Received: sample=True, {received}"
            )
        if sampling:
            raise ValueError(f"{', '.join(sampling)} only go with sample=True")

    @classmethod
    def of(cls, options: DecodingOptions | None = None, **changes: Any) -> DecodingOptions:
        """`options` (default: none given) with `changes`; a keyword API's one way in."""
        if options is None:
            return cls(**changes)
        if not isinstance(options, cls):
            raise TypeError(f"options must be a DecodingOptions. Received: {options!r}")
        return dataclasses.replace(options, **changes) if changes else options

    def conflicts(self) -> tuple[list[str], list[str]]:
        """The options given that do not go together (see `conflicts`)."""
        return conflicts(self.sample, dataclasses.asdict(self))

    def value(self, name: str) -> Any:
        """Option `name` as given, else its default (`DEFAULTS`, or `None`)."""
        value = getattr(self, name)
        return self.DEFAULTS.get(name) if value is None else value

    def given(self) -> dict[str, Any]:
        """The options given, by name (`sample` only when true)."""
        given = {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(self)
            if getattr(self, field.name) is not None
        }
        if not self.sample:
            given.pop("sample")
        return given

    @property
    def searches(self) -> bool:
        """Whether a search option is given (a request then calls the `search` signature)."""
        return any(getattr(self, name) is not None for name in SEARCH_FIELDS)

    @property
    def listed(self) -> bool:
        """Whether each sentence gets a list of `n_best` translations (`n_best > 1`)."""
        return self.n_best is not None and self.n_best > 1


def conflicts(sample: bool, values: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The options of `values` (field name -> value or `None`) that do not go with `sample`:
    `(beam options given with sampling, sampling options given without it)`.

    Beam width and n-best 1 go with sampling (one translation per sentence);
    a length penalty does not.
    """
    if sample:
        beam = [name for name in ("beam_width", "n_best") if values.get(name) not in (None, 1)]
        if values.get("length_penalty") is not None:
            beam.append("length_penalty")
        return beam, []
    return [], [name for name in SAMPLING_FIELDS if values.get(name) is not None]
