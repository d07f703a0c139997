"""Package-level names are imported lazily, through one helper (`lazy_loader.attach`)."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["keras_attention", "keras_attention.training", "export"]


@pytest.mark.parametrize("package_name", PACKAGES)
def test_every_public_name_resolves_to_the_object_of_its_module(package_name):
    package = importlib.import_module(package_name)
    assert package.__all__ and package.__all__ == sorted(package.__all__)
    assert set(package.__all__) <= set(dir(package))
    for name in package.__all__:
        value = getattr(package, name)
        module = importlib.import_module(value.__module__)
        assert value.__module__.startswith(package_name + ".")
        assert getattr(module, name) is value
    with pytest.raises(AttributeError, match="NoSuchName"):
        package.NoSuchName  # noqa: B018


def test_from_imports_work():
    from export import TranslatorExporter
    from keras_attention import RandomSampling, Seq2Seq
    from keras_attention.training import TrainConfig

    assert TranslatorExporter.__name__ == "TranslatorExporter"
    assert (RandomSampling.__name__, Seq2Seq.__name__) == ("RandomSampling", "Seq2Seq")
    assert TrainConfig.__name__ == "TrainConfig"


def test_importing_the_packages_does_not_load_tensorflow():
    code = (
        "import sys, keras_attention, keras_attention.training, export\n"
        "keras_attention.training.TrainConfig\n"
        "print('tensorflow' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "False"
