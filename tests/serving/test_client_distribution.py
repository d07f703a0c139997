"""The client needs no TensorFlow: in a fresh interpreter, and installed alone in a fresh venv."""

import json
import os
import shutil
import subprocess
import sys
import venv
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
    on_disk = {
        ".".join(("keras_attention_client", *path.relative_to(CLIENT).parent.parts))
        for path in CLIENT.rglob("__init__.py")
    }
    assert client_packages == on_disk  # the client ships every package under serving/client
    assert {"keras_attention.serving", "keras_attention.serving.server"} <= main_packages
    assert not main_packages & client_packages
    version = client["project"]["version"]
    assert f"keras-attention-client=={version}" in main["project"]["dependencies"]
    assert main["project"]["version"] == version
    for requirement in client["project"]["dependencies"]:
        assert requirement.split(">")[0].split("=")[0] in ("grpcio", "protobuf", "numpy")


def _wheel_requirements() -> list[str]:
    """grpcio, protobuf and NumPy at the versions installed here (and their dependencies)."""
    from importlib import metadata

    return [f"{name}=={metadata.version(name)}" for name in ("grpcio", "protobuf", "numpy")]


@pytest.mark.slow
def test_a_venv_with_only_the_client_translates_over_grpc(server, tmp_path):
    """A plain venv (no system site-packages) with the client distribution and its dependencies.

    The client wheel is built from a copy of `serving/client`; grpcio, protobuf
    and NumPy come from the local pip cache / index as wheels; the venv then
    installs with `--no-index` from that folder only.
    """
    wheels = tmp_path / "wheels"
    source = shutil.copytree(
        CLIENT, tmp_path / "client-src", ignore=shutil.ignore_patterns("__pycache__")
    )
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(source)],
        check=True,
        timeout=300,
    )
    download = [*pip, "download", "--only-binary=:all:", "-d", str(wheels)]
    subprocess.run([*download, *_wheel_requirements()], check=True, timeout=300)

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    python = env_dir / "bin" / "python"
    install = [str(python), "-m", "pip", "--disable-pip-version-check", "-q", "install"]
    subprocess.run(
        [*install, "--no-index", "--find-links", str(wheels), "keras-attention-client"],
        check=True,
        timeout=300,
    )
    clean_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    clean_env["PATH"] = f"{env_dir / 'bin'}:{clean_env.get('PATH', '')}"
    installed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=json"],
        capture_output=True,
        text=True,
        check=True,
        env=clean_env,
        cwd=tmp_path,
    )
    names = {p["name"].lower() for p in json.loads(installed.stdout)}
    assert "keras-attention-client" in names
    assert not names & {"tensorflow", "tensorflow-serving-api", "keras", "keras-attention-seq2seq"}

    result = subprocess.run(
        [
            str(env_dir / "bin" / "keras-attention-client"),
            "translate",
            "--server",
            server.address,
            "--model-name",
            "translator",
            "--format",
            "json",
            "the cat sat",
            "a b",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env,
        cwd=tmp_path,  # not the repository: only the installed client is importable
    )
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["text"] for r in records] == ["SAT CAT THE", "B A"]
    assert records[0]["source_tokens"] == ["the", "cat", "sat"]


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
