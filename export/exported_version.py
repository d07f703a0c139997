"""`ExportedVersion`: what `TranslatorExporter.export` wrote."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from keras_attention.export.export_manifest import ExportManifest


@dataclasses.dataclass(frozen=True)
class ExportedVersion:
    """The result of `TranslatorExporter.export`.

    Attributes:
        version: the integer version written.
        path: `BASE/<version>`.
        manifest: its `ExportManifest`.
    """

    version: int
    path: Path
    manifest: ExportManifest
