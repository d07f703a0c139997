"""`RetryPolicy`: how a client retries while its server is not ready."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """Retries of a request while the server is not ready, with exponential backoff.

    Args:
        max_retries: most retries of one request (`None`: as many as its
            deadline allows; 0: none, fail at the first `UNAVAILABLE`).
        initial_backoff: seconds before the first retry.
        max_backoff: cap on the seconds between retries.
        backoff_multiplier: growth of the backoff per retry.

    Raises:
        ValueError: a bad value (the message names it).
    """

    max_retries: int | None = None
    initial_backoff: float = 0.1
    max_backoff: float = 1.0
    backoff_multiplier: float = 2.0

    def __post_init__(self):
        max_retries = self.max_retries
        if max_retries is not None and (
            isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0
        ):
            raise ValueError(
                f"max_retries must be an integer >= 0 or None. Received: {max_retries!r}"
            )
        initial, most, multiplier = self.initial_backoff, self.max_backoff, self.backoff_multiplier
        if initial < 0 or most < 0 or multiplier < 1:
            raise ValueError(
                "Backoff must satisfy initial_backoff >= 0, max_backoff >= 0, "
                f"backoff_multiplier >= 1. Received: initial_backoff={initial}, "
                f"max_backoff={most}, backoff_multiplier={multiplier}"
            )

    def delay(self, retry: int) -> float:
        """The sleep before retry number `retry` (from 0), without jitter: exponential, capped."""
        return min(
            self.max_backoff, self.initial_backoff * self.backoff_multiplier ** min(retry, 64)
        )
