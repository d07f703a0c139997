"""A served model's signatures, as reported by GetModelMetadata."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class TensorInfo:
    """One input or output of a signature.

    Attributes:
        name: the graph tensor name (e.g. `"serving_default_text:0"`).
        dtype: the DataType name, e.g. `"DT_STRING"`.
        shape: the static shape with `None` for unknown dimensions, or `None`
            if even the rank is unknown.
    """

    name: str
    dtype: str
    shape: tuple[int | None, ...] | None


@dataclasses.dataclass(frozen=True)
class SignatureInfo:
    """One SignatureDef: its method name, its inputs and outputs by alias, and the
    `defaults` of its optional inputs (NumPy arrays by alias; TF Serving's gRPC Predict
    feeds them for inputs a request leaves out, its REST API does not)."""

    method_name: str
    inputs: dict[str, TensorInfo]
    outputs: dict[str, TensorInfo]
    defaults: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class ModelMetadata:
    """The metadata of one model version (`GetModelMetadataResponse`).

    Attributes:
        name: the model name.
        version: the version that answered.
        signatures: the SignatureDefs by name (`"serving_default"`, ...).

    Example:

    ```python
    metadata = client.model_metadata()
    metadata.signatures["serving_default"].outputs["attention"].shape
    # (None, None, None)
    ```
    """

    name: str
    version: int
    signatures: dict[str, SignatureInfo]

    @classmethod
    def from_signature_def_map(
        cls, name: str, version: int, signature_def_map: Any
    ) -> ModelMetadata:
        """Builds it from a `tensorflow.serving.SignatureDefMap` proto."""
        from keras_attention_client.wire.protos import types_pb2
        from keras_attention_client.wire.tensors import tensor_proto_to_ndarray

        def tensor_info(info: Any) -> TensorInfo:
            if info.tensor_shape.unknown_rank:
                shape = None
            else:
                shape = tuple(None if d.size < 0 else int(d.size) for d in info.tensor_shape.dim)
            return TensorInfo(
                name=info.name, dtype=types_pb2.DataType.Name(info.dtype), shape=shape
            )

        signatures = {}
        for key in sorted(signature_def_map.signature_def):
            signature = signature_def_map.signature_def[key]
            signatures[key] = SignatureInfo(
                method_name=signature.method_name,
                inputs={a: tensor_info(i) for a, i in sorted(signature.inputs.items())},
                outputs={a: tensor_info(i) for a, i in sorted(signature.outputs.items())},
                defaults={
                    a: tensor_proto_to_ndarray(t) for a, t in sorted(signature.defaults.items())
                },
            )
        return cls(name=name, version=int(version), signatures=signatures)

    @classmethod
    def from_proto(cls, response: Any) -> ModelMetadata:
        """Builds it from a `GetModelMetadataResponse` proto."""
        from keras_attention_client.wire.protos import get_model_metadata_pb2

        signature_def_map = get_model_metadata_pb2.SignatureDefMap()
        if "signature_def" in response.metadata:
            response.metadata["signature_def"].Unpack(signature_def_map)
        return cls.from_signature_def_map(
            response.model_spec.name, response.model_spec.version.value, signature_def_map
        )

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> ModelMetadata:
        """Builds it from the REST `GET /v1/models/NAME/metadata` body."""
        from google.protobuf import json_format

        from keras_attention_client.wire.protos import get_model_metadata_pb2

        spec = body.get("model_spec", {})
        signature_def_map = get_model_metadata_pb2.SignatureDefMap()
        json_format.ParseDict(
            body.get("metadata", {}).get("signature_def", {}),
            signature_def_map,
            ignore_unknown_fields=True,
        )
        return cls.from_signature_def_map(
            spec.get("name", ""), int(spec.get("version", 0) or 0), signature_def_map
        )
