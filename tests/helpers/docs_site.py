"""The documentation's tools and checks: docs/*.py loaded by path, and the offline check.

The scripts under docs/ (the CLI reference generator, the MkDocs hook, the
griffe extension) are not part of an installed package, so tests load them
from their files.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType

REPOSITORY = Path(__file__).resolve().parents[2]

# <link rel=...> values that only name a page, without loading anything.
_NON_LOADING_LINKS = {"canonical", "alternate", "author", "license", "next", "prev", "help"}
# Attributes through which an element loads a resource, by element.
_LOADING_ATTRIBUTES = {
    "script": ("src",),
    "img": ("src", "srcset"),
    "iframe": ("src",),
    "source": ("src", "srcset"),
    "video": ("src", "poster"),
    "audio": ("src",),
    "track": ("src",),
    "embed": ("src",),
    "object": ("data",),
}
_EXTERNAL = re.compile(r"^\s*(?:https?:)?//", re.IGNORECASE)
# url(http...) / url(//...) and @import "http..." in CSS; not data: URLs.
_CSS_EXTERNAL = re.compile(
    r"""url\(\s*['"]?\s*(?:https?:)?//[^)'"]*|@import\s+(?:url\()?\s*['"]?\s*(?:https?:)?//[^;'")]*""",
    re.IGNORECASE,
)


def load_docs_module(relative_path: str) -> ModuleType:
    """Imports the file `relative_path` of the repository (e.g. "docs/gen_cli_reference.py")."""
    path = REPOSITORY / relative_path
    name = "docs_" + path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and the like look their module up
    spec.loader.exec_module(module)
    return module


class _ResourceFinder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        attributes = {name: value or "" for name, value in attrs}
        names = _LOADING_ATTRIBUTES.get(tag, ())
        if tag == "link":
            rel = set(attributes.get("rel", "").lower().split())
            names = () if rel and rel <= _NON_LOADING_LINKS else ("href", "imagesrcset")
        for name in names:
            for url in re.split(r",\s*", attributes.get(name, "")):
                if _EXTERNAL.match(url):
                    self.found.append(f"<{tag} {name}={url.split()[0]}>")
        if "style" in attributes:
            self.found += _CSS_EXTERNAL.findall(attributes["style"])
        self._in_style = tag == "style"

    def handle_endtag(self, tag):
        if tag == "style":
            self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            self.found += _CSS_EXTERNAL.findall(data)


def external_resources(html: str) -> list[str]:
    """What an HTML page loads from other hosts: scripts, stylesheets, fonts, images, frames.

    Links a reader may follow (`<a href>`) are not resources.
    """
    finder = _ResourceFinder()
    finder.feed(html)
    finder.close()
    return finder.found


def site_external_resources(site: Path) -> dict[str, list[str]]:
    """`external_resources` of every HTML page and stylesheet of a built site, by path."""
    found = {}
    for path in sorted(site.rglob("*")):
        if path.suffix == ".html":
            resources = external_resources(path.read_text(encoding="utf-8"))
        elif path.suffix == ".css":
            resources = _CSS_EXTERNAL.findall(path.read_text(encoding="utf-8"))
        else:
            continue
        if resources:
            found[str(path.relative_to(site))] = resources
    return found
