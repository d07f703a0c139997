"""`InterruptOnSignal`: SIGINT/SIGTERM stop `model.fit` cleanly, at a batch boundary."""

from __future__ import annotations

import math
import signal
import threading

import keras

DEFAULT_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class TrainingInterrupted(Exception):
    """Training was stopped by a signal; the run can be resumed.

    Attributes:
        signum: the signal number (`signal.SIGINT`, `signal.SIGTERM`).
        exit_code: the shell's code for death by that signal, 128 + signum
            (130 for SIGINT, 143 for SIGTERM).
        epochs_done: completed epochs of the run (set by the trainer).
        steps_done: training steps of the next epoch saved in the run's backup
            (set by the trainer; 0 when the run stopped at an epoch's end).
    """

    def __init__(self, signum: int, epochs_done: int | None = None, steps_done: int = 0):
        self.signum = int(signum)
        self.epochs_done = epochs_done
        self.steps_done = steps_done
        super().__init__(f"interrupted by {signal.Signals(self.signum).name}")

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class InterruptOnSignal(keras.callbacks.Callback):
    """Turns SIGINT (Ctrl-C) and SIGTERM into a clean stop of `model.fit`.

    Used as a context manager around the training (it installs the signal
    handlers, and restores the previous ones on exit) and as the *last*
    callback of `fit`:

    1. The first signal during `fit` only sets a flag. At the next training
       batch end, `on_interrupt()` is called (the trainer's writes a backup
       of the run where it is, mid-epoch: `SharedBackupAndRestore.save_position`),
       then the callback raises `TrainingInterrupted`. During validation, or
       at the epoch's last batch (or one where another callback stopped the
       epoch), the epoch is let finish: the callback raises at the epoch end,
       after the epoch's backup (an earlier callback) is written. No
       half-epoch is ever recorded as done.
    2. A signal outside `fit` (building the datasets or the model), or a
       second signal, raises `TrainingInterrupted` at once.

    Outside the main thread, where Python cannot install signal handlers,
    the context manager does nothing.

    Args:
        signals: the signals to handle (default SIGINT and SIGTERM).
        on_interrupt: called with no argument at the training batch end where
            a signal stops `fit`, before `TrainingInterrupted` is raised.

    Example:

    ```python
    interrupt = InterruptOnSignal()
    with interrupt:
        model.fit(data, epochs=10, callbacks=[backup, interrupt])
    ```
    """

    def __init__(self, signals: tuple[int, ...] = DEFAULT_SIGNALS, on_interrupt=None):
        super().__init__()
        self.signals = tuple(signals)
        self.on_interrupt = on_interrupt
        self.signum: int | None = None
        self._in_fit = False
        self._previous: dict[int, object] = {}

    def __enter__(self) -> InterruptOnSignal:
        self.signum = None
        if threading.current_thread() is threading.main_thread():
            for signum in self.signals:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc_info) -> None:
        self._in_fit = False
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _handle(self, signum, frame) -> None:
        if self.signum is not None or not self._in_fit:
            self.signum = signum
            raise TrainingInterrupted(signum)
        self.signum = signum

    def _check(self) -> None:
        if self.signum is not None:
            raise TrainingInterrupted(self.signum)

    def on_train_begin(self, logs=None):
        self._in_fit = True
        self._check()

    def on_train_batch_end(self, batch, logs=None):
        if self.signum is None:
            return
        if batch + 1 >= (self.params.get("steps") or math.inf) or self.model.stop_training:
            # The epoch ends after this batch anyway (its last step, or another
            # callback stopped it): let it validate and write its backup, and
            # raise at its end, so the resumed run starts a new epoch as the
            # uninterrupted one does.
            return
        if self.on_interrupt is not None:
            self.on_interrupt()
        self._check()

    def on_epoch_end(self, epoch, logs=None):
        self._check()

    def on_train_end(self, logs=None):
        self._in_fit = False
