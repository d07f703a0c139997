"""Waiting for a server that is not ready yet: the retry loop, its deadline and its errors."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from keras_attention_client.model_version_status import ModelVersionStatus
from keras_attention_client.no_answer import NoAnswer
from keras_attention_client.wire.errors import ServingError

logger = logging.getLogger(__name__)

T = TypeVar("T")

LAST_ATTEMPT_SECONDS = 0.1
"""The least time left for a retry: a request needs some to be answered."""

LOADING_STATES = ("START", "LOADING")
"""Version states of a model the server is still bringing up (`ModelVersionStatus.state`)."""

StatusRequest = Callable[[float | None], list[ModelVersionStatus]]
"""One GetModelStatus request within the seconds given (`None`: no limit)."""


def call_with_retries(
    attempt: Callable[[float | None], T],
    *,
    timeout: float | None,
    max_retries: int | None,
    backoff_delay: Callable[[int], float],
    statuses: StatusRequest,
    deadline_error: Callable[[ServingError], ServingError],
    rng: random.Random,
) -> T:
    """Calls `attempt(seconds_left)` until it answers or waiting is over.

    Waiting is over at an error that retrying cannot mend (see
    `not_ready_yet`, which asks `statuses` about a `NOT_FOUND`), after
    `max_retries` retries, or at the deadline `timeout` seconds from now
    (`None`: no deadline), where `deadline_error(last_error)` is raised.
    Retry `n` sleeps `backoff_delay(n)` with jitter drawn from `rng`.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    retry = 0
    while True:
        try:
            return attempt(seconds_left(deadline))
        except ServingError as error:
            if max_retries is not None and retry >= max_retries:
                raise
            if not not_ready_yet(error, statuses, deadline):
                raise
            # "Equal jitter": half the delay fixed, half random, so many clients
            # retrying at once spread out.
            delay = backoff_delay(retry) * (0.5 + 0.5 * rng.random())
            if deadline is not None:
                # The last attempt comes just before the deadline, with time to answer.
                left = deadline - time.monotonic() - LAST_ATTEMPT_SECONDS
                if left <= 0:
                    raise deadline_error(error) from None
                delay = min(delay, left)
            logger.info("%s; retrying in %.2f s (retry %d)", error, delay, retry + 1)
            time.sleep(delay)
            retry += 1


def not_ready_yet(error: ServingError, statuses: StatusRequest, deadline: float | None) -> bool:
    """Whether `error` says the server or the model is not ready yet (worth waiting for)."""
    if error.retryable:
        return True
    if error.code != "NOT_FOUND":
        return False
    # Also the answer to a wrong model name: only wait if the server says it is loading.
    try:
        answer = statuses(seconds_left(deadline))
    except ServingError:
        return False
    return any(status.state in LOADING_STATES for status in answer)


def not_ready_error(
    error: ServingError, timeout: float, *, endpoint: str, model_name: str
) -> ServingError:
    """The error to raise when the deadline passes while the server is not ready."""
    if isinstance(error, NoAnswer):
        message = (
            f"No model server answered at {endpoint} within {timeout:g} s "
            f"({error.message}); is a model server running there?"
        )
    elif error.code == "NOT_FOUND":
        message = (
            f"Model {model_name!r} at {endpoint} was still loading after "
            f"{timeout:g} s ({error.message})"
        )
    else:
        message = (
            f"The model server at {endpoint} was still unavailable after {timeout:g} s "
            f"({error.message})"
        )
    return ServingError("UNAVAILABLE", message, http_status=error.http_status)


def wait_until_available(
    statuses: StatusRequest,
    *,
    version: int | None,
    model_name: str,
    request_timeout: float | None,
    timeout: float,
    poll_interval: float,
) -> list[ModelVersionStatus]:
    """Polls `statuses` until a version (`version`, if not `None`) is AVAILABLE.

    Each request gets at most `request_timeout` seconds (`None`: what is left).

    Raises:
        ServingError: `DEADLINE_EXCEEDED` if none is available within
            `timeout` seconds, and errors other than not ready yet.
    """
    deadline = time.monotonic() + timeout
    last_error: ServingError | None = None
    while True:
        remaining = deadline - time.monotonic()
        try:
            answer = statuses(max(min(remaining, request_timeout or remaining), 0.05))
            if any(
                status.available and (version is None or status.version == version)
                for status in answer
            ):
                return answer
        except ServingError as error:
            if error.code not in ("UNAVAILABLE", "NOT_FOUND", "DEADLINE_EXCEEDED"):
                raise
            last_error = error
        if time.monotonic() + poll_interval > deadline:
            detail = f" Last error: {last_error}" if last_error else ""
            raise ServingError(
                "DEADLINE_EXCEEDED",
                f"Model {model_name!r} was not available after {timeout} s.{detail}",
            )
        time.sleep(poll_interval)


def seconds_left(deadline: float | None) -> float | None:
    """Seconds until `deadline` (a `time.monotonic()` value), at least 1 ms; `None` for none."""
    if deadline is None:
        return None
    return max(deadline - time.monotonic(), 0.001)
