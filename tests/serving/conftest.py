"""Fixtures for the serving tests: stand-in exports (built once) and running servers."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.serving import add_version
from helpers.stand_in_export import (
    build_gate_export,
    build_slow_export,
    build_translator_export,
)


@pytest.fixture(scope="session")
def exports(tmp_path_factory) -> dict[str, Path]:
    """Version directories written once per session (copied into test model bases).

    - `upper`: the stand-in translator, variant "upper" (what version 1 serves).
    - `lower`: variant "lower", distinguishable output (what version 2 serves).
    - `slow`: a model whose run time follows its `iterations` input.
    - `gate`: a model that holds each request until the test releases it.
    """
    root = tmp_path_factory.mktemp("exports")
    return {
        "upper": build_translator_export(root / "upper", 1, variant="upper"),
        "lower": build_translator_export(root / "lower", 1, variant="lower"),
        "slow": build_slow_export(root / "slow", 1),
        "gate": build_gate_export(root / "gate", 1),
    }


@pytest.fixture(scope="session")
def translator_base(exports, tmp_path_factory) -> Path:
    """A model base path holding version 1 (upper), shared read-only by tests."""
    base = tmp_path_factory.mktemp("translator")
    add_version(base, 1, exports["upper"])
    return base


@pytest.fixture(scope="session")
def multi_model_config(exports, translator_base, tmp_path_factory) -> Path:
    """A ModelServerConfig serving the translator, the slow model and the gate model."""
    slow_base = tmp_path_factory.mktemp("slow")
    add_version(slow_base, 1, exports["slow"])
    gate_base = tmp_path_factory.mktemp("gate")
    add_version(gate_base, 1, exports["gate"])
    path = tmp_path_factory.mktemp("config") / "models.config"
    path.write_text(
        "model_config_list {\n"
        f'  config {{ name: "translator" base_path: "{translator_base}" '
        'model_platform: "tensorflow" }\n'
        f'  config {{ name: "slow" base_path: "{slow_base}" model_platform: "tensorflow" }}\n'
        f'  config {{ name: "gate" base_path: "{gate_base}" model_platform: "tensorflow" }}\n'
        "}\n"
    )
    return path


@pytest.fixture(scope="session")
def server(multi_model_config):
    """One running server (gRPC + REST) with both models, shared by read-only tests."""
    from keras_attention.serving import ModelServer, ServerOptions
    from keras_attention.serving.server.model_server import free_port

    options = ServerOptions(
        port=0,
        rest_api_port=free_port(),
        model_config_file=str(multi_model_config),
        file_system_poll_wait_seconds=0,
        rest_api_timeout_in_ms=2000,  # bounds requests the tests abandon on purpose
        # The gate model's held requests each spin on an inter-op thread.
        tensorflow_inter_op_parallelism=8,
    )
    model_server = ModelServer(options)
    model_server.start()
    yield model_server
    model_server.stop(grace=1.0)
