"""The import direction is one way, and every import uses our own names.

    keras_attention.export  -> keras_attention, keras_attention_client (never keras_attention.serving)
    keras_attention.serving -> keras_attention_client.wire, keras_attention.saved_model_session
                               (never Keras, never the rest of keras_attention)
    keras_attention.saved_model_session -> keras_attention_client.wire only (TensorFlow, no
                               Keras: the Session path and warmup reader that the export's
                               check and the server share)
    keras_attention.serving.ui -> nothing of ours (the server imports it, for --ui only)
    keras_attention_client  -> nothing of ours (checked in tests/serving/test_client_distribution.py)

- The repository's folders `export/` and `serving/` install as
  `keras_attention.export` and `keras_attention.serving`: no file imports a
  top-level `export` or `serving` (nothing by those names is installed), nor
  `keras_attention.serving.client` (the client is `keras_attention_client`).
- `keras_attention` never imports `keras_attention.export`,
  `keras_attention.serving` or `keras_attention_client` at module level (only
  its CLI may, inside a subcommand handler), except the client's plain-Python
  contract (`keras_attention_client.wire`, `keras_attention_client.defaults`:
  `DecodingOptions` and the shared defaults), so `import keras_attention`
  never pulls them in.
"""

import ast
from pathlib import Path

import pytest
from helpers.subprocesses import ROOT, modules_loaded_by

CLIENT_CONTRACT = ("keras_attention_client.wire", "keras_attention_client.defaults")
"""The client's plain-Python modules that `keras_attention` may import: the wire contract
(`DecodingOptions`) and the shared defaults."""

FOLDERS = ["keras_attention", "export", "serving", "tests", "benchmarks", "examples"]

SHARED_SESSION = "keras_attention.saved_model_session"
"""The one module of `keras_attention` that the server imports: TF Serving's Session path
and warmup reader, which the export's check shares."""


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """(module, line, inside a function) for every absolute import in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append((alias.name, child.lineno, in_function))
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.append((child.module, child.lineno, in_function))
            visit(child, nested)

    visit(tree, False)
    return found


def _python_files(folder: str, exclude: str | None = None) -> list[Path]:
    files = sorted((ROOT / folder).rglob("*.py"))
    if exclude:
        files = [path for path in files if not path.is_relative_to(ROOT / exclude)]
    return files


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _imports_where(files: list[Path], forbidden) -> list[str]:
    """`path:line imports module` for each import of `files` where `forbidden(module)`."""
    return [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in files
        for module, line, _ in _imports(path)
        if forbidden(module)
    ]


def test_the_helper_sees_nested_and_module_level_imports(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import keras.ops\nfrom keras_attention.export import x\nfrom . import local\n"
        "def f():\n    import keras_attention.serving\n"
    )
    assert _imports(sample) == [
        ("keras.ops", 1, False),
        ("keras_attention.export", 2, False),
        ("keras_attention.serving", 5, True),
    ]


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_file_imports_a_name_we_do_not_install(folder):
    files = _python_files(folder)
    assert files, f"{folder}/ has no Python files"
    violations = _imports_where(
        files,
        lambda module: (
            module.split(".")[0] in ("export", "serving")
            or _within(module, "keras_attention.serving.client")
        ),
    )
    assert violations == []


def test_the_server_imports_neither_keras_nor_the_rest_of_keras_attention():
    files = _python_files("serving", exclude="serving/client")
    assert files, "serving/ has no Python files"
    violations = _imports_where(
        files,
        lambda module: (
            module.split(".")[0] in ("keras", "tf_keras")
            or (
                _within(module, "keras_attention")
                and not _within(module, "keras_attention.serving")
                and module != SHARED_SESSION
            )
        ),
    )
    assert violations == []


def test_the_shared_session_imports_nothing_of_ours_but_the_wire():
    violations = _imports_where(
        [ROOT / "keras_attention" / "saved_model_session.py"],
        lambda module: (
            module.split(".")[0]
            in ("keras", "tf_keras", "keras_attention", "keras_attention_client")
            and not _within(module, "keras_attention_client.wire")
        ),
    )
    assert violations == []


def test_the_export_does_not_import_the_server():
    files = _python_files("export")
    assert files, "export/ has no Python files"
    violations = _imports_where(files, lambda module: _within(module, "keras_attention.serving"))
    assert violations == []


def test_the_translation_page_imports_nothing_of_ours():
    files = _python_files("serving/ui")
    assert files, "serving/ui/ has no Python files"
    violations = _imports_where(
        files, lambda module: module.split(".")[0] in ("keras_attention", "keras_attention_client")
    )
    assert violations == []


def test_keras_attention_does_not_import_export_serving_or_the_client_at_module_level():
    files = _python_files("keras_attention")
    assert files, "keras_attention/ has no Python files"
    violations = []
    for path in files:
        for module, line, in_function in _imports(path):
            if not any(
                _within(module, package)
                for package in (
                    "keras_attention.export",
                    "keras_attention.serving",
                    "keras_attention_client",
                )
            ) or any(_within(module, contract) for contract in CLIENT_CONTRACT):
                continue
            # The CLI may import them lazily, inside its subcommand handlers.
            if in_function and path.is_relative_to(ROOT / "keras_attention" / "cli"):
                continue
            violations.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert violations == []


def test_importing_the_server_loads_nothing_else_of_ours():
    # (TensorFlow itself loads Keras; the static test above checks our own imports.)
    code = (
        "import importlib, pkgutil, keras_attention.serving.server as server\n"
        "for m in pkgutil.iter_modules(server.__path__):\n"
        "    importlib.import_module('keras_attention.serving.server.' + m.name)\n"
    )
    loaded = modules_loaded_by(code, top_level=False)
    ours = {name for name in loaded if _within(name, "keras_attention")}
    # The package itself runs its installation check (standard library only); the Session
    # path and warmup reader are the one other module of ours the server loads.
    package = {"keras_attention", "keras_attention.installation", SHARED_SESSION}
    assert ours == package | {name for name in ours if _within(name, "keras_attention.serving")}
    assert "keras_attention.serving.server.model_server" in ours
    assert not {name for name in ours if _within(name, "keras_attention.serving.ui")}  # --ui only
    assert not {name.split(".")[0] for name in loaded} & {"export", "serving"}


def test_importing_keras_attention_loads_neither_export_nor_serving_nor_the_client():
    loaded = modules_loaded_by("import keras_attention, keras_attention.cli", top_level=False)
    assert "keras_attention.cli" in loaded
    assert not {
        name
        for name in loaded
        if _within(name, "keras_attention.export")
        or _within(name, "keras_attention.serving")
        or name.split(".")[0] in ("keras_attention_client", "export", "serving")
    }
