"""Evaluation: corpus BLEU and chrF with sacreBLEU, overall and by sentence length."""

from keras_attention.evaluation.bleu import (
    DEFAULT_BUCKETS,
    TranslationScores,
    bleu_by_length,
    reference_streams,
    score_translations,
)

__all__ = [
    "DEFAULT_BUCKETS",
    "TranslationScores",
    "bleu_by_length",
    "reference_streams",
    "score_translations",
]
