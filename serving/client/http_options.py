"""`HttpOptions`: how the REST client's requests connect (TLS, headers)."""

from __future__ import annotations

import dataclasses
import ssl
from collections.abc import Mapping


@dataclasses.dataclass(frozen=True)
class HttpOptions:
    """The HTTP side of a `RestTranslationClient`.

    Args:
        ssl_context: an `ssl.SSLContext` for `https://` (e.g. one trusting a
            private CA); default: the system's.
        cafile: path of a PEM CA bundle to trust (builds `ssl_context`).
        headers: extra HTTP headers for every request (e.g. authorization).
    """

    ssl_context: ssl.SSLContext | None = None
    cafile: str | None = None
    headers: Mapping[str, str] | None = None

    def context(self) -> ssl.SSLContext | None:
        """The `ssl.SSLContext` to use (`None`: the system's)."""
        if self.ssl_context is None and self.cafile is not None:
            return ssl.create_default_context(cafile=self.cafile)
        return self.ssl_context
