"""The client needs no TensorFlow, in a fresh interpreter here.

Installed alone from its wheel in a fresh venv, it translates against an
installed server in `tests/test_packaging.py` (slow), which also checks that
its pyproject lists every package under `serving/client`.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import keras_attention_client

CLIENT = Path(keras_attention_client.__file__).resolve().parent
ROOT = CLIENT.parents[1]

# Translates over gRPC and REST, then reports which heavy modules the interpreter loaded.
PROBE = """
import json, sys
from keras_attention_client import RestTranslationClient, TranslationClient
from keras_attention_client.cli import main

grpc_address, rest_url = sys.argv[1], sys.argv[2]
with TranslationClient(grpc_address, model_name="translator") as client:
    grpc_text = [t.text for t in client.translate(["the cat", "a b c"])]
    metadata = sorted(client.model_metadata().signatures)
    status = [s.state for s in client.model_status()]
rest_text = [t.text for t in RestTranslationClient(rest_url, model_name="translator").translate(["a b"])]
heavy = sorted(
    name for name in sys.modules
    if name.split(".")[0] in ("tensorflow", "tensorflow_serving", "keras", "tensorflow_text")
)
print(json.dumps({"grpc": grpc_text, "rest": rest_text, "metadata": metadata,
                  "status": status, "heavy": heavy}))
"""


def test_a_fresh_interpreter_translates_without_importing_tensorflow(server):
    result = subprocess.run(
        [sys.executable, "-c", PROBE, server.address, server.rest_url],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["heavy"] == []
    assert report["grpc"] == ["CAT THE", "C B A"]
    assert report["rest"] == ["B A"]
    assert report["metadata"] == ["__saved_model_init_op", "beam_search", "serving_default"]
    assert report["status"] == ["AVAILABLE"]


def test_no_module_is_shipped_by_both_distributions():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    main = tomllib.loads((ROOT / "pyproject.toml").read_text())
    client = tomllib.loads((CLIENT / "pyproject.toml").read_text())
    main_packages = set(main["tool"]["setuptools"]["packages"])
    client_packages = set(client["tool"]["setuptools"]["packages"])
    assert {"keras_attention.serving", "keras_attention.serving.server"} <= main_packages
    assert not main_packages & client_packages
    version = client["project"]["version"]
    assert f"keras-attention-client=={version}" in main["project"]["dependencies"]
    assert main["project"]["version"] == version
    for requirement in client["project"]["dependencies"]:
        assert requirement.split(">")[0].split("=")[0] in ("grpcio", "protobuf", "numpy")


def test_no_client_module_imports_the_server_or_tensorflow_even_lazily():
    import ast

    forbidden = ("tensorflow", "tensorflow_serving", "tensorflow_text", "keras", "export")
    found = []
    for path in sorted(CLIENT.rglob("*.py")):
        if path.name == "generate.py":
            continue  # the developers' regeneration script (grpc_tools), not imported
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                if name.split(".")[0] in forbidden or name.split(".")[0] == "keras_attention":
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {name}")
    assert found == []
