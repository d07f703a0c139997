"""`RequestOptions`: which model a client asks, and how much per request."""

from __future__ import annotations

import dataclasses

from keras_attention_client.defaults import DEFAULT_BATCH_SIZE, DEFAULT_MODEL_NAME, DEFAULT_TIMEOUT
from keras_attention_client.wire.contract import DEFAULT_SIGNATURE


@dataclasses.dataclass(frozen=True)
class RequestOptions:
    """The served model a client's requests name, and their size and deadline.

    Args:
        model_name: the served model's name (TF Serving's default is
            `"default"`).
        signature_name: signature to call, `"serving_default"` (greedy) or
            `"beam_search"`.
        timeout: deadline in seconds for each request, waiting for the
            server included (`None`: no deadline, wait as long as it takes).
        version: pin a version number (default: the latest the server serves).
        version_label: pin a version label from the server's model config
            (e.g. `"stable"`); exclusive with `version`.
        batch_size: sentences per request in `translate`.

    Raises:
        ValueError: a bad value (the message names it).
    """

    model_name: str = DEFAULT_MODEL_NAME
    signature_name: str = DEFAULT_SIGNATURE
    timeout: float | None = DEFAULT_TIMEOUT
    version: int | None = None
    version_label: str | None = None
    batch_size: int = DEFAULT_BATCH_SIZE

    def __post_init__(self):
        model_name, signature_name = self.model_name, self.signature_name
        if not isinstance(model_name, str) or not model_name:
            raise ValueError(f"model_name must be a non-empty string. Received: {model_name!r}")
        if not isinstance(signature_name, str) or not signature_name:
            raise ValueError(
                f"signature_name must be a non-empty string. Received: {signature_name!r}"
            )
        timeout, version, version_label = self.timeout, self.version, self.version_label
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be positive seconds or None. Received: {timeout!r}")
        if version is not None and version_label is not None:
            raise ValueError(
                "Pass at most one of version and version_label. "
                f"Received: version={version!r}, version_label={version_label!r}"
            )
        if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
            raise ValueError(f"version must be an integer or None. Received: {version!r}")
        batch_size = self.batch_size
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer. Received: {batch_size!r}")
