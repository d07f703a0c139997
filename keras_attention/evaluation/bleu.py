"""Corpus BLEU and chrF with sacreBLEU, overall and by source-sentence length.

Scores are sacreBLEU's defaults for detokenized text: cased, `13a`
tokenization, exponential smoothing for BLEU; chrF with character n-grams up
to 6 and beta 2 (no word n-grams). Every sentence may have several reference
translations; sacreBLEU takes references as parallel *streams*, so sentence
`i`'s references are spread over the streams and shorter lists are padded with
`None`, which sacreBLEU skips (an empty string would count as a reference of
length 0 and change the brevity penalty).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

from sacrebleu.metrics import BLEU, CHRF

logger = logging.getLogger(__name__)

DEFAULT_BUCKETS: tuple[tuple[int, int | None], ...] = (
    (1, 5),
    (6, 10),
    (11, 15),
    (16, 20),
    (21, None),
)


@dataclasses.dataclass(frozen=True)
class TranslationScores:
    """Corpus-level scores of a set of translations.

    Attributes:
        bleu: corpus BLEU, 0-100.
        chrf: corpus chrF, 0-100.
        bleu_signature: sacreBLEU's signature string for BLEU, e.g.
            `nrefs:var|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0`.
        chrf_signature: sacreBLEU's signature string for chrF.
        n: the number of scored sentences.
    """

    bleu: float
    chrf: float
    bleu_signature: str
    chrf_signature: str
    n: int


def _check_inputs(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> None:
    if isinstance(hypotheses, str) or not isinstance(hypotheses, Sequence):
        raise ValueError(
            f"`hypotheses` must be a list of strings. Received: {type(hypotheses).__name__}"
        )
    if isinstance(references, str) or not isinstance(references, Sequence):
        raise ValueError(
            "`references` must be a list of lists of strings. "
            f"Received: {type(references).__name__}"
        )
    if len(hypotheses) == 0:
        raise ValueError("`hypotheses` is empty. Received: 0 hypotheses")
    if len(hypotheses) != len(references):
        raise ValueError(
            "`hypotheses` and `references` must have the same length. "
            f"Received: {len(hypotheses)} hypotheses and {len(references)} reference lists"
        )
    for index, hypothesis in enumerate(hypotheses):
        if not isinstance(hypothesis, str):
            raise ValueError(f"`hypotheses[{index}]` must be a string. Received: {hypothesis!r}")
    for index, refs in enumerate(references):
        if isinstance(refs, str) or not isinstance(refs, Sequence):
            raise ValueError(
                f"`references[{index}]` must be a list of reference strings (all "
                f"translations of sentence {index}). Received: {refs!r}"
            )
        if len(refs) == 0:
            raise ValueError(
                f"`references[{index}]` must hold at least one reference. Received: []"
            )
        for ref in refs:
            if not isinstance(ref, str):
                raise ValueError(f"`references[{index}]` must hold strings only. Received: {ref!r}")


def reference_streams(references: Sequence[Sequence[str]]) -> list[list[str | None]]:
    """Per-sentence reference lists -> sacreBLEU's reference streams.

    Args:
        references: `references[i]` is the list of all reference translations
            of sentence `i` (at least one; lists may differ in length).

    Returns:
        `max(len(r) for r in references)` streams, each with one entry per
        sentence: `streams[j][i] = references[i][j]`, or `None` when sentence
        `i` has fewer than `j + 1` references.

    Example:

    >>> reference_streams([["a", "b"], ["c"]])
    [['a', 'c'], ['b', None]]
    """
    num_streams = max(len(refs) for refs in references)
    return [[refs[j] if j < len(refs) else None for refs in references] for j in range(num_streams)]


def score_translations(
    hypotheses: Sequence[str], references: Sequence[Sequence[str]]
) -> TranslationScores:
    """Corpus BLEU and chrF of `hypotheses` against all their references.

    Args:
        hypotheses: detokenized, cased translations, one per sentence.
        references: `references[i]` is the list of all reference translations
            of sentence `i` (at least one; the number may vary per sentence).

    Returns:
        A `TranslationScores`.

    Raises:
        ValueError: on empty input, mismatched lengths, or a sentence without
            references.

    Example:

    >>> scores = score_translations(["Il fait beau."], [["Il fait beau.", "Beau temps."]])
    >>> round(scores.bleu, 2), scores.n
    (100.0, 1)
    """
    _check_inputs(hypotheses, references)
    streams = reference_streams(references)
    bleu = BLEU()
    chrf = CHRF()
    bleu_score = bleu.corpus_score(list(hypotheses), streams)
    chrf_score = chrf.corpus_score(list(hypotheses), streams)
    scores = TranslationScores(
        bleu=float(bleu_score.score),
        chrf=float(chrf_score.score),
        bleu_signature=str(bleu.get_signature()),
        chrf_signature=str(chrf.get_signature()),
        n=len(hypotheses),
    )
    logger.debug("BLEU %.2f chrF %.2f over %d sentences", scores.bleu, scores.chrf, scores.n)
    return scores


def _bucket_label(low: int, high: int | None) -> str:
    if high is None:
        return f"{low}+"
    return str(low) if low == high else f"{low}-{high}"


def _check_buckets(buckets: Sequence[tuple[int, int | None]]) -> None:
    if len(buckets) == 0:
        raise ValueError("`buckets` is empty. Received: buckets=()")
    for bucket in buckets:
        valid = (
            isinstance(bucket, Sequence)
            and len(bucket) == 2
            and isinstance(bucket[0], int)
            and bucket[0] >= 0
            and (bucket[1] is None or (isinstance(bucket[1], int) and bucket[1] >= bucket[0]))
        )
        if not valid:
            raise ValueError(
                "Each bucket must be `(low, high)` with 0 <= low <= high, or "
                f"`(low, None)` for no upper bound. Received: {bucket!r}"
            )


def bleu_by_length(
    sources: Sequence[str],
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str]],
    buckets: Sequence[tuple[int, int | None]] = DEFAULT_BUCKETS,
) -> list[dict]:
    """Corpus BLEU per source-length bucket (Bahdanau et al.'s Figure 2).

    A sentence's length is the number of whitespace-separated words of its
    source (`len(source.split())`). A sentence goes into every bucket
    `(low, high)` with `low <= length <= high` (`high=None`: no upper bound);
    with the default, non-overlapping buckets that is exactly one. BLEU of a
    bucket is the corpus BLEU of its sentences, with all their references.
    Buckets with no sentence are left out.

    Args:
        sources: source sentences, one per hypothesis.
        hypotheses: detokenized translations.
        references: `references[i]` is the list of all references of
            sentence `i`.
        buckets: `(low, high)` pairs of inclusive word counts. Defaults to
            1-5, 6-10, 11-15, 16-20, 21+.

    Returns:
        One dict per non-empty bucket, in the order of `buckets`:
        `{"bucket": "6-10", "min_length": 6, "max_length": 10, "count": n,
        "bleu": float}` (`max_length` is `None` for an open bucket).

    Raises:
        ValueError: on empty input, mismatched lengths, or a malformed bucket.
    """
    _check_inputs(hypotheses, references)
    if len(sources) != len(hypotheses):
        raise ValueError(
            "`sources`, `hypotheses` and `references` must have the same length. "
            f"Received: {len(sources)} sources, {len(hypotheses)} hypotheses and "
            f"{len(references)} reference lists"
        )
    _check_buckets(buckets)
    lengths = [len(source.split()) for source in sources]
    rows = []
    for low, high in buckets:
        members = [
            i
            for i, length in enumerate(lengths)
            if low <= length and (high is None or length <= high)
        ]
        if not members:
            continue
        scores = score_translations(
            [hypotheses[i] for i in members], [references[i] for i in members]
        )
        rows.append(
            {
                "bucket": _bucket_label(low, high),
                "min_length": low,
                "max_length": high,
                "count": len(members),
                "bleu": scores.bleu,
            }
        )
    return rows
