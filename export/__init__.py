"""Export trained keras-attention translators as SavedModels for TensorFlow Serving.

The public names are imported lazily (through `lazy_loader`), so `import
keras_attention.export.cli` (which the `keras-attention` command does to build its parser) does
not load TensorFlow.

```python
from keras_attention.export import ExportChecker, TranslatorExporter

exported = TranslatorExporter.from_run("runs/fra-eng").export("/models/translator")
print(ExportChecker().check(exported.path).format())
```
"""

import importlib

import lazy_loader

_MODULES = {
    "allowed_ops": ["AllowedOps"],
    "check_report": ["CheckReport"],
    "export_checker": ["ExportChecker"],
    "export_manifest": ["ExportManifest"],
    "export_settings": ["ExportSettings"],
    "exported_version": ["ExportedVersion"],
    "litert.checker": ["LiteRTChecker"],
    "litert.exporter": ["LiteRTExporter", "export_litert"],
    "signature_options": ["SignatureOptions"],
    "translation_signatures": ["TranslationSignatures"],
    "translator_exporter": ["TranslatorExporter", "export_translator"],
    "version_directory": ["VersionDirectory"],
    "warmup": ["predict_log", "write_warmup_requests"],
}
"""Our modules and the public names each defines, imported on first use."""

_getattr, _, _names = lazy_loader.attach(__name__, submod_attrs=_MODULES)

# TF Serving's Session path and the warmup reader, which the export's check shares with the
# local server (`keras_attention.saved_model_session`).
_SHARED = {
    "SavedModelSession": "keras_attention.saved_model_session",
    "read_warmup_requests": "keras_attention.saved_model_session",
}

__all__ = sorted([*_names, *_SHARED])


def __getattr__(name: str):
    if name in _SHARED:
        value = getattr(importlib.import_module(_SHARED[name]), name)
        globals()[name] = value
        return value
    return _getattr(name)


def __dir__() -> list[str]:
    return __all__.copy()
