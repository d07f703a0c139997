"""The documentation site: `mkdocs build --strict` passes, and the site loads nothing from the web.

The build renders every page of mkdocs.yml's nav, the API reference included
(about 10 s).
"""

import html
import os
import re
import subprocess
import sys

import griffe
import pytest
from helpers.docs_site import REPOSITORY, external_resources, site_external_resources


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    site = tmp_path_factory.mktemp("docs") / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPOSITORY,  # mkdocs.yml's snippets base_path is the repository root
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stderr[-6000:]}"
    return site


def page_text(path):
    """The visible text of an HTML page, whitespace collapsed."""
    text = re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8"))
    return " ".join(html.unescape(text).split())


def test_site_loads_no_script_stylesheet_or_font_from_other_hosts(site):
    assert len(list(site.rglob("*.html"))) > 10
    assert site_external_resources(site) == {}


@pytest.mark.parametrize(
    "page, name",
    [
        ("layers", "keras_attention.layers.LuongAttention"),
        ("export", "keras_attention.export.translator_exporter.TranslatorExporter"),
        ("serving", "keras_attention.serving.server.model_server.ModelServer"),
        ("client", "keras_attention_client.translation_client.TranslationClient"),
        ("runs", "keras_attention.runs.train_config.TrainConfig"),
    ],
)
def test_reference_pages_render_the_docstrings(site, page, name):
    path = site / "reference" / page / "index.html"
    assert f'id="{name}"' in path.read_text(encoding="utf-8")
    # The summary line of the docstring, read from the tree the build used.
    loader = griffe.GriffeLoader(search_paths=[str(REPOSITORY / "build" / "api-src")])
    module, _, attribute = name.rpartition(".")
    summary = loader.load(module)[attribute].docstring.value.splitlines()[0]
    assert summary.replace("`", "") in page_text(path)


def test_external_resources_finds_what_a_page_would_fetch():
    page = """<html><head>
    <link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">
    <link rel="preconnect" href="https://fonts.gstatic.com">
    <link rel="canonical" href="https://example.org/page/">
    <link rel="stylesheet" href="../assets/stylesheets/main.css">
    <script src="//cdn.jsdelivr.net/npm/mathjax.js"></script>
    <script src="../assets/javascripts/bundle.js"></script>
    <style>@import url("https://fonts.googleapis.com/css2?family=Inter");
    .x { background: url("data:image/svg+xml,<svg xmlns='http://www.w3.org/2000/svg'/>") }</style>
    </head><body><a href="https://github.com/">a link</a><img src="https://img.shields.io/b.svg">
    </body></html>"""
    assert external_resources(page) == [
        "<link href=https://fonts.googleapis.com/css?family=Roboto>",
        "<link href=https://fonts.gstatic.com>",
        "<script src=//cdn.jsdelivr.net/npm/mathjax.js>",
        '@import url("https://fonts.googleapis.com/css2?family=Inter',
        "<img src=https://img.shields.io/b.svg>",
    ]
