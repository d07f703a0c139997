"""Progress of the preparation before a run's first training step.

Checking the corpus files, sampling them and learning the vocabularies take
from a fraction of a second (the bundled corpus) to minutes (corpora of
millions of pairs). Their progress lines go to the `keras_attention.progress`
logger: `keras-attention train` prints them on standard output at its default
verbosity, and a library user sees them with `logging` at INFO.
"""

from __future__ import annotations

import logging
import time

logger = logging.getLogger("keras_attention.progress")

PROGRESS_SECONDS = 5.0  # at most one progress line per this many seconds of a step


class Every:
    """True at most once per `seconds`: `if every(): logger.info(...)`."""

    def __init__(self, seconds: float | None = None):
        self.seconds = PROGRESS_SECONDS if seconds is None else seconds
        self.started = self.last = time.monotonic()

    def __call__(self) -> bool:
        now = time.monotonic()
        if now - self.last < self.seconds:
            return False
        self.last = now
        return True

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started
