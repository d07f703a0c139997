"""A stopped and resumed run trains exactly as an uninterrupted one (one process).

Each run is stopped the way SIGINT/SIGTERM stop it (`InterruptOnSignal`, a
real signal to this process), then resumed with the same config. A probe
records, after every training step, what the next step depends on: the
optimizer's step count, the learning rate the schedule gives at it, every
dropout random-generator state and the epoch's running loss (the batches
seen: another batch gives another loss). The resumed steps must equal the
uninterrupted run's steps from the backed-up epoch on, bit for bit, and so
must the final weights and optimizer variables (Adam's moments included).
Dropout is on, so a random state that does not come back shows.
"""

import os
import signal

import keras
import numpy as np
import pytest

from keras_attention.runs.run_directory import RunDirectory
from keras_attention.training.interrupt_on_signal import TrainingInterrupted
from keras_attention.training.shared_backup import seed_generator_states
from keras_attention.training.trainer import train

STEPS = 5  # steps per epoch
EPOCHS = 3


def resume_config(make_train_config, corpus, out):
    return make_train_config(
        corpus,
        out,
        embedding_dim=8,
        encoder_units=8,
        decoder_units=16,
        source_vocabulary_size=30,
        target_vocabulary_size=30,
        batch_size=16,
        epochs=EPOCHS,
        steps_per_epoch=STEPS,
        dropout=0.3,
        max_pairs=600,
        validation_fraction=0.1,
        patience=1,  # early stopping's patience count must come back too
    )


class Probe(keras.callbacks.Callback):
    """Records the state after each step and epoch; sends SIGINT at `stop_at`.

    `stop_at`: `(epoch, batch)` for after that training step, or `(epoch,
    "end")` for at that epoch's end (before the backup callback, which comes
    later in the trainer's list, writes the epoch's backup).
    """

    def __init__(self, stop_at=None):
        super().__init__()
        self.stop_at = stop_at
        self.steps = []
        self.val_losses = []
        self.state = None
        self.epoch = None

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        optimizer = self.model.optimizer
        self.steps.append(
            (
                self.epoch,
                batch,
                int(optimizer.iterations.numpy()),
                float(optimizer.learning_rate.numpy()),
                tuple(tuple(v.numpy().tolist()) for v in seed_generator_states(self.model)),
                float(logs["loss"]),
            )
        )
        if self.stop_at == (self.epoch, batch):
            os.kill(os.getpid(), signal.SIGINT)

    def on_epoch_end(self, epoch, logs=None):
        self.val_losses.append(float(logs["val_loss"]))
        self.state = {
            "weights": [np.array(v.numpy()) for v in self.model.weights],
            "optimizer": [np.array(v.numpy()) for v in self.model.optimizer.variables],
        }
        if self.stop_at == (epoch, "end"):
            os.kill(os.getpid(), signal.SIGINT)


@pytest.fixture(scope="module")
def uninterrupted(digits_corpus, make_train_config, tmp_path_factory):
    out = tmp_path_factory.mktemp("uninterrupted") / "run"
    probe = Probe()
    summary = train(resume_config(make_train_config, digits_corpus, out), verbose=0,
                    callbacks=[probe])  # fmt: skip
    assert len(probe.steps) == EPOCHS * STEPS and summary["stopped_by"] is None
    return probe, RunDirectory(out)


def stopped_session(config, stop_at):
    probe = Probe(stop_at)
    with pytest.raises(TrainingInterrupted) as interrupted:
        train(config, verbose=0, callbacks=[probe])
    return probe, interrupted.value.epochs_done


def without_batch_index(steps):
    """The probe's steps without Keras' batch index (a resumed epoch counts from 0 again)."""
    return [(epoch, *rest) for epoch, _, *rest in steps]


def test_a_stopped_run_resumes_exactly_and_repeats_no_step(
    uninterrupted, digits_corpus, make_train_config, tmp_path
):
    """Stopped right after epoch 1's backup, resumed, stopped again after step 3 of epoch 2
    (a signal mid-epoch: the run is saved where it is), resumed to the end: the same run as
    without the stops, and no step is done twice.
    """
    reference, reference_run = uninterrupted
    config = resume_config(make_train_config, digits_corpus, tmp_path / "run")
    run = RunDirectory(config.out)

    first, done = stopped_session(config, stop_at=(0, "end"))
    assert done == 1 and first.steps == reference.steps[:STEPS]

    second, done = stopped_session(config, stop_at=(1, 2))
    assert done == 1, "the epoch in progress is not counted as done"
    # Resumed from epoch 1's backup: the next steps, with the same step count,
    # learning rate, random states and running loss (so the same batches).
    assert second.steps == reference.steps[STEPS : STEPS + 3]

    last = Probe()
    summary = train(config, verbose=0, callbacks=[last])
    # Resumed after step 3 of epoch 2, with the epoch's running loss restored.
    assert without_batch_index(last.steps) == without_batch_index(reference.steps[STEPS + 3 :])
    assert last.val_losses == reference.val_losses[1:]
    for name in ("weights", "optimizer"):  # the optimizer: step count and Adam's moments
        assert len(last.state[name]) == len(reference.state[name])
        for mine, theirs in zip(last.state[name], reference.state[name], strict=True):
            np.testing.assert_array_equal(mine, theirs, err_msg=name)
    assert (summary["epochs_run"], summary["epochs_this_session"]) == (EPOCHS, EPOCHS - 1)
    assert summary["final"] == reference_run.read_metrics()["training"]["final"]
    assert summary["stopped_by"] == reference_run.read_metrics()["training"]["stopped_by"]
    assert run.history.read_text() == reference_run.history.read_text(), "row for row"
