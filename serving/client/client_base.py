"""Shared behaviour of the gRPC and REST translation clients: batching, retries, waiting."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from keras_attention_client import retries
from keras_attention_client.client_settings import (
    check_no_settings_left,
    option_property,
    with_settings,
)
from keras_attention_client.decoding_request import (
    decoding_request,
    explain_missing_inputs,
    steering,
)
from keras_attention_client.defaults import DEFAULT_MODEL_NAME
from keras_attention_client.model_metadata import ModelMetadata
from keras_attention_client.model_version_status import ModelVersionStatus
from keras_attention_client.request_options import RequestOptions
from keras_attention_client.retry_policy import RetryPolicy
from keras_attention_client.served_model import ServedModel
from keras_attention_client.wire.contract import (
    DEFAULT_SIGNATURE,
    TEXT_INPUT,
)
from keras_attention_client.wire.decoding_options import DecodingOptions
from keras_attention_client.wire.errors import ServingError
from keras_attention_client.wire.translation import Translation

T = TypeVar("T")

DEFAULT_SIGNATURE_NAME = DEFAULT_SIGNATURE


class TranslationClientBase:
    """Batching, retry and waiting logic; subclasses implement one transport.

    Every call has one deadline, `timeout` seconds from its start. Until
    then the client waits for the server instead of failing: a server that
    is not up yet or restarting (`UNAVAILABLE`, a refused connection) and a
    model the server reports still loading (`NOT_FOUND` while a version is
    `START` or `LOADING`) are retried with exponential backoff (`max_retries`
    caps the number of retries; `None`: as many as the deadline allows).
    Any other error is raised at once. So a client started right after its
    server works as soon as the server serves.

    Subclasses implement `endpoint`, `_predict_once`, `_status_once`,
    `_metadata_once` and `_list_models_once`, each making exactly one request within the seconds it
    is given and raising `ServingError` on failure (`NoAnswer` when no
    server answered).

    Args:
        request: a `RequestOptions` (model, signature, timeout, version,
            batch size).
        retry: a `RetryPolicy` (retries and backoff).
        **settings: fields of either by name, replacing their values.

    Attributes:
        request: the `RequestOptions` in use.
        retry: the `RetryPolicy` in use.
        model_name, signature_name, timeout, version, version_label,
            batch_size: `request`'s fields; setting one (e.g.
            `client.model_name = "translator"`) replaces `request`.
        max_retries, initial_backoff, max_backoff, backoff_multiplier:
            `retry`'s fields; setting one replaces `retry`.
    """

    model_name = option_property("request", "model_name")
    signature_name = option_property("request", "signature_name")
    timeout = option_property("request", "timeout")
    version = option_property("request", "version")
    version_label = option_property("request", "version_label")
    batch_size = option_property("request", "batch_size")
    max_retries = option_property("retry", "max_retries")
    initial_backoff = option_property("retry", "initial_backoff")
    max_backoff = option_property("retry", "max_backoff")
    backoff_multiplier = option_property("retry", "backoff_multiplier")

    def __init__(
        self,
        request: RequestOptions | None = None,
        retry: RetryPolicy | None = None,
        **settings: Any,
    ):
        request = with_settings(request, RequestOptions, settings)
        retry = with_settings(retry, RetryPolicy, settings)
        check_no_settings_left(settings)
        self.request = request
        self.retry = retry
        self._random = random.Random()

    @property
    def endpoint(self) -> str:
        """The server's address as given (`host:port` or `http://host:port`)."""
        raise NotImplementedError

    # Public API -------------------------------------------------------------------------------

    def translate(
        self,
        texts: Sequence[str],
        options: DecodingOptions | None = None,
        *,
        batch_size: int | None = None,
        signature_name: str | None = None,
        timeout: float | None = None,
        prefixes: Sequence[str] | None = None,
        next_words: int = 0,
        constraints: Sequence[Sequence[str]] | None = None,
        **decoding: Any,
    ) -> list:
        """Translates sentences, one request per batch of at most `batch_size`.

        The sentences are sorted by length into batches (less padding), as
        `keras-attention translate` does, and the results returned in input
        order. The decoding options (`DecodingOptions`, or its fields as
        keywords) are the export's optional inputs
        (`keras_attention_client.wire.contract.DECODING_INPUTS`); each one
        given is sent, the others take the export's defaults:

        - `sample=True` calls the `sample` signature (`temperature`, `top_k`,
          `top_p`, `seed`, `max_output_length`); with a `seed`, batch `i` is
          sent seed `seed + i` (modulo 2**31), so the same texts, batch size
          and seed give the same translations as `keras-attention translate
          --sample --seed`.
        - Otherwise any of `beam_width`, `n_best`, `length_penalty`,
          `max_output_length` calls the `search` signature with those
          given (beam width 1, the default, is greedy search).
        - `prefixes` (one string per text, `""` for none) and `next_words`
          (k > 0) call `search` too: each translation starts with its
          prefix, and its `Translation.next_words` lists the k most probable
          words after the prefix.
        - `constraints` (one list of phrases per text, `[]` for none) calls
          `search` too: each translation contains its phrases (constrained
          beam search at the request's beam width; the export's
          `constraints` input, phrases joined by `CONSTRAINT_SEPARATOR`).
        - With none of them the request goes to `signature_name` (the
          client's, `serving_default` by default, or `beam_search`) with
          `text` only, as before exports took decoding inputs.
        - `signature_name="steered_beam_search"` sends `prefixes` and
          `constraints` (each `""` for none when not given) to that
          signature instead of `search`: beam search at the export's beam
          width and length penalty, whose requests a server with
          `--enable_batching` can merge. It takes no decoding option and no
          `next_words` (a `ValueError`).

        The server checks the values: one outside its range is answered
        `INVALID_ARGUMENT` naming it and the range. An export made before
        decoding inputs existed (no `search` or `sample` signature) answers
        a request that sends one with a `ServingError` naming the model
        version and the signatures it has.

        Args:
            texts: the source sentences (a list of `str`; not a single `str`).
            options: a `DecodingOptions` (default: none given).
            batch_size: sentences per request; defaults to the client's.
            signature_name: e.g. `"beam_search"`; defaults to the client's
                (decoding options override `serving_default` and
                `beam_search`, as described above).
            timeout: seconds allowed per request (one per batch), waiting for
                the server and retries included; defaults to the client's.
            **decoding: `DecodingOptions` fields, e.g. `beam_width=4`,
                `n_best=2`, `sample=True, seed=1` (they replace `options`').

        Returns:
            One `Translation` per input, in order; with `n_best > 1`, one
            list of `n_best` `Translation`s per input, best first.

        Raises:
            ValueError, TypeError: bad arguments (types, sampling combined
                with beam search).
            ServingError: the server's error, or `UNAVAILABLE` naming the
                address when it was not ready by the deadline.
        """
        options = DecodingOptions.of(options, **decoding)
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
        request = decoding_request(
            signature_name or self.signature_name,
            options,
            explicit_signature=signature_name is not None,
        )
        steered = steering(request, options, len(texts), prefixes, next_words, constraints)
        signature_name = steered.signature_name
        listed = options.listed
        seed = options.seed
        inputs = self._complete_inputs(signature_name, steered.inputs, timeout)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        results: list = [None] * len(texts)
        for batch_index, indices in enumerate(split_batches(order, batch_size)):
            batch = [texts[i] for i in indices]
            request = {TEXT_INPUT: np.array(batch, dtype=object), **inputs, **steered.rows(indices)}
            if seed is not None and "seed" in inputs:
                request["seed"] = np.int32((seed + batch_index) % 2**31)
            try:
                outputs = self.predict(request, signature_name=signature_name, timeout=timeout)
            except ServingError as error:
                raise explain_missing_inputs(
                    error, signature_name, inputs, self._served_metadata
                ) from error
            try:
                if listed:
                    translations = Translation.from_n_best_outputs(outputs)
                else:
                    translations = Translation.from_outputs(outputs)
            except ValueError as error:
                raise ServingError("FAILED_PRECONDITION", str(error)) from error
            if len(translations) != len(batch):
                raise ServingError(
                    "FAILED_PRECONDITION",
                    f"The model answered {len(translations)} rows for {len(batch)} inputs.",
                )
            for index, translation in zip(indices, translations, strict=True):
                results[index] = translation
        return results

    def _complete_inputs(
        self, signature_name: str, inputs: dict[str, np.ndarray], timeout: float | None
    ) -> dict[str, np.ndarray]:
        """The decoding inputs to send with each batch (those given; a transport that must
        send every input adds the SignatureDef's defaults)."""
        return inputs

    def _served_metadata(self) -> ModelMetadata:
        """The served version's metadata, asked for within the client's timeout."""
        return self.model_metadata(timeout=self.timeout)

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
            timeout: seconds for the request, waiting for the server and
                retries included; defaults to the client's.

        Returns:
            The outputs by alias. String tensors come back as `object` arrays
            of `bytes`.
        """
        signature_name = self.signature_name if signature_name is None else signature_name
        timeout = self.timeout if timeout is None else timeout
        return self._with_retries(
            self._predict_once, inputs, signature_name, list(output_filter or ()), timeout=timeout
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
        return self._with_retries(self._status_once, version, timeout=timeout)

    def model_metadata(self, *, timeout: float | None = None) -> ModelMetadata:
        """The served version's signatures (GetModelMetadata)."""
        timeout = self.timeout if timeout is None else timeout
        return self._with_retries(self._metadata_once, timeout=timeout)

    def list_models(self, *, timeout: float | None = None) -> list[ServedModel]:
        """The models the server serves, by name (our server's `ModelListing/ListModels`).

        Raises:
            ServingError: `UNIMPLEMENTED` from a server that cannot list its
                models (TF Serving), and the server's other errors.
        """
        timeout = self.timeout if timeout is None else timeout
        return self._with_retries(self._list_models_once, timeout=timeout)

    def default_model_name(self, *, timeout: float | None = None) -> str:
        """The model a request that names none means: the server's only model.

        A server that cannot list its models (TF Serving) gets TF Serving's
        own default name, `"default"` (its `--model_name` when not given).

        Raises:
            ValueError: the server serves several models, or none; the
                message names them and says to pass a model name.
        """
        try:
            models = self.list_models(timeout=timeout)
        except ServingError as error:
            if error.code != "UNIMPLEMENTED":
                raise
            return DEFAULT_MODEL_NAME
        if len(models) != 1:
            names = ", ".join(model.name for model in models) or "none"
            raise ValueError(
                f"The server at {self.endpoint} serves {len(models)} models ({names}): "
                "name one with --model-name (model_name=)"
            )
        return models[0].name

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
        return retries.wait_until_available(
            lambda seconds: self._status_once(self.version, seconds),
            version=self.version,
            model_name=self.model_name,
            request_timeout=self.timeout,
            timeout=timeout,
            poll_interval=poll_interval,
        )

    def close(self) -> None:
        """Releases the connection (the client cannot be used afterwards)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # Retry logic --------------------------------------------------------------------------

    def backoff_delay(self, retry: int) -> float:
        """The sleep before retry number `retry` (from 0), without jitter: exponential, capped."""
        return self.retry.delay(retry)

    def _with_retries(self, fn: Callable[..., T], *args: Any, timeout: float | None) -> T:
        """Calls `fn(*args, seconds_left)` until it answers or waiting is over.

        Waiting is over at an error that retrying cannot mend, after
        `max_retries` retries, or at the deadline `timeout` seconds from now
        (`None`: no deadline); see `retries.call_with_retries`.
        """
        return retries.call_with_retries(
            lambda seconds: fn(*args, seconds),
            timeout=timeout,
            max_retries=self.max_retries,
            backoff_delay=self.backoff_delay,
            statuses=lambda seconds: self._status_once(self.version, seconds),
            deadline_error=lambda error: retries.not_ready_error(
                error, timeout, endpoint=self.endpoint, model_name=self.model_name
            ),
            rng=self._random,
        )

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

    def _list_models_once(self, timeout: float | None) -> list[ServedModel]:
        raise NotImplementedError


def split_batches(items: Sequence[Any], batch_size: int) -> list[Sequence[Any]]:
    """Splits `items` into consecutive chunks of at most `batch_size`."""
    if batch_size < 1:
        raise ValueError(
            f"batch_size must be a positive integer. Received: batch_size={batch_size}"
        )
    return [items[start : start + batch_size] for start in range(0, len(items), batch_size)]
