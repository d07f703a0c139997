"""TF Serving's gRPC ModelService, and our ModelListing service, over a `ServableManager`."""

from __future__ import annotations

import logging

import grpc
from google.protobuf import json_format
from tensorflow_serving.apis import (
    get_model_status_pb2,
    model_management_pb2,
    model_pb2,
    model_service_pb2_grpc,
)

from keras_attention.serving.server.servable_manager import ServableManager
from keras_attention_client.wire.errors import STATUS_CODES, ServingError
from keras_attention_client.wire.protos import model_listing_pb2, model_listing_pb2_grpc

logger = logging.getLogger(__name__)


def get_model_status(
    manager: ServableManager, model_spec: model_pb2.ModelSpec
) -> get_model_status_pb2.GetModelStatusResponse:
    """TF Serving's `GetModelStatusWithModelSpec`: every version's state, or one version's.

    Raises:
        ServingError: `NOT_FOUND` ("Could not find version V of model NAME" /
            "Could not find any versions of model NAME").
    """
    name = model_spec.name
    states = manager.version_states(name)
    if model_spec.HasField("version"):
        version = int(model_spec.version.value)
        if version not in states:
            raise ServingError("NOT_FOUND", f"Could not find version {version} of model {name}")
        states = {version: states[version]}
    elif not states:
        raise ServingError("NOT_FOUND", f"Could not find any versions of model {name}")
    response = get_model_status_pb2.GetModelStatusResponse()
    for version, state in states.items():
        state.fill(version, response.model_version_status.add())
    return response


class ModelService(
    model_service_pb2_grpc.ModelServiceServicer, model_listing_pb2_grpc.ModelListingServicer
):
    """`tensorflow.serving.ModelService` and `keras_attention.ModelListing`.

    - `GetModelStatus`: `INVALID_ARGUMENT` "Missing ModelSpec" without a
      model spec; then every version's state (`START`, `LOADING`,
      `AVAILABLE`, `UNLOADING`, `END`) with the last load error, or
      `NOT_FOUND`.
    - `HandleReloadConfigRequest`: replaces the served model list with the
      request's `ModelServerConfig` (blocking until new versions load); the
      response's `status` mirrors the RPC status.
    - `ListModels`: `ServableManager.list_models` (TF Serving has no such call
      and answers `UNIMPLEMENTED`).

    Args:
        manager: the servable manager.
    """

    def __init__(self, manager: ServableManager):
        self.manager = manager

    def GetModelStatus(self, request, context):  # noqa: N802 - gRPC method name
        try:
            if not request.HasField("model_spec"):
                raise ServingError("INVALID_ARGUMENT", "Missing ModelSpec")
            return get_model_status(self.manager, request.model_spec)
        except ServingError as error:
            context.abort(grpc.StatusCode[error.code], error.message)

    def HandleReloadConfigRequest(self, request, context):  # noqa: N802 - gRPC method name
        response = model_management_pb2.ReloadConfigResponse()
        try:
            self.manager.reload_config(request.config)
        except ServingError as error:
            logger.error("ReloadConfig failed: %s", error)
            response.status.error_code = STATUS_CODES[error.code]
            response.status.error_message = error.message
            context.abort(grpc.StatusCode[error.code], error.message)
        return response

    def ListModels(self, request, context):  # noqa: N802 - gRPC method name
        models = {"models": self.manager.list_models()}
        return json_format.ParseDict(models, model_listing_pb2.ListModelsResponse())
