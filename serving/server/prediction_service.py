"""TF Serving's gRPC PredictionService: Predict and GetModelMetadata (Classify & co. refused)."""

from __future__ import annotations

import logging

import grpc
from tensorflow_serving.apis import model_pb2, prediction_service_pb2_grpc

from keras_attention.serving.server import inference
from keras_attention.serving.server.servable_manager import ServableManager
from keras_attention_client.wire.errors import ServingError

logger = logging.getLogger(__name__)


class PredictionService(prediction_service_pb2_grpc.PredictionServiceServicer):
    """`tensorflow.serving.PredictionService` over a `ServableManager`.

    Each RPC:

    1. checks the request has a `model_spec` (`INVALID_ARGUMENT`
       "Missing ModelSpec" otherwise);
    2. takes a reference on the version the spec names (`NOT_FOUND` /
       `INVALID_ARGUMENT` from the manager), so an unload waits for it;
    3. runs it with `inference` and TF Serving's validation, with the RPC's
       remaining deadline as the Session's `timeout_in_ms`;
    4. answers the result, or aborts with the `ServingError`'s status.

    Requests run concurrently on the gRPC server's thread pool; one bad
    request only fails itself.

    Args:
        manager: the servable manager.
        runner: runs Predict's Session (default `ServingSession.run`; the
            server's `Batcher.run` with `--enable_batching`).
    """

    def __init__(self, manager: ServableManager, *, runner: inference.Runner | None = None):
        self.manager = manager
        self.runner = runner

    def Predict(self, request, context):  # noqa: N802 - gRPC method name
        def predict(session, timeout_in_ms):
            return inference.run_predict(
                session, request, timeout_in_ms=timeout_in_ms, runner=self.runner
            )

        return self._handle(request.model_spec, request, context, predict)

    def GetModelMetadata(self, request, context):  # noqa: N802 - gRPC method name
        def metadata(session, _):
            return inference.get_model_metadata(session)

        return self._handle(request.model_spec, request, context, metadata)

    def Classify(self, request, context):  # noqa: N802 - gRPC method name
        def classify(session, _):
            inference.reject_classify_regress(session, inference.CLASSIFY, signature)

        signature = request.model_spec.signature_name
        return self._handle(request.model_spec, request, context, classify)

    def Regress(self, request, context):  # noqa: N802 - gRPC method name
        def regress(session, _):
            inference.reject_classify_regress(session, inference.REGRESS, signature)

        signature = request.model_spec.signature_name
        return self._handle(request.model_spec, request, context, regress)

    def MultiInference(self, request, context):  # noqa: N802 - gRPC method name
        names = {task.model_spec.name for task in request.tasks}
        if "" in names or len(names) > 1:
            message = (
                "Found ModelSpec with an empty model name."
                if "" in names
                else "All ModelSpecs in a MultiInferenceRequest must access the same model name."
            )
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, message)
        spec = request.tasks[0].model_spec if request.tasks else model_pb2.ModelSpec()
        return self._handle(
            spec,
            None,
            context,
            lambda session, _: inference.reject_multi_inference(session, request.tasks),
        )

    def _handle(self, model_spec, request, context, handler):
        """Runs `handler(session, timeout_in_ms)` on the version `model_spec` names."""
        try:
            if request is not None and not request.HasField("model_spec"):
                raise ServingError("INVALID_ARGUMENT", "Missing ModelSpec")
            if hasattr(request, "metadata_field"):
                inference.validate_metadata_request(request)
            remaining = context.time_remaining()
            timeout_in_ms = None if remaining is None else int(remaining * 1000)
            with self.manager.servable(model_spec) as session:
                return handler(session, timeout_in_ms)
        except ServingError as error:
            context.abort(grpc.StatusCode[error.code], error.message)
        except Exception as error:  # noqa: BLE001 - never let a request kill the worker
            logger.exception("Request failed unexpectedly")
            context.abort(grpc.StatusCode.INTERNAL, f"{type(error).__name__}: {error}")
