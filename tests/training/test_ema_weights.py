"""`--ema`: the saved model is the moving average of the training weights, computed by hand
in NumPy, and a run stopped after an epoch resumes to the same weights and averages."""

import os
import signal

import keras
import numpy as np
import pytest

from keras_attention.runs.run_directory import RunDirectory
from keras_attention.training.ema_weights import EmaWeights
from keras_attention.training.interrupt_on_signal import TrainingInterrupted
from keras_attention.training.keep_epoch_weights import read_epoch_weights
from keras_attention.training.trainer import train

TINY = dict(
    embedding_dim=8,
    encoder_units=8,
    decoder_units=16,
    source_vocabulary_size=30,
    target_vocabulary_size=30,
    batch_size=16,
    max_pairs=600,
    validation_fraction=0.1,
)


class TrainingWeights(keras.callbacks.Callback):
    """Records the model's trainable weights after every step (the training weights: the
    trainer's `EmaWeights` puts the average in only for validation and the epoch end)."""

    def __init__(self):
        super().__init__()
        self.after_step = []

    def on_train_batch_end(self, batch, logs=None):
        self.after_step.append([np.array(w.numpy()) for w in self.model.trainable_weights])


def test_the_saved_model_is_the_numpy_moving_average_of_the_training_weights(
    digits_corpus, make_train_config, tmp_path
):
    momentum = 0.5  # far from 1, so that the average differs clearly from the last weights
    config = make_train_config(
        digits_corpus,
        tmp_path / "run",
        **TINY,
        epochs=1,
        steps_per_epoch=4,
        ema=True,
        ema_momentum=momentum,
    )
    recorder = TrainingWeights()
    train(config, verbose=0, callbacks=[recorder])
    assert len(recorder.after_step) == 4
    # Keras' rule: the first step copies the weights, then a = m a + (1 - m) w.
    average = recorder.after_step[0]
    for weights in recorder.after_step[1:]:
        average = [
            np.float32(momentum) * a + np.float32(1 - momentum) * w
            for a, w in zip(average, weights, strict=True)
        ]
    saved = keras.saving.load_model(RunDirectory(config.out).model, compile=False)
    got = [np.array(w.numpy()) for w in saved.trainable_weights]
    assert len(got) == len(average)
    for mine, expected in zip(got, average, strict=True):
        np.testing.assert_allclose(mine, expected, rtol=1e-6, atol=1e-7)
    last = recorder.after_step[-1]
    assert max(np.abs(g - w).max() for g, w in zip(got, last, strict=True)) > 1e-4, (
        "the saved model is the average, not the last training weights"
    )


def test_ema_weights_swap_exactly_and_refuse_an_optimizer_without_average():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    optimizer = keras.optimizers.SGD(0.1, use_ema=True, ema_momentum=0.9)
    rng = np.random.default_rng(0)
    for _ in range(3):
        gradients = [rng.normal(size=w.shape).astype("float32") for w in model.trainable_weights]
        optimizer.apply(gradients, model.trainable_weights)
    training = [np.array(w.numpy()) for w in model.trainable_weights]
    average = [np.array(v.numpy()) for v in optimizer._model_variables_moving_average]
    assert not np.array_equal(training[0], average[0])
    ema = EmaWeights(optimizer)
    ema.use_average()
    ema.use_average()  # already in: nothing to do
    for weight, value in zip(model.trainable_weights, average, strict=True):
        np.testing.assert_array_equal(weight.numpy(), value)
    ema.use_training_weights()
    for weight, value in zip(model.trainable_weights, training, strict=True):
        np.testing.assert_array_equal(weight.numpy(), value)
    for variable, value in zip(optimizer._model_variables_moving_average, average, strict=True):
        np.testing.assert_array_equal(variable.numpy(), value)
    with pytest.raises(ValueError, match="use_ema=True"):
        EmaWeights(keras.optimizers.SGD(0.1))


class FinalState(keras.callbacks.Callback):
    """Records the weights and optimizer variables (the averages among them) at each epoch's
    end; sends SIGINT at the end of epoch `stop_after` (the backup is written after it)."""

    def __init__(self, stop_after=None):
        super().__init__()
        self.stop_after = stop_after
        self.state = None

    def on_epoch_end(self, epoch, logs=None):
        self.state = {
            "weights": [np.array(v.numpy()) for v in self.model.weights],
            "optimizer": [np.array(v.numpy()) for v in self.model.optimizer.variables],
        }
        if epoch == self.stop_after:
            os.kill(os.getpid(), signal.SIGINT)


@pytest.mark.slow
def test_a_run_with_ema_stopped_after_epoch_1_resumes_exactly(
    digits_corpus, make_train_config, tmp_path
):
    def config(name):
        return make_train_config(
            digits_corpus,
            tmp_path / name,
            **TINY,
            epochs=3,
            steps_per_epoch=5,
            dropout=0.3,
            patience=10,
            ema=True,
            ema_momentum=0.9,
            keep_epoch_weights=2,
        )

    reference = FinalState()
    train(config("uninterrupted"), verbose=0, callbacks=[reference])
    with pytest.raises(TrainingInterrupted) as interrupted:
        train(config("resumed"), verbose=0, callbacks=[FinalState(stop_after=0)])
    assert interrupted.value.epochs_done == 1
    resumed = FinalState()
    summary = train(config("resumed"), verbose=0, callbacks=[resumed])
    assert summary["epochs_this_session"] == 2
    averages = len(reference.model.trainable_weights)
    assert len(reference.state["optimizer"]) > 3 * averages, "Adam's moments and the averages"
    for name in ("weights", "optimizer"):
        for mine, theirs in zip(resumed.state[name], reference.state[name], strict=True):
            np.testing.assert_array_equal(mine, theirs, err_msg=name)
    runs = [RunDirectory(tmp_path / name) for name in ("uninterrupted", "resumed")]
    kept = [run.kept_epoch_weights() for run in runs]
    assert [epoch for epoch, _ in kept[0]] == [epoch for epoch, _ in kept[1]] == [2, 3]
    for (_, mine), (_, theirs) in zip(kept[1], kept[0], strict=True):
        for a, b in zip(read_epoch_weights(mine), read_epoch_weights(theirs), strict=True):
            np.testing.assert_array_equal(a, b)
    models = [keras.saving.load_model(run.model, compile=False) for run in runs]
    for a, b in zip(models[1].weights, models[0].weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
