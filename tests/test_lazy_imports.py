"""Package-level names are imported lazily, through one helper (`lazy_loader.attach`)."""

import importlib

import pytest
from helpers.subprocesses import modules_loaded_by

PACKAGES = [
    "keras_attention",
    "keras_attention.runs",
    "keras_attention.shortlist",
    "keras_attention.training",
    "keras_attention.inference",
    "keras_attention.distribution",
    "keras_attention.export",
    "keras_attention.serving",
]

# Names a package re-exports from another on purpose: the export's Session-path runner and
# warmup reader are the ones it shares with the server.
RE_EXPORTED: dict[tuple[str, str], str] = {
    ("keras_attention.export", "SavedModelSession"): "keras_attention.saved_model_session",
    ("keras_attention.export", "read_warmup_requests"): "keras_attention.saved_model_session",
}


@pytest.mark.parametrize("package_name", PACKAGES)
def test_every_public_name_resolves_to_the_object_of_its_module(package_name):
    package = importlib.import_module(package_name)
    assert package.__all__ and package.__all__ == sorted(package.__all__)
    assert set(package.__all__) <= set(dir(package))
    for name in package.__all__:
        value = getattr(package, name)
        module = importlib.import_module(value.__module__)
        home = RE_EXPORTED.get((package_name, name), package_name + ".")
        assert value.__module__.startswith(home)
        assert getattr(module, name) is value
    with pytest.raises(AttributeError, match="NoSuchName"):
        package.NoSuchName  # noqa: B018


def test_from_imports_work():
    from keras_attention import RandomSampling, Seq2Seq
    from keras_attention.export import TranslatorExporter
    from keras_attention.runs import TrainConfig

    assert TranslatorExporter.__name__ == "TranslatorExporter"
    assert (RandomSampling.__name__, Seq2Seq.__name__) == ("RandomSampling", "Seq2Seq")
    assert TrainConfig.__name__ == "TrainConfig"


def test_importing_the_packages_does_not_load_tensorflow():
    code = (
        "import keras_attention, keras_attention.runs, keras_attention.training\n"
        "import keras_attention.inference, keras_attention.data, keras_attention.export\n"
        "import keras_attention.distribution, keras_attention.distribution.flags\n"
        "import keras_attention.serving, keras_attention.shortlist.defaults\n"
        "keras_attention.runs.TrainConfig"
    )
    assert "tensorflow" not in modules_loaded_by(code)
