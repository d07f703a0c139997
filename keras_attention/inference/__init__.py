"""Inference: `Translator` (strings in, translations out, in the graph) and loading runs as one.

Names are imported lazily (through `lazy_loader`), so importing the package
does not load TensorFlow.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "trained_run": ["load_ensemble", "load_translator"],
        "translator": ["Translator"],
    },
)
