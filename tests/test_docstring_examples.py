"""The docstring examples of `keras_attention.export`, `keras_attention.serving` and the client run.

`keras_attention/` is collected by pytest's `--doctest-modules` (its folder is
its package). The repository's `export/` and `serving/` folders install under
other names (`keras_attention.export`, `keras_attention.serving`,
`keras_attention_client`), so their examples run here, imported by those names,
with the options of the pytest configuration.
"""

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

PACKAGES = ["keras_attention.export", "keras_attention.serving", "keras_attention_client"]
# `__main__` runs a command; in an editable install `serving/client` is also visible
# as `keras_attention.serving.client`, a second copy of `keras_attention_client`.
SKIPPED = {
    "keras_attention.serving.__main__",
    "keras_attention.serving.client",
    "keras_attention_client.__main__",
}


def _modules(package_name: str) -> list[str]:
    """The package and its modules, recursively, without importing any of them."""
    spec = importlib.util.find_spec(package_name)
    names = [package_name]
    for info in pkgutil.iter_modules(spec.submodule_search_locations, prefix=package_name + "."):
        if info.name in SKIPPED or info.name.endswith(("_pb2", "_pb2_grpc")):
            continue
        names.extend(_modules(info.name) if info.ispkg else [info.name])
    return names


MODULES = sorted(name for package_name in PACKAGES for name in _modules(package_name))


def test_every_package_is_walked():
    assert "keras_attention.export.translator_exporter" in MODULES
    assert "keras_attention.serving.server.servable_manager" in MODULES
    assert "keras_attention_client.wire.tensors" in MODULES
    # The editable install also sees serving/client under keras_attention.serving; skip it.
    assert not [name for name in MODULES if name.startswith("keras_attention.serving.client")]


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples(module_name):
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(
        optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS, verbose=False
    )
    for test in finder.find(module, module_name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"
