"""`LiteRTCheckReport`: what `LiteRTChecker` found in one LiteRT export."""

from __future__ import annotations

import dataclasses
from typing import Any

from keras_attention.export.check_report import outcome_lines


@dataclasses.dataclass
class LiteRTCheckReport:
    """The findings of `LiteRTChecker.check`.

    Attributes:
        path: the export directory checked.
        errors: problems that make the export unusable (a Flex or custom op,
            a model that does not load or run, translations that differ from
            the reference); the check fails if there is any.
        warnings: things worth knowing that do not fail the check.
        manifest: the export's manifest, if it could be read.
        models: mode -> `{"bytes", "builtin_ops", "custom_ops"}` read from the files.
        reference: what the translations were compared with (a SavedModel
            version directory on TF Serving's Session path, or the run's
            in-process `Translator`), or `None`.
        comparisons: mode -> `{"sentences", "identical", "max_score_difference",
            "seconds"}`.
    """

    path: str
    errors: list[str] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    manifest: dict[str, Any] | None = None
    models: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    reference: str | None = None
    comparisons: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors

    def format(self) -> str:
        """A human-readable report (what `keras-attention check-export` prints)."""
        lines = [f"LiteRT export: {self.path}"]
        if self.manifest:
            decoding = self.manifest.get("decoding", {}).get("beam", {})
            lines.append(
                f"Manifest: weights {self.manifest.get('weights')}, attention_width "
                f"{self.manifest.get('attention_width')}, max_output_length "
                f"{self.manifest.get('max_output_length')}; beam: beam_width "
                f"{decoding.get('beam_width')}, length_penalty {decoding.get('length_penalty')}, "
                f"n_best {decoding.get('n_best')}"
            )
        for mode, model in self.models.items():
            lines.append(
                f"  {mode}: {model['bytes'] / 1e6:.1f} MB, {len(model['builtin_ops'])} builtin op "
                f"kinds, {len(model['custom_ops'])} custom (Flex) ops: "
                + ", ".join(model["builtin_ops"])
            )
        if self.comparisons:
            lines.append(
                f"Warmup sentences translated in the LiteRT interpreter, against {self.reference}:"
            )
            for mode, result in self.comparisons.items():
                lines.append(
                    f"  {mode}: {result['identical']}/{result['sentences']} token-identical, "
                    f"largest score difference {result['max_score_difference']:.1e} "
                    f"({result['seconds']:.2f} s)"
                )
        return "\n".join(lines + outcome_lines(self.warnings, self.errors))
