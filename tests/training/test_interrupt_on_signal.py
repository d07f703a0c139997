"""`InterruptOnSignal`: a real signal sent to this process during `model.fit`."""

import json
import os
import signal

import keras
import numpy as np
import pytest

from keras_attention.training.interrupt_on_signal import InterruptOnSignal, TrainingInterrupted


class SignalAt(keras.callbacks.Callback):
    """Sends `signum` to this process (`times` times) at train batch `batch` of `epoch`."""

    def __init__(self, epoch, batch, signum, times=1):
        super().__init__()
        self.at = (epoch, batch)
        self.signum = signum
        self.times = times
        self.epoch = None
        self.batches_ended = []
        self.epochs_ended = []

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        self.batches_ended.append((self.epoch, batch))
        if (self.epoch, batch) == self.at:
            for _ in range(self.times):
                os.kill(os.getpid(), self.signum)

    def on_epoch_end(self, epoch, logs=None):
        self.epochs_ended.append(epoch)


def tiny_model():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_fit_at_the_batch_end_and_keeps_the_last_epoch_backup(tmp_path, signum):
    x, y = np.ones((40, 3), "float32"), np.ones((40, 1), "float32")
    model = tiny_model()
    sender = SignalAt(epoch=1, batch=2, signum=signum)
    backup = keras.callbacks.BackupAndRestore(str(tmp_path / "backup"))
    interrupt = InterruptOnSignal()
    before = signal.getsignal(signum)
    with pytest.raises(TrainingInterrupted) as error, interrupt:
        model.fit(x, y, batch_size=4, epochs=5, verbose=0, callbacks=[backup, sender, interrupt])
    assert error.value.signum == signum and error.value.exit_code == 128 + signum
    assert sender.batches_ended[-1] == (1, 2), "stopped at the end of the signalled batch"
    assert sender.epochs_ended == [0], "the abandoned epoch is not recorded as done"
    metadata = json.loads((tmp_path / "backup" / "training_metadata.json").read_text())
    assert metadata["epoch"] == 1, "the backup holds the last completed epoch"
    assert signal.getsignal(signum) is before, "the previous handler is restored"


def test_a_second_signal_stops_at_once(tmp_path):
    x, y = np.ones((40, 3), "float32"), np.ones((40, 1), "float32")
    sender = SignalAt(epoch=0, batch=1, signum=signal.SIGINT, times=2)

    class After(keras.callbacks.Callback):
        batches = []

        def on_train_batch_end(self, batch, logs=None):
            After.batches.append(batch)

    interrupt = InterruptOnSignal()
    with pytest.raises(TrainingInterrupted), interrupt:
        tiny_model().fit(x, y, batch_size=4, epochs=2, verbose=0,
                         callbacks=[sender, After(), interrupt])  # fmt: skip
    assert After.batches == [0], "the second signal raised inside the sending callback"


def test_a_signal_before_fit_raises_at_once():
    interrupt = InterruptOnSignal()
    with pytest.raises(TrainingInterrupted, match="SIGTERM"), interrupt:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # the handler runs between bytecodes
            pass
        pytest.fail("the signal did not interrupt")
