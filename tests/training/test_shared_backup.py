"""`SharedBackupAndRestore` on a tiny Keras model: what a backup holds, and restoring it."""

import json

import keras
import numpy as np
import pytest

from keras_attention.runs.backup_files import read_backup
from keras_attention.training.shared_backup import (
    SharedBackupAndRestore,
    callback_state,
    seed_generator_states,
)


def tiny_model(dropout=True, seed=0):
    keras.utils.set_random_seed(seed)
    layers = [keras.Input((4,)), keras.layers.Dense(8)]
    if dropout:
        layers.append(keras.layers.Dropout(0.5))
    model = keras.Sequential([*layers, keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse")
    return model


def numpy_state(model):
    return {
        "weights": [np.array(v.numpy()) for v in model.weights],
        "optimizer": [np.array(v.numpy()) for v in model.optimizer.variables],
        "seeds": [np.array(v.numpy()) for v in seed_generator_states(model)],
    }


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Two epochs of 4 steps with a backup kept after training; the state at the end."""
    backup = tmp_path_factory.mktemp("trained") / "backup"
    model = tiny_model()
    stopping = keras.callbacks.EarlyStopping(monitor="loss", patience=5)
    callback = SharedBackupAndRestore(
        backup, callbacks={"early_stopping": stopping}, delete_checkpoint=False
    )
    x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
    model.fit(x, x.sum(1), batch_size=8, epochs=2, verbose=0, callbacks=[stopping, callback])
    return backup, numpy_state(model), callback_state(stopping)


def test_a_backup_holds_weights_optimizer_random_states_and_callback_state(trained):
    backup, state, stopping = trained
    assert sorted(p.name for p in backup.iterdir()) == [
        "epoch-1.weights.h5",
        "epoch-2.weights.h5",
        "training_metadata.json",
        "training_metadata.json.bkp",
    ], "the latest backup and the previous one, nothing else"
    metadata = json.loads((backup / "training_metadata.json").read_text())
    assert metadata["epoch"] == 2 and metadata["weights"] == "epoch-2.weights.h5"
    assert metadata["weights_bytes"] == (backup / "epoch-2.weights.h5").stat().st_size
    assert metadata["iterations"] == 8
    assert metadata["seed_generators"] == [s.tolist() for s in state["seeds"]]
    assert state["seeds"][0][1] == 8, "the dropout generator advanced once per step"
    assert metadata["callbacks"] == {"early_stopping": stopping}
    previous = json.loads((backup / "training_metadata.json.bkp").read_text())
    assert (previous["epoch"], previous["iterations"]) == (1, 4)


def test_restoring_brings_back_every_state_a_step_reads(trained):
    backup, state, stopping_state = trained
    model = tiny_model(seed=1)  # other weights and other random seeds
    model.optimizer.build(model.trainable_variables)
    assert not np.array_equal(numpy_state(model)["seeds"][0], state["seeds"][0])
    stopping = keras.callbacks.EarlyStopping(monitor="loss", patience=5)
    stopping.on_train_begin()
    callback = SharedBackupAndRestore(
        backup,
        expected_position=(2, 0),
        callbacks={"early_stopping": stopping},
        delete_checkpoint=False,
    )
    callback.set_model(model)
    callback.on_train_begin()
    restored = numpy_state(model)
    for name in ("weights", "optimizer", "seeds"):
        for mine, saved in zip(restored[name], state[name], strict=True):
            np.testing.assert_array_equal(mine, saved, err_msg=name)
    assert model._initial_epoch == 2 and callback.restored_epoch == 2
    assert callback_state(stopping) == stopping_state


def test_restoring_another_epoch_than_the_data_was_positioned_at_is_refused(trained):
    backup, _, _ = trained
    callback = SharedBackupAndRestore(backup, expected_position=(0, 0), delete_checkpoint=False)
    callback.set_model(tiny_model())
    with pytest.raises(ValueError, match=r"resumes at \(epoch, step\) \(2, 0\), but the "
                       r"training data was positioned at \(0, 0\)"):  # fmt: skip
        callback.on_train_begin()


def test_a_backup_of_another_model_is_refused(trained):
    backup, _, _ = trained
    callback = SharedBackupAndRestore(backup, delete_checkpoint=False)
    model = tiny_model(dropout=False)
    model.optimizer.build(model.trainable_variables)
    callback.set_model(model)
    with pytest.raises(ValueError, match="holds 1 random-generator states, but the model has 0"):
        callback.on_train_begin()


def test_weights_written_without_their_metadata_are_passed_over_then_removed(tmp_path):
    """A kill between writing epoch 2's weights and its metadata: epoch 1 is resumed."""
    backup = tmp_path / "backup"
    model = tiny_model()
    callback = SharedBackupAndRestore(backup, delete_checkpoint=False)
    callback.set_model(model)
    callback.on_train_begin()
    model.optimizer.build(model.trainable_variables)
    callback.on_epoch_end(0)
    (backup / "epoch-2.weights.h5").write_bytes(b"the start of a weights file")
    (backup / ".epoch-2.weights.h5.123.weights.h5").write_bytes(b"a temporary file")
    assert read_backup(backup).epoch == 1
    callback.on_epoch_end(1)
    assert read_backup(backup).epoch == 2
    assert sorted(p.name for p in backup.iterdir()) == [
        "epoch-1.weights.h5",
        "epoch-2.weights.h5",
        "training_metadata.json",
        "training_metadata.json.bkp",
    ]


def test_other_workers_restore_from_the_shared_backup_and_write_elsewhere(trained, tmp_path):
    backup, _, _ = trained
    before = {p.name: p.read_bytes() for p in backup.iterdir()}
    callback = SharedBackupAndRestore(backup, is_chief=False, expected_position=(2, 0))
    model = tiny_model()
    callback.set_model(model)
    callback.on_train_begin()
    callback.on_epoch_end(2)
    private = callback._write_dir
    assert read_backup(private).epoch == 3
    callback.on_train_end()
    assert not private.exists()
    assert {p.name: p.read_bytes() for p in backup.iterdir()} == before, "shared files untouched"


def test_only_callbacks_whose_state_is_known_are_accepted(tmp_path):
    with pytest.raises(TypeError, match="Only the state of.*Received: CSVLogger"):
        SharedBackupAndRestore(tmp_path, callbacks={"log": keras.callbacks.CSVLogger("x.csv")})
