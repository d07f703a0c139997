"""Evaluation: corpus BLEU and chrF with sacreBLEU, overall and by sentence length.

Names are imported lazily (through `lazy_loader`), so importing the package does not
import sacreBLEU.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "bleu": [
            "DEFAULT_BUCKETS",
            "TranslationScores",
            "bleu_by_length",
            "reference_streams",
            "score_translations",
        ],
    },
)
