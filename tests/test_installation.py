"""`keras-attention --version` and the warning about another `keras_attention` distribution.

The other distribution is `helpers.foreign_distribution`'s stand-in for the
unrelated PyPI project `keras-attention` 1.0.0: its metadata folder alone, in a
temporary folder put on the child interpreter's `sys.path` (PYTHONPATH).
"""

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from helpers import foreign_distribution
from helpers.subprocesses import ROOT, modules_loaded_by

import keras_attention
from keras_attention import installation

VERSION_LINE = "keras-attention-seq2seq 0.2.0 from "


def run_python(code: str, extra_path: Path | None = None) -> subprocess.CompletedProcess:
    """Runs `code` in a new interpreter, with `extra_path` first on its `sys.path`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if extra_path is not None:
        env["PYTHONPATH"] = str(extra_path)
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


VERSION_COMMAND = "import sys\nfrom keras_attention.cli import main\nsys.exit(main(['--version']))"
IMPORT_TWICE = (
    "import importlib, warnings\n"
    "warnings.simplefilter('always')\n"
    "import keras_attention\n"
    "importlib.import_module('keras_attention')\n"
)


def test_version_agrees_with_pyproject_and_the_installed_metadata():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == installation.DISTRIBUTION
    assert keras_attention.__version__ == project["version"] == "0.2.0"
    assert metadata.version(installation.DISTRIBUTION) == keras_attention.__version__
    assert installation.installed_version() == keras_attention.__version__


def test_version_prints_the_installed_version_and_nothing_else():
    result = run_python(VERSION_COMMAND)
    assert result.returncode == 0, result.stderr
    line = result.stdout.strip()
    assert line.startswith(VERSION_LINE)
    assert Path(line.removeprefix(VERSION_LINE)) == Path(keras_attention.__file__).parent
    assert result.stderr == ""


def test_version_names_another_distribution_that_installs_keras_attention(tmp_path):
    foreign_distribution.write_dist_info(tmp_path)
    result = run_python(VERSION_COMMAND, extra_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(VERSION_LINE)
    warning = result.stderr.split("keras-attention: warning: ", 1)[1]
    assert f"keras-attention 1.0.0 in {tmp_path}" in warning
    assert "cannot share an environment" in warning
    assert "Fix: pip uninstall keras-attention, then pip install --force-reinstall" in warning


def test_importing_warns_once_when_keras_attention_is_installed_too(tmp_path):
    foreign_distribution.write_dist_info(tmp_path)
    result = run_python(IMPORT_TWICE, extra_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("ForeignDistributionWarning") == 1
    assert f"keras-attention 1.0.0 in {tmp_path}" in result.stderr
    assert "pip uninstall keras-attention" in result.stderr


def test_importing_without_another_distribution_warns_nothing():
    result = run_python(IMPORT_TWICE)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_the_import_time_check_reads_no_metadata_and_loads_no_tensorflow():
    # importlib.metadata alone takes longer to import than keras_attention.
    loaded = modules_loaded_by("import keras_attention", top_level=False)
    assert not {"importlib.metadata", "tensorflow", "keras", "argparse", "dataclasses"} & loaded


@pytest.mark.parametrize("top_level", ["keras_attention", None], ids=["top_level.txt", "RECORD"])
def test_the_cheap_check_finds_a_dist_info(tmp_path, top_level):
    foreign_distribution.write_dist_info(tmp_path, top_level=top_level)
    found = installation.find_known_foreign_distributions([str(tmp_path)])
    assert found == [installation.ForeignDistribution("keras-attention", "1.0.0", str(tmp_path))]


def test_the_cheap_check_finds_an_egg_info(tmp_path):
    egg_info = tmp_path / "keras_attention.egg-info"
    egg_info.mkdir()
    (egg_info / "PKG-INFO").write_text(
        "Metadata-Version: 2.1\nName: keras-attention\nVersion: 0.1.0\n"
    )
    (egg_info / "top_level.txt").write_text("export\nkeras_attention\nserving\n")
    found = installation.find_known_foreign_distributions([str(tmp_path)])
    assert [(d.name, d.version) for d in found] == [("keras-attention", "0.1.0")]


def test_a_keras_attention_distribution_without_the_package_is_not_reported(tmp_path):
    foreign_distribution.write_dist_info(tmp_path, top_level="something_else")
    assert installation.find_known_foreign_distributions([str(tmp_path)]) == []


def test_our_own_metadata_is_not_foreign(tmp_path):
    dist_info = tmp_path / "keras_attention_seq2seq-0.2.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: keras-attention-seq2seq\n")
    (dist_info / "top_level.txt").write_text("keras_attention\n")
    assert installation.find_known_foreign_distributions([str(tmp_path)]) == []
    assert installation.find_foreign_distributions() == []


@pytest.mark.parametrize(
    "name", ["keras-attention", "keras_attention", "Keras.Attention", "KERAS--attention"]
)
def test_names_are_compared_as_pep_503_normalizes_them(name):
    assert installation.normalize(name) == "keras-attention"
