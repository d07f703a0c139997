"""`SpacingRules`: a language's spacing around punctuation, measured on its text."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

SPACED_MARKS = "!?:;%"
"""Marks whose preceding space differs between languages: French writes `Va !`,
`Quoi ?`, `note :`, `50 %`; English, Spanish and German write `Go!`, `50%`."""

_MIN_OCCURRENCES = 3  # fewer uses of a mark than this are not enough to go by


def _mark_counts(texts: Iterable[str], mark: str) -> tuple[int, int]:
    """`(spaced, tight)`: uses of `mark` as punctuation with / without a space before.

    A use is the first mark of a run (`?!` counts once, for `?`), not at the
    start of the text, followed by a space, another mark or the end (so
    `10:30` and `http://` do not count).
    """
    pattern = re.compile(rf"(.){re.escape(mark)}(?=$|[\s.!?:;%»)\"'])")
    spaced = tight = 0
    for text in texts:
        for match in pattern.finditer(text):
            before = match.group(1)
            if before == " ":
                spaced += 1
            elif before not in SPACED_MARKS + ".":
                tight += 1
    return spaced, tight


@dataclasses.dataclass(frozen=True)
class SpacingRules:
    """How a language spaces punctuation, for `detokenize` to write it.

    The word tokenizer splits punctuation off words (`"Va !"` and `"Go!"`
    both give a word and a mark), so detokenization has to know where the
    language puts a space back. These rules hold the conventions that differ
    between languages; the rest (no space before `. , ) ]`, none after
    `( [ ¿ ¡`, elided words and hyphen pieces glued) is the same for all and
    lives in `detokenize`.

    `SpacingRules.measure(texts)` reads them off a language's own text (the
    training targets of a run), so a model writes its target language's
    typography without being told which language it is.

    Args:
        space_before: str, the marks of `SPACED_MARKS` (`! ? : ; %`) written
            after a space (`"!?:;%"` for French, `""` for English).
        space_inside_guillemets: bool, whether `« »` enclose their text with
            spaces (`« oui »`, French) or not (`«sí»`, Spanish).

    Example:

    >>> SpacingRules.measure(["Va !", "Quoi ?", "Où ça ?", "Non !"]).space_before
    '!?:;%'
    >>> SpacingRules.measure(["¿Dónde está?", "¡Hola!", "¿Qué?"]).space_before
    ''
    """

    space_before: str = ""
    space_inside_guillemets: bool = False

    def __post_init__(self):
        if not isinstance(self.space_before, str) or set(self.space_before) - set(SPACED_MARKS):
            raise ValueError(
                f"`space_before` must hold marks of {SPACED_MARKS!r} only. "
                f"Received: space_before={self.space_before!r}"
            )
        # One canonical spelling, so equal rules compare and serialize equal.
        ordered = "".join(mark for mark in SPACED_MARKS if mark in self.space_before)
        object.__setattr__(self, "space_before", ordered)
        object.__setattr__(self, "space_inside_guillemets", bool(self.space_inside_guillemets))

    @classmethod
    def french(cls) -> SpacingRules:
        """French typography as the bundled corpus writes it: `Va !`, `Quoi ?`, `note :`, `« oui »`.

        (`50%` stays tight: so do most of the corpus's French sentences.)
        """
        return cls(space_before="!?:;", space_inside_guillemets=True)

    @classmethod
    def plain(cls) -> SpacingRules:
        """No space before any mark, none inside guillemets (English, Spanish, German...)."""
        return cls()

    @classmethod
    def measure(cls, texts: Iterable[str]) -> SpacingRules:
        """The rules most of `texts` follow (normalized text: single spaces).

        Each mark of `SPACED_MARKS` takes a space before it when most of its
        uses in `texts` have one; a mark used fewer than 3 times follows the
        majority of all the marks' uses (and the plain rule, no space, when
        those are fewer than 3 too). Guillemets are spaced inside when most
        `« »` pairs are.
        """
        texts = list(texts)
        counts = {mark: _mark_counts(texts, mark) for mark in SPACED_MARKS}
        all_spaced = sum(spaced for spaced, _ in counts.values())
        all_tight = sum(tight for _, tight in counts.values())
        space_before = ""
        for mark, (spaced, tight) in counts.items():
            if spaced + tight < _MIN_OCCURRENCES:  # too rare: follow the other marks
                spaced, tight = all_spaced, all_tight
            if spaced + tight >= _MIN_OCCURRENCES and spaced > tight:
                space_before += mark
        spaced = tight = 0
        for text in texts:
            for match in re.finditer(r"«( ?)[^«»]*?( ?)»", text):
                if match.group(1) and match.group(2):
                    spaced += 1
                elif not match.group(1) and not match.group(2):
                    tight += 1
        return cls(space_before=space_before, space_inside_guillemets=spaced > tight)

    def get_config(self) -> dict:
        return {
            "space_before": self.space_before,
            "space_inside_guillemets": self.space_inside_guillemets,
        }

    @classmethod
    def from_config(cls, config: dict) -> SpacingRules:
        unknown = sorted(set(config) - {"space_before", "space_inside_guillemets"})
        if unknown:
            raise ValueError(f"Unknown spacing rule keys: {unknown}")
        return cls(**config)
