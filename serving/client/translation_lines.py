"""What the `translate` command lines print besides a translation, and the steering flags.

`--confidence` prints `confidence_line`s; `--next-words K` adds `next_words_text`;
`steering_arguments` turns `--prefix`, `--next-words`, `--constraint` and `--glossary`
into `translate`'s keywords.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence


def steering_arguments(args: argparse.Namespace, texts: Sequence[str]) -> dict:
    """`translate`'s `prefixes`, `next_words` and `constraints` from `--prefix`,
    `--next-words`, `--constraint` and `--glossary` (none given: `{}`).

    Raises:
        ValueError: a glossary line that is not `SOURCE<TAB>TARGET`.
        OSError: a glossary file that cannot be read.
    """
    from keras_attention_client.glossary import read_glossary, sentence_constraints

    steering: dict = {}
    phrases = getattr(args, "constraints", None) or []
    glossary = getattr(args, "glossary", None)
    if phrases or glossary:
        entries = read_glossary(glossary) if glossary else []
        steering["constraints"] = sentence_constraints(texts, phrases, entries)
    if args.prefix is not None:
        steering["prefixes"] = [args.prefix] * len(texts)
    if args.next_words:
        steering["next_words"] = args.next_words
    return steering


def next_words_text(next_words: Sequence[tuple[str, float]] | None) -> str:
    """`WORD:PROBABILITY ...` of `Translation.next_words` (log-probabilities), as printed.

    >>> next_words_text([("suis", -0.5), ("ne", -2.0)])
    'suis:0.61 ne:0.14'
    """
    if not next_words:
        return "-"
    return " ".join(f"{word}:{math.exp(score):.2f}" for word, score in next_words)


def confidence_line(
    text: str,
    confidence: float | None,
    tokens: Sequence[str],
    probabilities: Sequence[float] | None,
) -> str:
    """`CONFIDENCE<TAB>TEXT<TAB>TOKEN:PROBABILITY ...`, what `translate --confidence` prints.

    An export written before the confidence outputs gives `None`s: printed as `-`.

    >>> confidence_line("Je suis.", 0.5, ["je", "suis", "."], [0.25, 0.75, 0.5]).split("\\t")
    ['0.500', 'Je suis.', 'je:0.25 suis:0.75 .:0.50']
    """
    if confidence is None or probabilities is None:
        return f"-\t{text}\t-"
    pairs = " ".join(f"{token}:{p:.2f}" for token, p in zip(tokens, probabilities, strict=True))
    return f"{confidence:.3f}\t{text}\t{pairs}"
