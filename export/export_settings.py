"""`ExportSettings`: everything `keras-attention export` decides about one export of a run."""

from __future__ import annotations

import dataclasses
from typing import Any

from keras_attention.auto import AUTO
from keras_attention.export.signature_options import SignatureOptions
from keras_attention.shortlist.defaults import DEFAULT_FREQUENT


@dataclasses.dataclass(frozen=True)
class ExportSettings:
    """How to export a trained run (`TranslatorExporter.from_run`, `export_translator`).

    Args:
        signatures: the `SignatureOptions` (beam width, length penalty,
            decoding inputs, XLA, `score_translation`).
        max_output_length: most tokens of a translation (default: the run's
            `max_output_length`).
        precision: the dtype policy the signatures compute in: one of
            `keras_attention.precision.POLICIES`, `"auto"` (resolved on this
            machine) or `None` (the default) for the policy the model was
            trained in.
        weights: how the variables are stored, one of
            `weight_storage.WEIGHTS` or `"auto"` (the default; see
            `TranslatorExporter`).
        shortlist: `K` target ids per source id for a vocabulary shortlist
            built from the run's training split, `"auto"` (see
            `auto_shortlist_size`), a `VocabularyShortlist`, or `None` (the
            default) for none.
        shortlist_frequent: int >= 0, the most frequent target ids that an
            int `shortlist` always keeps. Defaults to `DEFAULT_FREQUENT` (300).
        replace_unknown: bool or None, whether the signatures replace each
            `[UNK]` the model emits by the source token it attended to most
            (`Translator`'s `replace_unknown`). Defaults to None: on for a
            word target vocabulary, off for subwords (they never emit
            `[UNK]`).
    """

    signatures: SignatureOptions = SignatureOptions()
    max_output_length: int | None = None
    precision: str | None = None
    weights: str = "auto"
    shortlist: Any = None
    shortlist_frequent: int = DEFAULT_FREQUENT
    replace_unknown: bool | None = None

    def __post_init__(self):
        length = self.max_output_length
        if length is not None and (
            isinstance(length, bool) or not isinstance(length, int) or length < 1
        ):
            raise ValueError(
                "`max_output_length` must be a positive int or None. "
                f"Received: max_output_length={length!r}"
            )

    @classmethod
    def of(cls, settings: ExportSettings | None = None, **changes: Any) -> ExportSettings:
        """`settings` (default: `ExportSettings()`) with `changes`, each a field of this
        class or of `SignatureOptions` (e.g. `beam_width=3, weights="int8"`).

        Raises:
            TypeError: `settings` is not an `ExportSettings`.
        """
        settings = cls() if settings is None else settings
        if not isinstance(settings, cls):
            raise TypeError(f"`settings` must be an ExportSettings. Received: {settings!r}")
        names = {field.name for field in dataclasses.fields(SignatureOptions)}
        signature_changes = {k: changes.pop(k) for k in list(changes) if k in names}
        if signature_changes:
            changes["signatures"] = SignatureOptions.of(settings.signatures, **signature_changes)
        return dataclasses.replace(settings, **changes) if changes else settings


COMMAND_SETTINGS = ExportSettings(precision=AUTO, shortlist=AUTO)
"""The settings of `keras-attention export` (and `export_translator`) when none are given:
the precision and the shortlist resolved for this machine and model."""
