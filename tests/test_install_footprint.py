"""`benchmarks/install_footprint.py`: which distributions an install's size sums over."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def footprint():
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))  # the script imports `harness` as a sibling
    try:
        spec = importlib.util.spec_from_file_location(
            "install_footprint", ROOT / "benchmarks" / "install_footprint.py"
        )
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return module


@pytest.mark.parametrize(
    "requirement, name",
    [
        ("numpy>=1.26", "numpy"),
        ("grpcio (>=1.60)", "grpcio"),
        ('tensorflow-text==2.21.*; platform_system != "Windows"', "tensorflow-text"),
        ('mkdocs>=1.6; extra == "docs"', None),
        ("pytest ; extra=='test'", None),
    ],
)
def test_a_requirement_names_its_distribution_unless_it_needs_an_extra(
    footprint, requirement, name
):
    assert footprint._name(requirement) == name


def test_the_client_closure_holds_its_requirements_and_no_tensorflow(footprint):
    names = footprint.closure("keras-attention-client")
    assert {"keras-attention-client", "grpcio", "protobuf", "numpy"} <= set(names)
    assert "tensorflow" not in names
    assert {"tensorflow", "tensorflow-text", "keras-attention-client"} <= set(
        footprint.closure("keras-attention-seq2seq")
    )
