"""`NoAnswer`: the transports' error when no server answered."""

from __future__ import annotations

from keras_attention_client.wire.errors import ServingError


class NoAnswer(ServingError):
    """`UNAVAILABLE` with no answer from a server: nothing listens there, or connecting failed.

    Raised by the transports; `TranslationClientBase` retries it like any
    `UNAVAILABLE` and, at the deadline, names the address and the time waited.
    """

    def __init__(self, message: str = ""):
        super().__init__("UNAVAILABLE", message)
