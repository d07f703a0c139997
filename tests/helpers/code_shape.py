"""The shape of our code, read from the source (no module is imported): the import graph,
module sizes, signatures and written-out defaults.

`tests/test_architecture.py` bounds these; `docs/gen_code_shape.py` reports them for any
commit (it loads this file by path, so nothing here imports other test helpers).

The import graph:

Every installed module gets its import name: `keras_attention/runs/run_state.py` is
`keras_attention.runs.run_state`, the repository's `export/` and `serving/` folders install
as `keras_attention.export` and `keras_attention.serving`, and `serving/client/` is the
`keras_attention_client` distribution. An edge `a -> b` means module `a` imports `b`
(at module level or inside a function), `b` being the most specific module of ours the
imported name is in.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository root."""

SOURCE_FOLDERS = {
    "keras_attention": "keras_attention",
    "export": "keras_attention.export",
    "serving/client": "keras_attention_client",
    "serving": "keras_attention.serving",
}
"""Repository folder -> the import name it installs as (the most specific folder wins)."""

GENERATED = ("serving/client/wire/protos",)
"""Folders of generated code, left out."""


def module_name(path: Path, root: Path = ROOT) -> str | None:
    """The import name of a source file, or None for a file we do not install."""
    relative = path.relative_to(root)
    if any(relative.is_relative_to(folder) for folder in GENERATED):
        return None
    for folder, package in sorted(SOURCE_FOLDERS.items(), key=lambda item: -len(item[0])):
        if relative.is_relative_to(folder):
            parts = list(relative.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            return ".".join([package, *parts])
    return None


def source_files(root: Path = ROOT) -> dict[str, Path]:
    """Import name -> file, for every module we install."""
    files = {}
    for folder in SOURCE_FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            name = module_name(path, root)
            if name is not None:
                files[name] = path
    return files


def _imported_names(path: Path, package: str) -> Iterator[tuple[str, int]]:
    """(module or `module.name`, line) for each import of a file, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                yield f"{base}.{alias.name}", node.lineno


def import_graph(root: Path = ROOT) -> dict[str, dict[str, int]]:
    """Module -> {imported module of ours: first line}, over every module we install."""
    files = source_files(root)
    graph: dict[str, dict[str, int]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: dict[str, int] = {}
        for imported, line in _imported_names(path, package):
            # The most specific module of ours the name is in (`from a import b` names a
            # module `a.b`, or a name defined in `a`).
            parts = imported.split(".")
            targets = [".".join(parts[:end]) for end in range(len(parts), 0, -1)]
            target = next((t for t in targets if t in files), None)
            if target is not None and target != name:
                edges.setdefault(target, line)
        graph[name] = edges
    return graph


def find_cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def module_lines(root: Path = ROOT) -> dict[str, int]:
    """Module -> its number of lines."""
    return {
        module: path.read_text(encoding="utf-8").count("\n")
        for module, path in source_files(root).items()
    }


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


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


def parameter_counts(root: Path = ROOT) -> list[tuple[str, int, str, int, bool]]:
    """`(module, line, function, parameters, is a Keras constructor)` for every function
    (`self` and `cls` not counted)."""
    counts = []
    for module, path in source_files(root).items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parents = _parents(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                arguments = node.args
                names = [
                    a.arg
                    for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
                    if a.arg not in ("self", "cls")
                ]
                keras_init = _keras_constructor(node, parents)
                counts.append((module, node.lineno, node.name, len(names), keras_init))
    return counts


def _is_literal(node: ast.AST | None) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    )


def _mentions(name: str | None, option: str) -> bool:
    """Whether `name` names `option` (`max_beam_width` is its own option, not `beam_width`)."""
    if name is None:
        return False
    name = name.lower()
    return option in name.replace("max_" + option, "")


def literal_defaults(tree: ast.AST, option: str, modes: tuple = ()) -> list[int]:
    """Lines where a number is written as a default of `option` (a parameter's default,
    an assignment, or a keyword argument whose name contains `option`), but the values
    of `modes` (e.g. `beam_width=1`: greedy search asked for, not a default)."""

    def _is_number(node) -> bool:
        return _is_literal(node) and node.value not in modes

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            positional = [*arguments.posonlyargs, *arguments.args]
            pairs = list(zip(positional[len(positional) - len(arguments.defaults) :],
                             arguments.defaults, strict=True))  # fmt: skip
            pairs += list(zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True))
            lines += [d.lineno for a, d in pairs if _mentions(a.arg, option) and _is_number(d)]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_mentions(ast.unparse(t), option) for t in targets) and _is_number(node.value):
                lines.append(node.lineno)
        elif isinstance(node, ast.Call):
            lines += [
                k.value.lineno
                for k in node.keywords
                if _mentions(k.arg, option) and _is_number(k.value)
            ]
    return lines


def literal_default_places(option: str, root: Path = ROOT, modes: tuple = ()) -> list[str]:
    """`module:line` of every number written as a default of `option` (but `modes`)."""
    return [
        f"{module}:{line}"
        for module, path in source_files(root).items()
        for line in literal_defaults(ast.parse(path.read_text(encoding="utf-8")), option, modes)
    ]
