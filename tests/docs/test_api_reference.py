"""The API reference's source tree (docs/hooks/api_tree.py) and doctest fences."""

import griffe
from helpers.docs_site import REPOSITORY, load_docs_module

api_tree = load_docs_module("docs/hooks/api_tree.py")
keras_docstrings = load_docs_module("docs/hooks/keras_docstrings.py")


def test_griffe_reads_the_installed_layout_from_the_tree(tmp_path):
    tree = api_tree.build_api_source(REPOSITORY, tmp_path / "api-src")
    loader = griffe.GriffeLoader(search_paths=[str(tree)], allow_inspection=False)
    exporter = loader.load("keras_attention.export.translator_exporter")
    assert exporter["TranslatorExporter"].docstring.value
    server = loader.load("keras_attention.serving.server.model_server")
    assert server["ModelServer"].docstring.value
    client = loader.load("keras_attention_client.translation_client")
    assert client["TranslationClient"].docstring.value
    layers = loader.load("keras_attention.layers")
    assert layers["LuongAttention"].docstring.value  # an alias, resolved statically
    assert (tree / "keras_attention" / "export").resolve() == REPOSITORY / "export"


def test_rebuilding_the_tree_replaces_only_links(tmp_path):
    tree = api_tree.build_api_source(REPOSITORY, tmp_path / "api-src")
    (tree / "keras_attention" / "gone.py").symlink_to(
        REPOSITORY / "keras_attention" / "installation.py"
    )
    api_tree.build_api_source(REPOSITORY, tree)
    assert not (tree / "keras_attention" / "gone.py").exists()
    assert (REPOSITORY / "keras_attention" / "installation.py").is_file()  # the target is untouched


def test_keras_docstrings_are_fenced():
    text = "\n".join(
        [
            "Example:",
            "",
            ">>> x = 1  # doctest: +SKIP",
            "... ",
            ">>> [[x]]",
            "[[1]]",
            "<BLANKLINE>",
            "",
            "Args:",
            "    y: see",
            "        >>> f(y)",
            "        2",
            "",
            "```python",
            ">>> not a doctest inside a fence",
            "```",
        ]
    )
    assert keras_docstrings.fence_doctests(text).split("\n") == [
        "Example:",
        "",
        "```pycon",
        ">>> x = 1",
        "... ",
        ">>> [[x]]",
        "[[1]]",
        "",
        "```",
        "",
        "Args:",
        "    y: see",
        "        ```pycon",
        "        >>> f(y)",
        "        2",
        "        ```",
        "",
        "```python",
        ">>> not a doctest inside a fence",
        "```",
    ]


def test_call_arguments_become_a_parameters_table_with_the_call_defaults(tmp_path):
    tree = api_tree.build_api_source(REPOSITORY, tmp_path / "api-src")
    loader = griffe.GriffeLoader(
        search_paths=[str(tree)],
        extensions=griffe.load_extensions(str(REPOSITORY / "docs/hooks/keras_docstrings.py")),
        docstring_parser="google",
        docstring_options={"warn_missing_types": False},
    )
    # LuongAttention documents the arguments of `call`, which it inherits from BaseAttention.
    layer = loader.load("keras_attention.layers.luong_attention")["LuongAttention"]
    (section,) = [s for s in layer.docstring.parsed if s.title == "Call arguments:"]
    assert section.kind is griffe.DocstringSectionKind.parameters
    arguments = {argument.name: argument for argument in section.value}
    assert {"query", "values", "mask", "use_causal_mask"} <= set(arguments)
    assert arguments["use_causal_mask"].default == "False"
    assert arguments["query"].default is None  # required
    assert "Call arguments" not in [
        s.title for s in layer.docstring.parsed if s.kind.value == "admonition"
    ]
