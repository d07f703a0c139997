"""REST client for a translator served by TensorFlow Serving (or `python -m keras_attention.serving`)."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

import numpy as np

from keras_attention_client.client_base import TranslationClientBase
from keras_attention_client.client_settings import with_settings
from keras_attention_client.decoding_request import lacking_inputs_error
from keras_attention_client.http_options import HttpOptions
from keras_attention_client.model_metadata import ModelMetadata
from keras_attention_client.model_version_status import ModelVersionStatus
from keras_attention_client.no_answer import NoAnswer
from keras_attention_client.request_options import RequestOptions
from keras_attention_client.retry_policy import RetryPolicy
from keras_attention_client.served_model import ServedModel
from keras_attention_client.wire.contract import SAMPLE, SEARCH
from keras_attention_client.wire.errors import CODE_FOR_HTTP_STATUS, ServingError
from keras_attention_client.wire.json_tensor import array_from_json, json_from_array


class RestTranslationClient(TranslationClientBase):
    """Translates sentences with a model served over TF Serving's REST API.

    The same client as `TranslationClient` (batching, one deadline per
    request within which it waits for the server, `ServingError`), speaking
    HTTP/JSON with the standard library's `urllib` only:

    - `POST /v1/models/NAME[/versions/N | /labels/L]:predict` with the columnar
      body `{"signature_name": ..., "inputs": {"text": [...]}}`; the answer is
      `{"outputs": {...}}`.
    - `GET /v1/models/NAME[/versions/N]` for the status and
      `GET /v1/models/NAME[/versions/N]/metadata` for the signatures.
    - An error answer `{"error": msg}` with HTTP status S becomes
      `ServingError(code, msg, http_status=S)`, the code mapped back with TF
      Serving's table (400 → `INVALID_ARGUMENT`, 404 → `NOT_FOUND`,
      503 → `UNAVAILABLE`, 504 → `DEADLINE_EXCEEDED`, ...). A refused
      connection is `UNAVAILABLE` (retried until the deadline, like a 503,
      and a 404 while the server reports the model loading), a client
      timeout `DEADLINE_EXCEEDED`.

    JSON has no dtypes: numeric outputs of `predict` come back as float64 /
    int64 arrays, strings as `bytes` (like the gRPC client); `translate`
    converts to the contract's types.

    Args:
        base_url: e.g. `"http://localhost:8501"` (TF Serving's REST port is
            8501); `https://` for TLS.
        request: a `RequestOptions`: the model name, signature, per-request
            `timeout` (`None`: no limit), pinned `version` or
            `version_label`, `batch_size`.
        retry: a `RetryPolicy`: `max_retries` (`None`: as many as the
            deadline allows; 0: none), `initial_backoff`, `max_backoff`,
            `backoff_multiplier`.
        http: an `HttpOptions`: `ssl_context`, `cafile` (a PEM CA bundle to
            trust), `headers` (extra HTTP headers for every request).
        **settings: any field of those three by name (e.g.
            `model_name="translator", cafile="ca.pem"`), replacing the given
            objects' values.

    Example:

    ```python
    from keras_attention_client import RestTranslationClient

    client = RestTranslationClient("http://localhost:8501", model_name="translator")
    print(client.translate(["Go."])[0].text)
    ```
    """

    def __init__(
        self,
        base_url: str,
        request: RequestOptions | None = None,
        retry: RetryPolicy | None = None,
        http: HttpOptions | None = None,
        **settings: Any,
    ):
        http = with_settings(http, HttpOptions, settings)
        super().__init__(request, retry, **settings)
        if not isinstance(base_url, str) or not base_url:
            raise ValueError(f"base_url must be 'http://host:port'. Received: {base_url!r}")
        if "://" not in base_url:
            base_url = "http://" + base_url
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(
                f"base_url must be an http:// or https:// URL. Received: base_url={base_url!r}"
            )
        self.base_url = base_url.rstrip("/")
        self._ssl_context = http.context()
        self._headers = dict(http.headers or {})

    @property
    def endpoint(self) -> str:
        """The base URL, `http(s)://host:port`."""
        return self.base_url

    def __repr__(self) -> str:
        return (
            f"RestTranslationClient({self.base_url!r}, model_name={self.model_name!r}, "
            f"signature_name={self.signature_name!r})"
        )

    # URLs -----------------------------------------------------------------------------------

    def _model_url(self, version: int | None = None, *, use_label: bool = True) -> str:
        url = f"{self.base_url}/v1/models/{urllib.parse.quote(self.model_name, safe='')}"
        if version is not None:
            url += f"/versions/{int(version)}"
        elif use_label and self.version_label is not None:
            url += f"/labels/{urllib.parse.quote(self.version_label, safe='')}"
        return url

    def _complete_inputs(
        self, signature_name: str, inputs: dict[str, np.ndarray], timeout: float | None
    ) -> dict[str, np.ndarray]:
        """Every input of the signature, the ones not given taken from its SignatureDef.

        TF Serving's REST API wants every named input in the `inputs` object
        (`Missing named input: ... in 'inputs' object`) and ignores names the
        signature lacks, so unlike gRPC Predict it applies no defaults and
        would silently drop a decoding input an older export does not take.
        The version's metadata (one `GET .../metadata` per `translate`) gives
        both: its `defaults`, and a clear error for inputs it lacks. A
        `text`-only request to another signature (`serving_default`,
        `beam_search`) is sent as is, without asking for the metadata.
        """
        if not inputs and signature_name not in (SEARCH, SAMPLE):
            return inputs

        metadata = self.model_metadata(timeout=timeout)
        signature = metadata.signatures.get(signature_name)
        if signature is None:
            if signature_name in (SEARCH, SAMPLE):
                raise lacking_inputs_error(metadata, signature_name, [])
            return inputs  # the server's own answer names the signature
        lacking = [alias for alias in inputs if alias not in signature.inputs]
        if lacking:
            raise lacking_inputs_error(metadata, signature_name, lacking)
        return {**signature.defaults, **inputs}

    # Transport ------------------------------------------------------------------------------

    def _predict_once(
        self,
        inputs: Mapping[str, Any],
        signature_name: str,
        output_filter: list[str],
        timeout: float | None,
    ) -> dict[str, np.ndarray]:
        body = {
            "signature_name": signature_name,
            "inputs": {alias: json_from_array(values) for alias, values in inputs.items()},
        }
        answer = self._request("POST", self._model_url(self.version) + ":predict", body, timeout)
        if not isinstance(answer, dict) or "outputs" not in answer:
            raise ServingError(
                "DATA_LOSS", f"Expected an 'outputs' object in the answer. Received: {answer!r}"
            )
        outputs = answer["outputs"]
        if isinstance(outputs, dict) and set(outputs) != {"b64"}:
            named = outputs
        else:
            # A signature with a single output answers its bare value, without the alias.
            named = {output_filter[0] if len(output_filter) == 1 else "outputs": outputs}
        if output_filter:
            missing = [name for name in output_filter if name not in named]
            if missing:
                raise ServingError(
                    "INVALID_ARGUMENT",
                    f"output tensor alias not found in signature: {missing[0]} Outputs "
                    f"expected to be in the set {{{','.join(sorted(named))}}}.",
                )
            named = {name: named[name] for name in output_filter}
        return {alias: array_from_json(value) for alias, value in named.items()}

    def _status_once(self, version: int | None, timeout: float | None) -> list[ModelVersionStatus]:
        answer = self._request("GET", self._model_url(version, use_label=False), None, timeout)
        entries = answer.get("model_version_status", []) if isinstance(answer, dict) else []
        return [ModelVersionStatus.from_json(entry) for entry in entries]

    def _metadata_once(self, timeout: float | None) -> ModelMetadata:
        answer = self._request("GET", self._model_url(self.version) + "/metadata", None, timeout)
        if not isinstance(answer, dict):
            raise ServingError("DATA_LOSS", f"Unexpected metadata answer: {answer!r}")
        return ModelMetadata.from_json(answer)

    def _list_models_once(self, timeout: float | None) -> list[ServedModel]:
        try:
            answer = self._request("GET", f"{self.base_url}/v1/models", None, timeout)
            return ServedModel.list_from_json(answer)
        except (ServingError, ValueError) as error:
            # TF Serving answers 400 "Missing model name in request."
            if isinstance(error, ServingError) and error.code not in (
                "INVALID_ARGUMENT",
                "NOT_FOUND",
            ):
                raise
            raise ServingError(
                "UNIMPLEMENTED", f"{self.base_url} does not list its models: {error}"
            ) from error

    def _request(self, method: str, url: str, body: Any, timeout: float | None) -> Any:
        data = None
        headers = {"Accept": "application/json", **self._headers}
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(
                request, timeout=timeout, context=self._ssl_context
            ) as reply:
                payload = reply.read()
        except urllib.error.HTTPError as error:
            raise _http_error(error) from None
        except TimeoutError as error:
            raise ServingError("DEADLINE_EXCEEDED", f"{method} {url}: {error}") from None
        except urllib.error.URLError as error:
            reason = error.reason
            if isinstance(reason, TimeoutError):
                raise ServingError("DEADLINE_EXCEEDED", f"{method} {url}: {reason}") from None
            raise NoAnswer(f"{method} {url}: {reason}") from None
        except (ConnectionError, OSError) as error:
            raise NoAnswer(f"{method} {url}: {error}") from None
        try:
            return json.loads(payload)
        except ValueError as error:
            raise ServingError("DATA_LOSS", f"The answer is not JSON: {error}") from None


def _http_error(error: urllib.error.HTTPError) -> ServingError:
    status = error.code
    try:
        payload = error.read()
    except OSError:
        payload = b""
    message = payload.decode("utf-8", errors="replace").strip()
    try:
        decoded = json.loads(payload)
        if isinstance(decoded, dict) and "error" in decoded:
            message = str(decoded["error"])
    except ValueError:
        pass
    code = CODE_FOR_HTTP_STATUS.get(status, "INTERNAL" if status >= 500 else "UNKNOWN")
    return ServingError(code, message or error.reason or "", http_status=status)
