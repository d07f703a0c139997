"""The import direction is one way: export -> keras_attention; serving -> neither.

- `serving` never imports `keras_attention`, `export` or `keras` (only grpc, the
  serving protos, NumPy, and TensorFlow to run a graph), anywhere, even lazily.
- `keras_attention` never imports `export` or `serving` at module level; only
  its CLI may import them inside a subcommand handler, so `import
  keras_attention` never pulls them in.
"""

import ast
from pathlib import Path

from helpers.subprocesses import ROOT, modules_loaded_by


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """(top-level module, line, inside a function) for every import in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append((alias.name.split(".")[0], child.lineno, in_function))
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.append((child.module.split(".")[0], child.lineno, in_function))
            visit(child, nested)

    visit(tree, False)
    return found


def _python_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def test_the_helper_sees_nested_and_module_level_imports(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import keras.ops\nfrom export import x\nfrom . import local\n"
        "def f():\n    import serving\n"
    )
    assert _imports(sample) == [("keras", 1, False), ("export", 2, False), ("serving", 5, True)]


def test_serving_imports_neither_keras_attention_nor_export_nor_keras():
    files = _python_files("serving")
    assert files, "serving/ has no Python files"
    violations = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in files
        for module, line, _ in _imports(path)
        if module in ("keras_attention", "export", "keras", "tf_keras")
    ]
    assert violations == []


def test_keras_attention_does_not_import_export_or_serving_at_module_level():
    files = _python_files("keras_attention")
    assert files, "keras_attention/ has no Python files"
    violations = []
    for path in files:
        for module, line, in_function in _imports(path):
            if module not in ("export", "serving"):
                continue
            # The CLI may import them lazily, inside its subcommand handlers.
            if in_function and path == ROOT / "keras_attention" / "cli.py":
                continue
            violations.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert violations == []


def test_importing_serving_loads_neither_keras_attention_nor_export():
    code = (
        "import importlib, pkgutil, serving\n"
        "for m in pkgutil.iter_modules(serving.__path__):\n"
        "    if m.name != '__main__':\n"
        "        importlib.import_module('serving.' + m.name)\n"
    )
    assert modules_loaded_by(code) & {"keras_attention", "export"} == set()


def test_importing_keras_attention_loads_neither_export_nor_serving():
    loaded = modules_loaded_by("import keras_attention, keras_attention.cli")
    assert loaded & {"serving", "export"} == set()
