"""`ChannelOptions`: how the gRPC client's channel connects (TLS, message sizes)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class ChannelOptions:
    """The gRPC channel of a `TranslationClient`.

    Args:
        tls: use TLS with the system's root certificates (implied by any of the
            certificate arguments).
        root_certificates: PEM bytes, or a path to a PEM file, of the CA(s) to
            trust (for a self-signed server certificate).
        private_key: PEM bytes or path of the client key (mutual TLS).
        certificate_chain: PEM bytes or path of the client certificate chain.
        credentials: ready-made `grpc.ChannelCredentials` (overrides the
            TLS arguments).
        ssl_target_name_override: the host name to verify in the server
            certificate when it differs from the target's host.
        max_message_bytes: largest response accepted (and request sent).
        channel_options: extra `(key, value)` gRPC channel arguments.
    """

    tls: bool = False
    root_certificates: bytes | str | os.PathLike | None = None
    private_key: bytes | str | os.PathLike | None = None
    certificate_chain: bytes | str | os.PathLike | None = None
    credentials: Any = None
    ssl_target_name_override: str | None = None
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    channel_options: Sequence[tuple[str, Any]] = ()

    @property
    def secure(self) -> bool:
        """Whether the channel uses TLS."""
        return self.credentials is not None or bool(
            self.tls or self.root_certificates or self.private_key or self.certificate_chain
        )
