"""Whether a decoder is being traced for LiteRT's converter.

LiteRT's converter lowers a decoding loop to builtin ops only when the loop's buffers have
a fixed size (and, for the beam search's records, are plain tensors). Elsewhere the
decoders keep TensorFlow's growing `TensorArray`s, which hold only the steps run: a fixed
buffer of `maximum_iterations` steps costs memory for steps a search may never take.
`keras_attention.export.litert.function_converter.convert_function` traces the function
it converts inside `tracing_for_litert()`.
"""

from __future__ import annotations

import contextlib
import contextvars

_TRACING = contextvars.ContextVar("keras_attention_seq2seq_litert_tracing", default=False)


@contextlib.contextmanager
def tracing_for_litert():
    """Decoders traced inside this scope build buffers LiteRT's converter can lower."""
    token = _TRACING.set(True)
    try:
        yield
    finally:
        _TRACING.reset(token)


def is_tracing_for_litert() -> bool:
    """Whether the code runs inside `tracing_for_litert()`."""
    return _TRACING.get()
