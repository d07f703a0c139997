"""TF Serving's gRPC PredictionService: Predict and GetModelMetadata (Classify & co. refused)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import grpc
from tensorflow_serving.apis import model_pb2, prediction_service_pb2_grpc

from keras_attention.serving.server import inference
from keras_attention.serving.server.metrics import (
    REQUEST_COUNT,
    REQUEST_LATENCY,
    RUNTIME_LATENCY,
    Metrics,
)
from keras_attention.serving.server.servable_manager import ServableManager
from keras_attention_client.serving_error import ServingError

logger = logging.getLogger(__name__)


class PredictionService(prediction_service_pb2_grpc.PredictionServiceServicer):
    """`tensorflow.serving.PredictionService` over a `ServableManager`.

    Each RPC:

    1. checks the request has a `model_spec` (`INVALID_ARGUMENT`
       "Missing ModelSpec" otherwise);
    2. takes a reference on the version the spec names (`NOT_FOUND` /
       `INVALID_ARGUMENT` from the manager), so an unload waits for it;
    3. runs it with `keras_attention.serving.server.inference` and TF Serving's validation, with the
       RPC's remaining deadline as the Session's `timeout_in_ms`;
    4. answers the result, or aborts with the `ServingError`'s status.

    Requests run concurrently on the gRPC server's thread pool; one bad
    request only fails itself.

    Args:
        manager: the servable manager.
        metrics: where request counts and latencies are recorded.
        method_name_check: check SignatureDef method names before refusing
            Classify / Regress / MultiInference (TF Serving's
            `--enable_signature_method_name_check`).
        runner: runs Predict's Session (default `bundle.run`; the server's
            `Batcher.run` with `--enable_batching`).
    """

    def __init__(
        self,
        manager: ServableManager,
        *,
        metrics: Metrics | None = None,
        method_name_check: bool = False,
        runner: inference.Runner | None = None,
    ):
        self.manager = manager
        self.metrics = metrics
        self.method_name_check = method_name_check
        self.runner = runner

    def Predict(self, request, context):  # noqa: N802 - gRPC method name
        return self._handle("Predict", request, context, self._predict)

    def Classify(self, request, context):  # noqa: N802 - gRPC method name
        return self._handle("Classify", request, context, self._classify)

    def Regress(self, request, context):  # noqa: N802 - gRPC method name
        return self._handle("Regress", request, context, self._regress)

    def MultiInference(self, request, context):  # noqa: N802 - gRPC method name
        return self._handle("MultiInference", request, context, self._multi_inference)

    def GetModelMetadata(self, request, context):  # noqa: N802 - gRPC method name
        return self._handle("GetModelMetadata", request, context, self._metadata)

    # Handlers ---------------------------------------------------------------------------------

    def _predict(self, request, timeout_in_ms, observe):
        _require_model_spec(request)
        with self.manager.servable(request.model_spec) as bundle:
            return inference.run_predict(
                bundle,
                request,
                timeout_in_ms=timeout_in_ms,
                observe_runtime=observe,
                runner=self.runner,
            )

    def _classify(self, request, timeout_in_ms, observe):
        _require_model_spec(request)
        with self.manager.servable(request.model_spec) as bundle:
            inference.reject_classify_regress(
                bundle,
                inference.CLASSIFY,
                request.model_spec.signature_name,
                method_name_check=self.method_name_check,
            )

    def _regress(self, request, timeout_in_ms, observe):
        _require_model_spec(request)
        with self.manager.servable(request.model_spec) as bundle:
            inference.reject_classify_regress(
                bundle,
                inference.REGRESS,
                request.model_spec.signature_name,
                method_name_check=self.method_name_check,
            )

    def _multi_inference(self, request, timeout_in_ms, observe):
        names = {task.model_spec.name for task in request.tasks}
        if "" in names:
            raise ServingError("INVALID_ARGUMENT", "Found ModelSpec with an empty model name.")
        if len(names) > 1:
            raise ServingError(
                "INVALID_ARGUMENT",
                "All ModelSpecs in a MultiInferenceRequest must access the same model name.",
            )
        spec = request.tasks[0].model_spec if request.tasks else model_pb2.ModelSpec()
        with self.manager.servable(spec) as bundle:
            inference.reject_multi_inference(
                bundle, request.tasks, method_name_check=self.method_name_check
            )

    def _metadata(self, request, timeout_in_ms, observe):
        _require_model_spec(request)
        inference.validate_metadata_request(request)
        with self.manager.servable(request.model_spec) as bundle:
            return inference.get_model_metadata(bundle)

    # Plumbing ---------------------------------------------------------------------------------

    def _handle(self, api: str, request, context, handler: Callable):
        start = time.perf_counter()
        model_name = _model_name(request)
        status = "OK"

        def observe(runtime_api: str, microseconds: float) -> None:
            if self.metrics is not None:
                self.metrics.observe(
                    RUNTIME_LATENCY,
                    {"model_name": model_name, "API": runtime_api, "runtime": "TF1"},
                    microseconds,
                )

        try:
            remaining = context.time_remaining()
            timeout_in_ms = None if remaining is None else int(remaining * 1000)
            return handler(request, timeout_in_ms, observe)
        except ServingError as error:
            status = error.code
            logger.debug("%s failed: %s", api, error)
            context.abort(grpc.StatusCode[error.code], error.message)
        except Exception as error:  # noqa: BLE001 - never let a request kill the worker
            status = "INTERNAL"
            logger.exception("%s failed unexpectedly", api)
            context.abort(grpc.StatusCode.INTERNAL, f"{type(error).__name__}: {error}")
        finally:
            if self.metrics is not None and api != "GetModelMetadata":
                self.metrics.increment(REQUEST_COUNT, {"model_name": model_name, "status": status})
                self.metrics.observe(
                    REQUEST_LATENCY,
                    {"model_name": model_name, "API": api, "entrypoint": "GRPC", "status": status},
                    (time.perf_counter() - start) * 1e6,
                )


def _require_model_spec(request) -> None:
    if not request.HasField("model_spec"):
        raise ServingError("INVALID_ARGUMENT", "Missing ModelSpec")


def _model_name(request) -> str:
    if hasattr(request, "tasks"):
        return request.tasks[0].model_spec.name if request.tasks else ""
    return request.model_spec.name
