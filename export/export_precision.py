"""`with_precision`: a translator computing under the export's dtype policy."""

from __future__ import annotations

import logging

from keras_attention.inference.translator import Translator

logger = logging.getLogger(__name__)


def with_precision(translator: Translator, precision: str) -> Translator:
    """`translator` computing under `precision` (`"auto"` or a dtype policy)."""
    from keras_attention.models.model_policy import model_with_policy
    from keras_attention.precision import resolve_precision

    choice = resolve_precision(precision)
    logger.info("export precision: %s", choice.describe())
    model = model_with_policy(translator.model, choice.policy)
    if model is translator.model:
        return translator
    return Translator(
        model,
        translator.source_vectorizer,
        translator.target_vectorizer,
        max_output_length=translator.max_output_length,
        replace_unknown=translator.replace_unknown,
    )
