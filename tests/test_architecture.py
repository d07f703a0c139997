"""The shape of the code: no import circle, imports only downward, small modules and
signatures, one default per decoding option.

The code is read from the source (`helpers.code_shape`); the figures these
checks bound are in docs/architecture.md.
"""

from __future__ import annotations

import ast

import pytest
from helpers.code_shape import (
    find_cycles,
    import_graph,
    literal_default_places,
    literal_defaults,
    module_lines,
    parameter_counts,
    source_files,
)

LAYERS = [
    {"installation", "tensorflow_logging", "auto", "client", "decoding_defaults"},
    {
        "keras_attention",
        "version_action",
        "attention_recipe",
        "text",
        "layers",
        "decoding",
        "precision",
        "saved_model_session",
    },
    {"data", "models", "seq2seq"},
    {"runs"},
    {"shortlist", "distribution", "inference"},
    {"training"},
    {"evaluation", "plotting"},
    {"export"},
    {"serving"},
    {"cli"},
]
"""Our packages (and top-level modules) from the bottom up: each imports only from the
layers below it (and from itself). `client` is the keras_attention_client distribution;
`keras_attention` is the package's own `__init__` (its public names load lazily)."""

MAX_MODULE_LINES = 450
MAX_PARAMETERS = 8


def unit(module: str) -> str:
    """The package of ours (an entry of `LAYERS`) that `module` belongs to."""
    parts = module.split(".")
    if parts[0] == "keras_attention_client":
        return "client"
    return parts[1] if len(parts) > 1 else parts[0]


def rank(name: str) -> int:
    for level, names in enumerate(LAYERS):
        if name in names:
            return level
    raise AssertionError(f"{name!r} is in no layer of LAYERS: add it where it belongs")


def test_the_graph_resolves_our_modules_and_relative_imports():
    graph = import_graph()
    assert "keras_attention.runs.training_run" in graph["keras_attention.training.trainer"]
    assert "keras_attention.export.translator_exporter" in graph
    assert "keras_attention_client.wire.contract" in graph
    assert "keras_attention.serving.server.model_server" in graph
    # `from keras_attention.text import X` is an edge to the package, not to X.
    assert "keras_attention.text" in graph["keras_attention.inference.translator"]


def test_find_cycles_finds_a_cycle_through_a_function_level_import():
    graph = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 9}, "d": {"a": 1}}
    assert find_cycles(graph) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b": 1}, "b": {}}) == []


def test_there_is_no_import_circle():
    assert find_cycles(import_graph()) == []


def test_packages_import_only_from_the_layers_below():
    upward = []
    for module, imported in import_graph().items():
        for target, line in imported.items():
            source, destination = unit(module), unit(target)
            if source != destination and rank(destination) >= rank(source):
                upward.append(f"{module}:{line} imports {target}")
    assert upward == []


def test_every_package_is_in_a_layer():
    for module in source_files():
        rank(unit(module))


def test_no_module_is_longer_than_the_limit():
    long = {module: lines for module, lines in module_lines().items() if lines > MAX_MODULE_LINES}
    assert long == {}


def test_no_function_takes_more_than_the_limit_of_parameters():
    too_many = [
        f"{module}:{line} {name} ({count})"
        for module, line, name, count, keras_init in parameter_counts()
        if count > MAX_PARAMETERS and not keras_init
    ]
    assert too_many == []


@pytest.mark.parametrize(
    ("source", "count"),
    [
        ("def f(length_penalty=0.6): pass", 1),
        ("def f(*, length_penalty: float = 0.6): pass", 1),
        ("def f(length_penalty=None): pass", 0),
        ("LENGTH_PENALTY = 0.6", 1),
        ("class O:\n    length_penalty: float = 0.6", 1),
        ("add_argument('--length-penalty', length_penalty=0.6)", 1),
        ("f(length_penalty=penalty)", 0),
    ],
)
def test_the_default_count_sees_every_way_to_write_a_default(source, count):
    assert len(literal_defaults(ast.parse(source), "length_penalty")) == count


@pytest.mark.parametrize(
    ("option", "modes"),
    [
        ("length_penalty", ()),
        ("temperature", ()),
        # beam_width=1 asks for greedy search; it is not a default.
        ("beam_width", (1,)),
        ("max_output_length", ()),
    ],
)
def test_a_decoding_default_is_written_once(option, modes):
    places = literal_default_places(option, modes=modes)
    assert len(places) == 1, places


def test_the_default_count_tells_options_and_modes_apart():
    source = "def f(beam_width=4, max_beam_width=16): pass\ng(beam_width=1)"
    assert len(literal_defaults(ast.parse(source), "beam_width")) == 2
    assert len(literal_defaults(ast.parse(source), "beam_width", (1,))) == 1
