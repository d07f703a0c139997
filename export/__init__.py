"""Export trained keras-attention translators as SavedModels for TensorFlow Serving.

The public names are imported lazily, so `import export.cli` (which the
`keras-attention` command does to build its parser) does not load TensorFlow.

```python
from export import ExportChecker, TranslatorExporter

exported = TranslatorExporter.from_run("runs/fra-eng").export("/models/translator")
print(ExportChecker().check(exported.path).format())
```
"""

import importlib

_EXPORTS = {
    "AllowedOps": "export.allowed_ops",
    "CheckReport": "export.check_report",
    "ExportChecker": "export.export_checker",
    "ExportManifest": "export.export_manifest",
    "ExportedVersion": "export.translator_exporter",
    "ServingSession": "export.serving_session",
    "TranslationSignatures": "export.translation_signatures",
    "TranslatorExporter": "export.translator_exporter",
    "VersionDirectory": "export.version_directory",
    "export_translator": "export.translator_exporter",
    "predict_log": "export.warmup",
    "read_warmup_requests": "export.warmup",
    "write_warmup_requests": "export.warmup",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'export' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return __all__
