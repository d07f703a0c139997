"""MkDocs hook: the source tree that the API reference is read from.

The installed `keras_attention.export` and `keras_attention.serving` come from
the repository's top-level `export/` and `serving/` folders (setuptools
`package-dir`), and `keras_attention_client` from `serving/client/`. griffe,
which reads the docstrings for mkdocstrings without importing anything, looks
packages up by folder, so it finds neither. `on_config` lays the installed
layout out under `build/api-src/` with symbolic links:

    build/api-src/
      keras_attention/
        __init__.py, cli.py, data, ... -> ../../../keras_attention/<entry>
        export  -> ../../../export
        serving -> ../../../serving
      keras_attention_client -> ../../serving/client

and mkdocs.yml points the python handler's `paths` there.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from mkdocs.plugins import event_priority

log = logging.getLogger("mkdocs.hooks.api_tree")

REPOSITORY = Path(__file__).resolve().parents[2]
API_SOURCE = REPOSITORY / "build" / "api-src"

# Package folder in the staging tree -> folder of the repository it is.
MAPPED = {
    "keras_attention/export": "export",
    "keras_attention/serving": "serving",
    "keras_attention_client": "serving/client",
}
SKIPPED = {"__pycache__"}


def _link(link: Path, target: Path) -> None:
    """A relative symbolic link at `link` to `target`."""
    link.symlink_to(os.path.relpath(target, link.parent), target_is_directory=target.is_dir())


def _clear(folder: Path) -> None:
    """Removes what an earlier build linked (links only; never follows them)."""
    for entry in folder.iterdir():
        if entry.is_symlink():
            entry.unlink()
        elif entry.is_dir():
            _clear(entry)
            entry.rmdir()
        else:
            raise RuntimeError(f"{entry} is not a link made by {__file__}; remove it by hand")


def build_api_source(repository: Path = REPOSITORY, destination: Path = API_SOURCE) -> Path:
    """Lays out the installed packages under `destination` (see the module docstring)."""
    destination.mkdir(parents=True, exist_ok=True)
    _clear(destination)
    package = destination / "keras_attention"
    package.mkdir()
    for entry in sorted((repository / "keras_attention").iterdir()):
        if entry.name not in SKIPPED:
            _link(package / entry.name, entry)
    for name, folder in MAPPED.items():
        _link(destination / name, repository / folder)
    return destination


@event_priority(100)  # before mkdocstrings reads anything
def on_config(config):
    path = build_api_source()
    log.debug("API reference source tree: %s", path)
    return config
