"""TF Serving's REST API (`/v1/models/...`) over a `ServableManager`, transport-free."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import time
import urllib.parse

from google.protobuf import json_format
from tensorflow_serving.apis import (
    get_model_metadata_pb2,
    model_pb2,
    predict_pb2,
)

from keras_attention.serving.server import inference, json_tensor
from keras_attention.serving.server.model_service import get_model_status
from keras_attention.serving.server.servable_manager import ServableManager
from keras_attention_client.wire.errors import HTTP_STATUS_FOR_CODE, ServingError
from keras_attention_client.wire.tensors import tensor_proto_to_ndarray

logger = logging.getLogger(__name__)

# tensorflow_serving/model_servers/http_rest_api_util.cc
_PREDICTION_API = re.compile(
    r"(?i)/v1/models/([^/:]+)(?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))?"
    r":(classify|regress|predict)"
)
_MODEL_STATUS_API = re.compile(
    r"(?i)/v1/models(?:/([^/:]+))?(?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))?(?:/(metadata))?"
)
_API_PREFIX = re.compile(r"(?i)/v1/.*")
_MAX_VERSION = 2**63 - 1


@dataclasses.dataclass(frozen=True)
class RestResponse:
    """An HTTP answer: status, body and content type."""

    status: int
    body: str
    content_type: str = "application/json"


class RestApiHandler:
    """Answers TF Serving's REST routes, with its JSON formats and error mapping.

    Routes (model names are URL-decoded, paths match case-insensitively):

    - `GET /v1/models/NAME[/versions/N | /labels/L]`: GetModelStatus as JSON
      (`{"model_version_status": [{"version": "1", "state": "AVAILABLE",
      "status": {"error_code": "OK", "error_message": ""}}]}`).
    - `GET /v1/models/NAME[/versions/N | /labels/L]/metadata`: the
      SignatureDefs (`{"model_spec": ..., "metadata": {"signature_def": ...}}`).
    - `POST /v1/models/NAME[/versions/N | /labels/L]:predict`: `instances`
      (answers `predictions`) or `inputs` (answers `outputs`).
    - `POST ...:classify` / `...:regress`: refused as TF Serving refuses them
      for Predict-only signatures (`inference.reject_classify_regress`).
    - The Prometheus page at the monitoring config's path, if enabled.

    Errors answer `{"error": message}` with TF Serving's HTTP status for the
    code (400 `INVALID_ARGUMENT` / `FAILED_PRECONDITION`, 404 `NOT_FOUND`,
    504 `DEADLINE_EXCEEDED`, 503 `UNAVAILABLE`, 500 `INTERNAL`, ...).

    Args:
        manager: the servable manager.
        timeout_in_ms: Session run timeout per request (TF Serving's
            `--rest_api_timeout_in_ms`); 0 or less: none.
        metrics: where request counts and latencies are recorded.
        prometheus_path: the path of the metrics page (`None`: disabled).
        method_name_check: check SignatureDef method names in classify/regress.
        runner: runs Predict's Session (the server's `Batcher.run` with
            `--enable_batching`).
    """

    def __init__(
        self,
        manager: ServableManager,
        *,
        timeout_in_ms: int = 30000,
        metrics: Metrics | None = None,
        prometheus_path: str | None = None,
        method_name_check: bool = False,
        runner: inference.Runner | None = None,
    ):
        self.manager = manager
        self.timeout_in_ms = timeout_in_ms if timeout_in_ms and timeout_in_ms > 0 else None
        self.metrics = metrics
        self.prometheus_path = prometheus_path
        self.method_name_check = method_name_check
        self.runner = runner

    def process(self, method: str, path: str, body: bytes = b"") -> RestResponse:
        """Answers one HTTP request (`path` may carry a query string, which is ignored)."""
        path = urllib.parse.urlsplit(path).path
        if self.prometheus_path and path == self.prometheus_path and self.metrics is not None:
            return RestResponse(200, self.metrics.render(), "text/plain; version=0.0.4")
        if not _API_PREFIX.fullmatch(path):
            return RestResponse(404, json_tensor.make_json_from_error(f"Not found: {path}"))
        start = time.perf_counter()
        model_name = ""
        api = ""
        status = "OK"
        try:
            error = ServingError("INVALID_ARGUMENT", f"Malformed request: {method} {path}")
            if method == "POST":
                match = _PREDICTION_API.fullmatch(path)
                if match is None:
                    raise error
                model_name, version, label = _model_info(match)
                api = match.group(4).lower()
                spec = _model_spec(model_name, version, label)
                if api == "predict":
                    return RestResponse(200, self._predict(spec, body))
                return RestResponse(200, self._classify_or_regress(api, spec, body))
            if method == "GET":
                match = _MODEL_STATUS_API.fullmatch(path)
                if match is None:
                    raise error
                model_name, version, label = _model_info(match)
                if not model_name:
                    raise ServingError("INVALID_ARGUMENT", "Missing model name in request.")
                spec = _model_spec(model_name, version, label)
                if match.group(4):
                    return RestResponse(200, self._metadata(spec))
                return RestResponse(200, self._status(spec))
            raise error
        except ServingError as failure:
            status = failure.code
            logger.debug("REST %s %s failed: %s", method, path, failure)
            return RestResponse(
                HTTP_STATUS_FOR_CODE.get(failure.code, 500),
                json_tensor.make_json_from_error(failure.message),
            )
        except Exception as failure:  # noqa: BLE001 - a request must never kill the server
            status = "INTERNAL"
            logger.exception("REST %s %s failed unexpectedly", method, path)
            return RestResponse(
                500, json_tensor.make_json_from_error(f"{type(failure).__name__}: {failure}")
            )
        finally:
            if self.metrics is not None and api:
                self.metrics.increment(REQUEST_COUNT, {"model_name": model_name, "status": status})
                self.metrics.observe(
                    REQUEST_LATENCY,
                    {
                        "model_name": model_name,
                        "API": api.capitalize(),
                        "entrypoint": "REST",
                        "status": status,
                    },
                    (time.perf_counter() - start) * 1e6,
                )

    # Routes -----------------------------------------------------------------------------------

    def _predict(self, spec: model_pb2.ModelSpec, body: bytes) -> str:
        document = json_tensor.parse_json(body)
        request = predict_pb2.PredictRequest()
        request.model_spec.CopyFrom(spec)
        request.model_spec.signature_name = json_tensor.signature_name_of(document)
        signature_name = request.model_spec.signature_name or inference.DEFAULT_SIGNATURE
        with self.manager.servable(request.model_spec) as bundle:
            signature_defs = bundle.meta_graph_def.signature_def
            if signature_name not in signature_defs:
                raise ServingError(
                    "INVALID_ARGUMENT",
                    f'Serving signature name: "{signature_name}" not found in signature def',
                )
            fmt = json_tensor.fill_predict_inputs(
                document,
                request.model_spec.signature_name,
                signature_defs[signature_name].inputs,
                request.inputs,
            )
            response = inference.run_predict(
                bundle,
                request,
                timeout_in_ms=self.timeout_in_ms,
                observe_runtime=self._observer(spec.name),
                runner=self.runner,
            )
        outputs = {
            alias: tensor_proto_to_ndarray(tensor) for alias, tensor in response.outputs.items()
        }
        return json_tensor.make_json_from_tensors(outputs, fmt)

    def _classify_or_regress(self, api: str, spec: model_pb2.ModelSpec, body: bytes) -> str:
        document = json_tensor.parse_json(body)
        spec.signature_name = json_tensor.signature_name_of(document)
        with self.manager.servable(spec) as bundle:
            inference.reject_classify_regress(
                bundle,
                inference.CLASSIFY if api == "classify" else inference.REGRESS,
                spec.signature_name,
                method_name_check=self.method_name_check,
            )

    def _status(self, spec: model_pb2.ModelSpec) -> str:
        if spec.WhichOneof("version_choice") == "version_label":
            # Status is by version; resolve the label the way a request would.
            with self.manager.servable(spec) as bundle:
                spec = model_pb2.ModelSpec(name=spec.name)
                spec.version.value = bundle.version
        response = get_model_status(self.manager, spec)
        return json_format.MessageToJson(
            response, indent=1, always_print_fields_with_no_presence=True
        )

    def _metadata(self, spec: model_pb2.ModelSpec) -> str:
        request = get_model_metadata_pb2.GetModelMetadataRequest(
            model_spec=spec, metadata_field=[inference.SIGNATURE_DEF_FIELD]
        )
        inference.validate_metadata_request(request)
        with self.manager.servable(spec) as bundle:
            response = inference.get_model_metadata(bundle)
        signature_def_map = get_model_metadata_pb2.SignatureDefMap()
        response.metadata[inference.SIGNATURE_DEF_FIELD].Unpack(signature_def_map)
        document = {
            "model_spec": json_format.MessageToDict(
                response.model_spec,
                preserving_proto_field_name=True,
                always_print_fields_with_no_presence=True,
            ),
            "metadata": {
                "signature_def": json_format.MessageToDict(
                    signature_def_map,
                    preserving_proto_field_name=True,
                    always_print_fields_with_no_presence=True,
                )
            },
        }
        return json.dumps(document, indent=1)

    def _observer(self, model_name: str):
        def observe(api: str, microseconds: float) -> None:
            if self.metrics is not None:
                self.metrics.observe(
                    RUNTIME_LATENCY,
                    {"model_name": model_name, "API": api, "runtime": "TF1"},
                    microseconds,
                )

        return observe


def _model_info(match: re.Match) -> tuple[str, int | None, str | None]:
    name = urllib.parse.unquote(match.group(1) or "")
    version = None
    if match.group(2):
        version = int(match.group(2))
        if version > _MAX_VERSION:
            raise ServingError(
                "INVALID_ARGUMENT", f"Failed to convert version: {match.group(2)} to numeric."
            )
    label = urllib.parse.unquote(match.group(3)) if match.group(3) else None
    return name, version, label


def _model_spec(name: str, version: int | None, label: str | None) -> model_pb2.ModelSpec:
    spec = model_pb2.ModelSpec(name=name)
    if version is not None:
        spec.version.value = version
    if label is not None:
        spec.version_label = label
    return spec
