"""Serving test helpers: model base directories, the Session reference, slow-model calibration.

The stand-in exports themselves are in `helpers.stand_in_export`; the
fixtures that build them once per session are in `tests/serving/conftest.py`.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np

TEXTS = [
    "the cat sat on the mat",
    "a dog",
    "",
    "Hello  world",
    "a very long sentence with many words in it to pad the others",
]


def add_version(base: Path, version: int, source: Path) -> Path:
    """Copies `source` to `base/<version>` atomically (copy under a temporary name, rename)."""
    base.mkdir(parents=True, exist_ok=True)
    staging = base / f".tmp-{version}"
    shutil.copytree(source, staging)
    target = base / str(version)
    staging.rename(target)
    return target


def add_broken_version(base: Path, version: int) -> Path:
    """A version directory whose saved_model.pb is garbage."""
    staging = base / f".tmp-{version}"
    staging.mkdir(parents=True)
    (staging / "saved_model.pb").write_bytes(b"this is not a SavedModel")
    target = base / str(version)
    staging.rename(target)
    return target


def session_outputs(version_dir: Path, signature: str, texts: list[str]) -> dict[str, np.ndarray]:
    """The reference: run the export on TF Serving's path directly (Graph + Session)."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 - registers the tokenizer ops

    graph = tf.Graph()
    with tf.compat.v1.Session(graph=graph) as session:
        meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], str(version_dir))
        signature_def = meta_graph.signature_def[signature]
        fetches = {alias: info.name for alias, info in signature_def.outputs.items()}
        feed = {signature_def.inputs["text"].name: np.array(texts, dtype=object)}
        return session.run(fetches, feed)


def calibrated_iterations(client, seconds: float) -> int:
    """`iterations` for which one request to the slow model takes about `seconds`."""
    probe = 50_000
    began = time.monotonic()
    client.predict({"iterations": np.array([probe], np.int64)})
    per_iteration = (time.monotonic() - began) / probe
    return int(min(max(seconds / per_iteration, probe), 20_000_000))


def wait_for(condition, timeout: float = 120.0, interval: float = 0.02) -> None:
    """Polls `condition()` until it is true; fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"Not reached within {timeout} s: {condition}")
        time.sleep(interval)


def arrived(gate: Path) -> int:
    """How many requests the gate model (`build_gate_export`) holds or has held."""
    return len(list(gate.glob("arrived-*")))


def gate_inputs(gate: Path, tag: str) -> dict[str, np.ndarray]:
    """The gate model's inputs for one request."""
    return {
        "gate": np.array([str(gate).encode()], dtype=object),
        "tag": np.array([tag.encode()], dtype=object),
    }
