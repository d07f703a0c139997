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

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "allowed_ops": ["AllowedOps"],
        "check_report": ["CheckReport"],
        "export_checker": ["ExportChecker"],
        "export_manifest": ["ExportManifest"],
        "export_settings": ["ExportSettings"],
        "exported_version": ["ExportedVersion"],
        "saved_model_session": ["SavedModelSession"],
        "litert_checker": ["LiteRTChecker"],
        "litert_exporter": ["LiteRTExporter", "export_litert"],
        "signature_options": ["SignatureOptions"],
        "translation_signatures": ["TranslationSignatures"],
        "translator_exporter": ["TranslatorExporter", "export_translator"],
        "version_directory": ["VersionDirectory"],
        "warmup": ["predict_log", "read_warmup_requests", "write_warmup_requests"],
    },
)
