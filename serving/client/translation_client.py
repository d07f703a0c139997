"""gRPC client for a translator served by TensorFlow Serving (or `python -m keras_attention.serving`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import grpc
import numpy as np

from keras_attention_client.channel_options import DEFAULT_MAX_MESSAGE_BYTES, ChannelOptions
from keras_attention_client.client_base import TranslationClientBase
from keras_attention_client.client_settings import with_settings
from keras_attention_client.model_metadata import ModelMetadata
from keras_attention_client.model_version_status import ModelVersionStatus
from keras_attention_client.no_answer import NoAnswer
from keras_attention_client.request_options import RequestOptions
from keras_attention_client.retry_policy import RetryPolicy
from keras_attention_client.served_model import ServedModel
from keras_attention_client.wire.errors import ServingError
from keras_attention_client.wire.protos import (
    get_model_metadata_pb2,
    get_model_status_pb2,
    model_listing_pb2,
    model_listing_pb2_grpc,
    model_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2_grpc,
)
from keras_attention_client.wire.tensors import (
    TensorParseError,
    ndarray_to_tensor_proto,
    tensor_proto_to_ndarray,
)

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "TranslationClient"]


class TranslationClient(TranslationClientBase):
    """Translates sentences with a model served over TF Serving's gRPC API.

    Talks to the real `tensorflow_model_server` or to this package's local
    server (`python -m keras_attention.serving`) through `PredictionService.Predict`,
    `GetModelMetadata` and `ModelService.GetModelStatus`. Only grpcio,
    protobuf and NumPy are used: the messages come from this package's own
    compiled subset of TF Serving's protos (`keras_attention_client.wire.protos`, the same
    bytes on the wire), so no TensorFlow is imported or installed.

    What a call does:

    1. `translate(texts)` splits `texts` into batches of `batch_size`.
    2. Each batch is one `Predict` request: input `text` (`DT_STRING
       [batch]`), `model_spec` = model name, signature and the pinned version
       or label (if any), with a deadline of `timeout` seconds.
    3. Until that deadline the client waits for the server: for the channel
       to connect (the call is made with `wait_for_ready=True`), then through
       retries of `UNAVAILABLE` (restarting, overloaded) and of `NOT_FOUND`
       while the server reports the model loading, sleeping
       `initial_backoff * backoff_multiplier**n` seconds (capped at
       `max_backoff`, with jitter) between them. Every other status is
       raised at once; a server that never answered is `UNAVAILABLE` naming
       the address, the seconds waited and the last connection error.
    4. The padded batch outputs are split into `Translation`s.

    Args:
        target: `"host:port"` of the gRPC endpoint (TF Serving's is 8500);
            `"unix:/path"` for a UNIX socket.
        request: a `RequestOptions`: the model name (TF Serving's default is
            `"default"`), signature, per-request `timeout` (`None`: no
            deadline), pinned `version` or `version_label`, `batch_size`.
        retry: a `RetryPolicy`: `max_retries` (`None`: as many as the
            deadline allows), `initial_backoff`, `max_backoff`,
            `backoff_multiplier`.
        channel: a `ChannelOptions`: `tls`, `root_certificates`,
            `private_key`, `certificate_chain` (PEM bytes or paths),
            `credentials`, `ssl_target_name_override`, `max_message_bytes`,
            `channel_options`.
        **settings: any field of those three by name (e.g.
            `model_name="translator", max_retries=0, tls=True`), replacing
            the given objects' values.

    Example:

    ```python
    from keras_attention_client import TranslationClient

    with TranslationClient("localhost:8500", model_name="translator") as client:
        for t in client.translate(["How are you?", "I am cold."]):
            print(t.text, t.score, t.attention.shape)
    ```
    """

    def __init__(
        self,
        target: str,
        request: RequestOptions | None = None,
        retry: RetryPolicy | None = None,
        channel: ChannelOptions | None = None,
        **settings: Any,
    ):
        channel = with_settings(channel, ChannelOptions, settings)
        super().__init__(request, retry, **settings)
        if not isinstance(target, str) or not target:
            raise ValueError(f"target must be 'host:port'. Received: target={target!r}")
        if "://" in target and not target.startswith(("unix://", "dns://", "ipv4:", "ipv6:")):
            raise ValueError(
                "target is a gRPC address 'host:port' (use RestTranslationClient for "
                f"http:// URLs). Received: target={target!r}"
            )
        self.target = target
        # The channel's reconnect backoff follows the retry policy given here (a
        # later change of `client.retry` changes the retries, not the channel).
        reconnect_ms = max(int(self.retry.initial_backoff * 1000), 50)
        options = [
            ("grpc.max_receive_message_length", int(channel.max_message_bytes)),
            ("grpc.max_send_message_length", int(channel.max_message_bytes)),
            # Reconnect quickly so a restarted server is picked up by the next retry
            # instead of the channel sitting in TRANSIENT_FAILURE for its default backoff.
            ("grpc.initial_reconnect_backoff_ms", reconnect_ms),
            ("grpc.min_reconnect_backoff_ms", reconnect_ms),
            (
                "grpc.max_reconnect_backoff_ms",
                max(int(self.retry.max_backoff * 1000), reconnect_ms),
            ),
        ]
        if channel.ssl_target_name_override:
            options.append(("grpc.ssl_target_name_override", channel.ssl_target_name_override))
        options.extend(channel.channel_options)
        credentials = channel.credentials
        if credentials is None and channel.secure:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=_read_pem(channel.root_certificates),
                private_key=_read_pem(channel.private_key),
                certificate_chain=_read_pem(channel.certificate_chain),
            )
        if credentials is not None:
            self._channel = grpc.secure_channel(target, credentials, options=options)
        else:
            self._channel = grpc.insecure_channel(target, options=options)
        self._prediction = prediction_service_pb2_grpc.PredictionServiceStub(self._channel)
        self._model = model_service_pb2_grpc.ModelServiceStub(self._channel)

    @property
    def endpoint(self) -> str:
        """The gRPC target, `host:port`."""
        return self.target

    def close(self) -> None:
        """Closes the gRPC channel."""
        self._channel.close()

    def __repr__(self) -> str:
        return (
            f"TranslationClient({self.target!r}, model_name={self.model_name!r}, "
            f"signature_name={self.signature_name!r})"
        )

    # Transport ------------------------------------------------------------------------------

    def _model_spec(self, signature_name: str = "") -> model_pb2.ModelSpec:
        spec = model_pb2.ModelSpec(name=self.model_name, signature_name=signature_name)
        if self.version is not None:
            spec.version.value = self.version
        elif self.version_label is not None:
            spec.version_label = self.version_label
        return spec

    def _predict_once(
        self,
        inputs: Mapping[str, Any],
        signature_name: str,
        output_filter: list[str],
        timeout: float | None,
    ) -> dict[str, np.ndarray]:
        request = predict_pb2.PredictRequest(
            model_spec=self._model_spec(signature_name), output_filter=output_filter
        )
        for alias, values in inputs.items():
            ndarray_to_tensor_proto(values, out=request.inputs[alias])
        response = self._call(self._prediction.Predict, request, timeout)
        try:
            return {
                alias: tensor_proto_to_ndarray(tensor) for alias, tensor in response.outputs.items()
            }
        except TensorParseError as error:
            raise ServingError("DATA_LOSS", f"Could not parse the response: {error}") from error

    def _status_once(self, version: int | None, timeout: float | None) -> list[ModelVersionStatus]:
        spec = model_pb2.ModelSpec(name=self.model_name)
        if version is not None:
            spec.version.value = version
        request = get_model_status_pb2.GetModelStatusRequest(model_spec=spec)
        response = self._call(self._model.GetModelStatus, request, timeout)
        return [ModelVersionStatus.from_proto(status) for status in response.model_version_status]

    def _metadata_once(self, timeout: float | None) -> ModelMetadata:
        request = get_model_metadata_pb2.GetModelMetadataRequest(
            model_spec=self._model_spec(), metadata_field=["signature_def"]
        )
        return ModelMetadata.from_proto(
            self._call(self._prediction.GetModelMetadata, request, timeout)
        )

    def _list_models_once(self, timeout: float | None) -> list[ServedModel]:
        stub = model_listing_pb2_grpc.ModelListingStub(self._channel)
        response = self._call(stub.ListModels, model_listing_pb2.ListModelsRequest(), timeout)
        return [ServedModel.from_proto(model) for model in response.models]

    def _call(self, method, request, timeout: float | None):
        """One call that waits for the channel to connect (`NoAnswer` if it never does)."""
        try:
            return method(request, timeout=timeout, wait_for_ready=True)
        except grpc.RpcError as error:
            serving_error = _serving_error(error)
        if serving_error.code == "DEADLINE_EXCEEDED":
            # Waiting for the connection and waiting for the answer end alike: ask which.
            failure = self._connection_failure()
            if failure is not None:
                raise NoAnswer(failure) from None
        raise serving_error

    def _connection_failure(self) -> str | None:
        """Why the channel cannot connect, from one fail-fast call; `None` if it can."""
        request = get_model_status_pb2.GetModelStatusRequest(
            model_spec=model_pb2.ModelSpec(name=self.model_name)
        )
        try:
            self._model.GetModelStatus(request, timeout=1.0, wait_for_ready=False)
        except grpc.RpcError as error:
            probe = _serving_error(error)
            if probe.code == "UNAVAILABLE":
                return probe.message
            if probe.code == "DEADLINE_EXCEEDED":
                return "still connecting"
        return None


def _serving_error(error: grpc.RpcError) -> ServingError:
    code = error.code() if callable(getattr(error, "code", None)) else None
    details = error.details() if callable(getattr(error, "details", None)) else str(error)
    name = code.name if isinstance(code, grpc.StatusCode) else "UNKNOWN"
    return ServingError(name, details or "")


def _read_pem(value: bytes | str | os.PathLike | None) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    with open(os.fspath(value), "rb") as file:
        return file.read()
