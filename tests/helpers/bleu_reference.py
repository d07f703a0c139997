"""BLEU by sacreBLEU itself, the reference an evaluation's figures are checked against."""

import sacrebleu


def sacrebleu_of(hypotheses, grouped) -> float:
    """sacreBLEU's corpus BLEU of `hypotheses` against the references of `grouped`
    (`(source, [reference, ...])` per sentence), one reference stream per rank, padded with
    `None` where a sentence has fewer references."""
    depth = max(len(references) for _, references in grouped)
    streams = [
        [references[i] if i < len(references) else None for _, references in grouped]
        for i in range(depth)
    ]
    return sacrebleu.corpus_bleu(list(hypotheses), streams).score
