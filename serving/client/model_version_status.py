"""The status of one model version, as reported by GetModelStatus."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class ModelVersionStatus:
    """The state of one version of a served model (`ModelVersionStatus` proto).

    Attributes:
        version: the version number (the integer directory name).
        state: one of `"START"`, `"LOADING"`, `"AVAILABLE"`, `"UNLOADING"`,
            `"END"`. A version that failed to load is `"END"` with a non-`"OK"`
            `error_code`.
        error_code: the status code name of the last load/unload, `"OK"` if none.
        error_message: the error message, `""` if none.

    Example:

    >>> ModelVersionStatus(1, "AVAILABLE").available
    True
    """

    version: int
    state: str
    error_code: str = "OK"
    error_message: str = ""

    @property
    def available(self) -> bool:
        """Whether this version is serving requests."""
        return self.state == "AVAILABLE"

    @classmethod
    def from_proto(cls, proto: Any) -> ModelVersionStatus:
        """Builds it from a `tensorflow.serving.ModelVersionStatus` proto."""
        from keras_attention_client.wire.errors import code_name
        from keras_attention_client.wire.protos import get_model_status_pb2

        state = get_model_status_pb2.ModelVersionStatus.State.Name(proto.state)
        return cls(
            version=int(proto.version),
            state=state,
            error_code=code_name(int(proto.status.error_code)),
            error_message=proto.status.error_message,
        )

    @classmethod
    def from_json(cls, entry: dict[str, Any]) -> ModelVersionStatus:
        """Builds it from one entry of the REST `model_version_status` list."""
        from keras_attention_client.wire.errors import code_name

        status = entry.get("status") or {}
        error_code = status.get("error_code", "OK")
        return cls(
            version=int(entry.get("version", 0)),
            state=str(entry.get("state", "UNKNOWN")),
            error_code=code_name(error_code if isinstance(error_code, (int, str)) else "OK"),
            error_message=str(status.get("error_message", "")),
        )
