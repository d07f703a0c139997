"""A model a server serves, as `keras_attention.ModelListing/ListModels` reports it."""

from __future__ import annotations

import dataclasses
from typing import Any

from keras_attention_client.model_version_status import ModelVersionStatus


@dataclasses.dataclass(frozen=True)
class ServedModel:
    """One model of a server's listing (`keras_attention.ServedModel`).

    Our local server lists its models over gRPC (`ModelListing/ListModels`)
    and REST (`GET /v1/models`); TF Serving has no such call.

    Attributes:
        name: the model name, as requests name it.
        versions: every version the server has seen, as GetModelStatus
            reports them, oldest first.
        signature_names: the signatures of the version a request without a
            version reaches (the latest available); `()` while none is.

    Example:

    >>> from keras_attention_client.wire.protos import model_listing_pb2
    >>> proto = model_listing_pb2.ServedModel(name="fra-eng", signature_names=["serving_default"])
    >>> _ = proto.versions.add(version=1, state=30)
    >>> ServedModel.from_proto(proto).available_versions
    (1,)
    """

    name: str
    versions: tuple[ModelVersionStatus, ...]
    signature_names: tuple[str, ...]

    @property
    def available_versions(self) -> tuple[int, ...]:
        """The versions serving requests, ascending."""
        return tuple(status.version for status in self.versions if status.available)

    @classmethod
    def from_proto(cls, proto: Any) -> ServedModel:
        """Builds it from a `keras_attention.ServedModel` proto."""
        return cls(
            name=proto.name,
            versions=tuple(ModelVersionStatus.from_proto(v) for v in proto.versions),
            signature_names=tuple(proto.signature_names),
        )

    @classmethod
    def list_from_json(cls, body: Any) -> list[ServedModel]:
        """The models of a REST `GET /v1/models` body (`{"models": [...]}`).

        Raises:
            ValueError: the body is not such a listing.
        """
        from google.protobuf import json_format

        from keras_attention_client.wire.protos import model_listing_pb2

        try:
            response = json_format.ParseDict(body, model_listing_pb2.ListModelsResponse())
        except json_format.ParseError as error:
            raise ValueError(f"Not a model listing: {error}") from error
        return [cls.from_proto(model) for model in response.models]
