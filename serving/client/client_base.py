"""Shared behaviour of the gRPC and REST translation clients: batching, retries, waiting."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from keras_attention_client.model_metadata import ModelMetadata
from keras_attention_client.model_version_status import ModelVersionStatus
from keras_attention_client.serving_error import ServingError
from keras_attention_client.translation import Translation, split_batches
from keras_attention_client.translation_contract import DEFAULT_SIGNATURE, TEXT_INPUT

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_MODEL_NAME = "default"
DEFAULT_SIGNATURE_NAME = DEFAULT_SIGNATURE


class TranslationClientBase:
    """Batching, retry and waiting logic; subclasses implement one transport.

    Subclasses implement `_predict_once`, `_status_once` and `_metadata_once`,
    each making exactly one request and raising `ServingError` on failure.
    """

    def __init__(
        self,
        *,
        model_name: str,
        signature_name: str,
        timeout: float | None,
        version: int | None,
        version_label: str | None,
        batch_size: int,
        max_retries: int,
        initial_backoff: float,
        max_backoff: float,
        backoff_multiplier: float,
    ):
        if not isinstance(model_name, str) or not model_name:
            raise ValueError(f"model_name must be a non-empty string. Received: {model_name!r}")
        if not isinstance(signature_name, str) or not signature_name:
            raise ValueError(
                f"signature_name must be a non-empty string. Received: {signature_name!r}"
            )
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be positive seconds or None. Received: {timeout!r}")
        if version is not None and version_label is not None:
            raise ValueError(
                "Pass at most one of version and version_label. "
                f"Received: version={version!r}, version_label={version_label!r}"
            )
        if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
            raise ValueError(f"version must be an integer or None. Received: {version!r}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer. Received: {batch_size!r}")
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be an integer >= 0. Received: {max_retries!r}")
        if initial_backoff < 0 or max_backoff < 0 or backoff_multiplier < 1:
            raise ValueError(
                "Backoff must satisfy initial_backoff >= 0, max_backoff >= 0, "
                f"backoff_multiplier >= 1. Received: initial_backoff={initial_backoff}, "
                f"max_backoff={max_backoff}, backoff_multiplier={backoff_multiplier}"
            )
        self.model_name = model_name
        self.signature_name = signature_name
        self.timeout = timeout
        self.version = version
        self.version_label = version_label
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.initial_backoff = float(initial_backoff)
        self.max_backoff = float(max_backoff)
        self.backoff_multiplier = float(backoff_multiplier)
        self._random = random.Random()

    # Public API -------------------------------------------------------------------------------

    def translate(
        self,
        texts: Sequence[str],
        *,
        batch_size: int | None = None,
        signature_name: str | None = None,
        timeout: float | None = None,
    ) -> list[Translation]:
        """Translates sentences, one request per batch of at most `batch_size`.

        Args:
            texts: the source sentences (a list of `str`; not a single `str`).
            batch_size: sentences per request; defaults to the client's.
            signature_name: e.g. `"beam_search"`; defaults to the client's.
            timeout: seconds allowed per request (the deadline is set on each
                call, each retry gets a fresh one); defaults to the client's.

        Returns:
            One `Translation` per input, in order.

        Raises:
            ServingError: the server's error (after retries for `UNAVAILABLE`).
        """
        if isinstance(texts, (str, bytes)):
            raise TypeError(
                "texts must be a sequence of sentences, not a single string. "
                f"Received: {texts!r}; wrap it in a list."
            )
        texts = list(texts)
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"Each text must be a str. Received: {text!r}")
        batch_size = self.batch_size if batch_size is None else batch_size
        results: list[Translation] = []
        for batch in split_batches(texts, batch_size):
            outputs = self.predict(
                {TEXT_INPUT: np.array(batch, dtype=object)},
                signature_name=signature_name,
                timeout=timeout,
            )
            try:
                translations = Translation.from_outputs(outputs)
            except ValueError as error:
                raise ServingError("FAILED_PRECONDITION", str(error)) from error
            if len(translations) != len(batch):
                raise ServingError(
                    "FAILED_PRECONDITION",
                    f"The model answered {len(translations)} rows for {len(batch)} inputs.",
                )
            results.extend(translations)
        return results

    def predict(
        self,
        inputs: Mapping[str, Any],
        *,
        signature_name: str | None = None,
        output_filter: Sequence[str] | None = None,
        timeout: float | None = None,
    ) -> dict[str, np.ndarray]:
        """Runs any signature: inputs by alias in, outputs by alias out (NumPy arrays).

        Args:
            inputs: arrays (or lists) by input alias, e.g. `{"text": ["a b"]}`.
            signature_name: defaults to the client's.
            output_filter: the output aliases to return (default: all).
            timeout: seconds for the request; defaults to the client's.

        Returns:
            The outputs by alias. String tensors come back as `object` arrays
            of `bytes`.
        """
        signature_name = self.signature_name if signature_name is None else signature_name
        timeout = self.timeout if timeout is None else timeout
        return self._with_retries(
            self._predict_once, inputs, signature_name, list(output_filter or ()), timeout
        )

    def model_status(
        self, *, version: int | None = None, timeout: float | None = None
    ) -> list[ModelVersionStatus]:
        """The state of the model's versions (GetModelStatus), oldest first.

        Args:
            version: ask about this version only (default: every version the
                server knows, including unloaded and failed ones).
            timeout: seconds for the request.
        """
        timeout = self.timeout if timeout is None else timeout
        return self._with_retries(self._status_once, version, timeout)

    def model_metadata(self, *, timeout: float | None = None) -> ModelMetadata:
        """The served version's signatures (GetModelMetadata)."""
        timeout = self.timeout if timeout is None else timeout
        return self._with_retries(self._metadata_once, timeout)

    def wait_until_available(
        self, timeout: float = 60.0, *, poll_interval: float = 0.2
    ) -> list[ModelVersionStatus]:
        """Blocks until the model (the pinned version, if any) is AVAILABLE.

        Args:
            timeout: seconds to wait in total.
            poll_interval: seconds between status requests.

        Returns:
            The model's version statuses once one is available.

        Raises:
            ServingError: `DEADLINE_EXCEEDED` if it is not available in time.
        """
        deadline = time.monotonic() + timeout
        last_error: ServingError | None = None
        while True:
            remaining = deadline - time.monotonic()
            try:
                statuses = self._status_once(
                    self.version, max(min(remaining, self.timeout or remaining), 0.05)
                )
                if any(
                    status.available and (self.version is None or status.version == self.version)
                    for status in statuses
                ):
                    return statuses
            except ServingError as error:
                if error.code not in ("UNAVAILABLE", "NOT_FOUND", "DEADLINE_EXCEEDED"):
                    raise
                last_error = error
            if time.monotonic() + poll_interval > deadline:
                detail = f" Last error: {last_error}" if last_error else ""
                raise ServingError(
                    "DEADLINE_EXCEEDED",
                    f"Model {self.model_name!r} was not available after {timeout} s.{detail}",
                )
            time.sleep(poll_interval)

    def close(self) -> None:
        """Releases the connection (the client cannot be used afterwards)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # Retry logic --------------------------------------------------------------------------

    def backoff_delays(self) -> list[float]:
        """The sleep before each retry, without jitter: exponential, capped."""
        return [
            min(self.max_backoff, self.initial_backoff * self.backoff_multiplier**attempt)
            for attempt in range(self.max_retries)
        ]

    def _with_retries(self, fn: Callable[..., T], *args: Any) -> T:
        delays = self.backoff_delays()
        attempt = 0
        while True:
            try:
                return fn(*args)
            except ServingError as error:
                if not error.retryable or attempt >= len(delays):
                    raise
                # "Equal jitter": half the delay fixed, half random, so many clients
                # retrying at once spread out.
                delay = delays[attempt] * (0.5 + 0.5 * self._random.random())
                logger.warning(
                    "%s (attempt %d of %d); retrying in %.2f s",
                    error,
                    attempt + 1,
                    len(delays) + 1,
                    delay,
                )
                time.sleep(delay)
                attempt += 1

    # Transport hooks ----------------------------------------------------------------------

    def _predict_once(
        self,
        inputs: Mapping[str, Any],
        signature_name: str,
        output_filter: list[str],
        timeout: float | None,
    ) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _status_once(self, version: int | None, timeout: float | None) -> list[ModelVersionStatus]:
        raise NotImplementedError

    def _metadata_once(self, timeout: float | None) -> ModelMetadata:
        raise NotImplementedError
