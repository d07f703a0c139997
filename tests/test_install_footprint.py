"""`benchmarks/install_footprint.py`: which distributions an install's size sums over."""

import pytest
from helpers.benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def footprint():
    return load_benchmark("install_footprint")


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
