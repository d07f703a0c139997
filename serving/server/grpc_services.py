"""The gRPC services: TF Serving's PredictionService and ModelService, and our ModelListing."""

from __future__ import annotations

import logging

import grpc
from tensorflow_serving.apis import (
    inference_pb2,
    model_management_pb2,
    model_service_pb2_grpc,
    prediction_service_pb2_grpc,
)

from keras_attention.serving.server import predict
from keras_attention.serving.server.servable_manager import ServableManager
from keras_attention_client.wire.errors import ServingError
from keras_attention_client.wire.protos import model_listing_pb2_grpc

logger = logging.getLogger(__name__)


def _answer(context, request, handler):
    """`handler()`'s answer; a `ServingError` aborts with its status, anything else `INTERNAL`."""
    try:
        if request is not None and not request.HasField("model_spec"):
            raise ServingError("INVALID_ARGUMENT", "Missing ModelSpec")
        return handler()
    except ServingError as error:
        context.abort(grpc.StatusCode[error.code], error.message)
    except Exception as error:  # noqa: BLE001 - never let a request kill the worker
        logger.exception("Request failed unexpectedly")
        context.abort(grpc.StatusCode.INTERNAL, f"{type(error).__name__}: {error}")


class PredictionService(prediction_service_pb2_grpc.PredictionServiceServicer):
    """`tensorflow.serving.PredictionService`: Predict and GetModelMetadata; the rest refused.

    Predict runs with the RPC's remaining deadline, through `runner` if given
    (the server's `Batcher.run` with `--enable_batching`).
    """

    def __init__(self, manager: ServableManager, *, runner: predict.Runner | None = None):
        self.manager = manager
        self.runner = runner

    def _on_servable(self, context, request, spec, run):
        def handler():
            with self.manager.servable(spec) as session:
                return run(session)

        return _answer(context, request, handler)

    def Predict(self, request, context):  # noqa: N802 - gRPC method name
        remaining = context.time_remaining()
        timeout = None if remaining is None else int(remaining * 1000)

        def run(session):
            return predict.run_predict(session, request, timeout_in_ms=timeout, runner=self.runner)

        return self._on_servable(context, request, request.model_spec, run)

    def GetModelMetadata(self, request, context):  # noqa: N802 - gRPC method name
        def handler():
            predict.check_metadata_fields(request.metadata_field)  # first, as TF Serving
            with self.manager.servable(request.model_spec) as session:
                return predict.get_model_metadata(session)

        return _answer(context, request, handler)

    def Classify(self, request, context):  # noqa: N802 - gRPC method name
        return self._refuse(context, request, request.model_spec, predict.CLASSIFY)

    def Regress(self, request, context):  # noqa: N802 - gRPC method name
        return self._refuse(context, request, request.model_spec, predict.REGRESS)

    def MultiInference(self, request, context):  # noqa: N802 - gRPC method name
        task = request.tasks[0] if request.tasks else inference_pb2.InferenceTask()
        return self._refuse(context, None, task.model_spec, task.method_name)

    def _refuse(self, context, request, spec, method_name):
        return self._on_servable(
            context, request, spec, lambda s: predict.refuse(s, method_name, spec.signature_name)
        )


class ModelService(
    model_service_pb2_grpc.ModelServiceServicer, model_listing_pb2_grpc.ModelListingServicer
):
    """`tensorflow.serving.ModelService` and `keras_attention.ModelListing` (not in TF Serving).

    HandleReloadConfigRequest blocks until new versions load; a failure is the
    RPC's status, as in TF Serving.
    """

    def __init__(self, manager: ServableManager):
        self.manager = manager

    def GetModelStatus(self, request, context):  # noqa: N802 - gRPC method name
        return _answer(context, request, lambda: self.manager.model_status(request.model_spec))

    def HandleReloadConfigRequest(self, request, context):  # noqa: N802 - gRPC method name
        def reload():
            self.manager.reload_config(request.config)
            return model_management_pb2.ReloadConfigResponse()

        return _answer(context, None, reload)

    def ListModels(self, request, context):  # noqa: N802 - gRPC method name
        return self.manager.list_models()
