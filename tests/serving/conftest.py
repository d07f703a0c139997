"""Fixtures for the serving tests: stand-in exports (built once) and running servers."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from stand_in_translator_export import (
    build_examples_export,
    build_slow_export,
    build_translator_export,
)

TEXTS = [
    "the cat sat on the mat",
    "a dog",
    "",
    "Hello  world",
    "a very long sentence with many words in it to pad the others",
]


@pytest.fixture(scope="session")
def exports(tmp_path_factory) -> dict[str, Path]:
    """Version directories written once per session (copied into test model bases).

    - `upper`: the stand-in translator, variant "upper" (what version 1 serves).
    - `lower`: variant "lower", distinguishable output (what version 2 serves).
    - `slow`: a model whose run time follows its `iterations` input.
    - `examples`: Classify/Regress-shaped signatures over `tf.Example`s.
    """
    root = tmp_path_factory.mktemp("exports")
    return {
        "upper": build_translator_export(root / "upper", 1, variant="upper"),
        "lower": build_translator_export(root / "lower", 1, variant="lower"),
        "slow": build_slow_export(root / "slow", 1),
        "examples": build_examples_export(root / "examples", 1),
    }


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


@pytest.fixture(scope="session")
def translator_base(exports, tmp_path_factory) -> Path:
    """A model base path holding version 1 (upper), shared read-only by tests."""
    base = tmp_path_factory.mktemp("translator")
    add_version(base, 1, exports["upper"])
    return base


@pytest.fixture(scope="session")
def multi_model_config(exports, translator_base, tmp_path_factory) -> Path:
    """A ModelServerConfig serving the translator, the slow model and the examples model."""
    slow_base = tmp_path_factory.mktemp("slow")
    add_version(slow_base, 1, exports["slow"])
    examples_base = tmp_path_factory.mktemp("examples")
    add_version(examples_base, 1, exports["examples"])
    path = tmp_path_factory.mktemp("config") / "models.config"
    path.write_text(
        "model_config_list {\n"
        f'  config {{ name: "translator" base_path: "{translator_base}" '
        'model_platform: "tensorflow" }\n'
        f'  config {{ name: "slow" base_path: "{slow_base}" model_platform: "tensorflow" }}\n'
        f'  config {{ name: "examples" base_path: "{examples_base}" }}\n'
        "}\n"
    )
    return path


@pytest.fixture(scope="session")
def server(multi_model_config):
    """One running server (gRPC + REST) with both models, shared by read-only tests."""
    from serving import ModelServer, ServerOptions
    from serving.model_server import free_port

    options = ServerOptions(
        port=0,
        rest_api_port=free_port(),
        model_config_file=str(multi_model_config),
        file_system_poll_wait_seconds=0,
        rest_api_timeout_in_ms=2000,  # bounds requests the tests abandon on purpose
    )
    model_server = ModelServer(options)
    model_server.start()
    yield model_server
    model_server.stop(grace=1.0)


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
