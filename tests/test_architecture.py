"""The shape of the code: no import circle, imports only downward, small modules and
signatures, one default per decoding option.

The import graph is read from the source (`helpers.module_graph`); the figures these
checks bound are in docs/architecture.md.
"""

from __future__ import annotations

import ast

import pytest
from helpers.module_graph import find_cycles, import_graph, source_files

LAYERS = [
    {"installation", "tensorflow_logging", "client"},
    {
        "keras_attention",
        "version_action",
        "attention_recipe",
        "text",
        "layers",
        "decoding",
        "precision",
    },
    {"data", "models"},
    {"translator"},
    {"runs"},
    {"vocabulary_shortlist", "distribution", "inference"},
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
    assert "keras_attention.runs.run_data" in graph["keras_attention.training.trainer"]
    assert "keras_attention.export.translator_exporter" in graph
    assert "keras_attention_client.wire.contract" in graph
    assert "keras_attention.serving.server.model_server" in graph
    # `from keras_attention.text import X` is an edge to the package, not to X.
    assert "keras_attention.text" in graph["keras_attention.translator"]


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
    long = {
        module: lines
        for module, path in source_files().items()
        if (lines := path.read_text(encoding="utf-8").count("\n")) > MAX_MODULE_LINES
    }
    assert long == {}


def _keras_constructor(node: ast.FunctionDef, parents: dict) -> bool:
    """Whether `node` is `__init__` of a class built on Keras (a layer, model, callback)."""
    owner = parents.get(node)
    if node.name != "__init__" or not isinstance(owner, ast.ClassDef):
        return False
    bases = [ast.unparse(base) for base in owner.bases]
    decorators = [ast.unparse(decorator) for decorator in owner.decorator_list]
    return any(base.startswith("keras.") for base in bases) or any(
        "register_keras_serializable" in decorator for decorator in decorators
    )


def _functions(tree: ast.AST):
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node, parents


def test_no_function_takes_more_than_the_limit_of_parameters():
    too_many = []
    for module, path in source_files().items():
        for node, parents in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            arguments = node.args
            names = [
                a.arg
                for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
                if a.arg not in ("self", "cls")
            ]
            if len(names) > MAX_PARAMETERS and not _keras_constructor(node, parents):
                too_many.append(f"{module}:{node.lineno} {node.name} ({len(names)})")
    assert too_many == []


def _length_penalty_defaults(tree: ast.AST) -> list[int]:
    """Lines where a literal value is written as a length penalty's default."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            positional = [*arguments.posonlyargs, *arguments.args]
            pairs = list(zip(positional[len(positional) - len(arguments.defaults) :],
                             arguments.defaults, strict=True))  # fmt: skip
            pairs += [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults,
                                             strict=True) if d is not None]  # fmt: skip
            lines += [
                d.lineno for a, d in pairs if "length_penalty" in a.arg.lower() and _is_number(d)
            ]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any("length_penalty" in ast.unparse(t).lower() for t in targets) and _is_number(
                node.value
            ):
                lines.append(node.lineno)
        elif isinstance(node, ast.Call):
            lines += [
                k.value.lineno
                for k in node.keywords
                if k.arg and "length_penalty" in k.arg.lower() and _is_number(k.value)
            ]
    return lines


def _is_number(node: ast.AST | None) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    )


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
def test_the_length_penalty_count_sees_every_way_to_write_a_default(source, count):
    assert len(_length_penalty_defaults(ast.parse(source))) == count


def test_the_length_penalty_default_is_written_once():
    places = [
        f"{module}:{line}"
        for module, path in source_files().items()
        for line in _length_penalty_defaults(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert len(places) == 1, places
