"""A Keras callback that stops training after a wall-clock budget."""

from __future__ import annotations

import time
from collections.abc import Callable

import keras


class TimeBudget(keras.callbacks.Callback):
    """Stops training once `seconds` of wall-clock time have passed.

    Checked after every batch; the epoch in progress ends early and Keras
    still runs its end-of-training callbacks (best weights, checkpoints).

    Args:
        seconds: the budget.
        agree: maps this worker's "budget exhausted" flag to the decision of
            all workers (default: the flag itself), so that every worker of a
            multi-worker run stops at the same batch.
    """

    def __init__(self, seconds: float, agree: Callable[[bool], bool] | None = None):
        super().__init__()
        self.seconds = seconds
        self.agree = agree or (lambda exhausted: exhausted)
        self.started = None
        self.exhausted = False

    def on_train_begin(self, logs=None):
        self.started = time.monotonic()

    def on_train_batch_end(self, batch, logs=None):
        if self.agree(time.monotonic() - self.started >= self.seconds):
            self.exhausted = True
            self.model.stop_training = True
