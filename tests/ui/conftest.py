"""Fixtures of the translation page's browser tests: Debian's chromium and live servers.

The tests skip, naming the reason, where chromium or pytest-playwright is
missing; `.ci/run` installs both.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.serving import add_version
from helpers.stand_in_export import build_translator_export
from helpers.translation_page import CHROMIUM, CHROMIUM_FLAGS, build_plain_export, start_server


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright's launch arguments, with Debian's chromium and its flags."""
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_FLAGS}


@pytest.fixture(scope="session")
def page_models(tmp_path_factory) -> Path:
    """A ModelServerConfig: `translator` (the stand-in export) and `plain` (no attention)."""
    root = tmp_path_factory.mktemp("page_models")
    translator, plain = root / "translator", root / "plain"
    add_version(translator, 1, build_translator_export(root / "exports" / "upper", 1))
    add_version(plain, 1, build_plain_export(root / "exports" / "plain", 1))
    config = root / "models.config"
    config.write_text(
        "model_config_list {\n"
        f'  config {{ name: "translator" base_path: "{translator}" model_platform: "tensorflow" }}\n'
        f'  config {{ name: "plain" base_path: "{plain}" model_platform: "tensorflow" }}\n'
        "}\n"
    )
    return config


@pytest.fixture(scope="session")
def trained_models(tmp_path_factory) -> Path:
    """A ModelServerConfig serving `tiny`: a tiny trained run, exported (beam width 3)."""
    from helpers.export_testing import train_export_run

    from keras_attention.export import TranslatorExporter

    root = tmp_path_factory.mktemp("trained_page_model")
    run = train_export_run(root, steps_per_epoch=20)
    TranslatorExporter.from_run(run, beam_width=3).export(root / "tiny")
    config = root / "models.config"
    config.write_text(
        "model_config_list {\n"
        f'  config {{ name: "tiny" base_path: "{root / "tiny"}" model_platform: "tensorflow" }}\n'
        "}\n"
    )
    return config


@pytest.fixture(scope="module")
def page_server(page_models):
    """One server with the page, shared by the read-only tests of a module."""
    server = start_server(page_models)
    yield server
    server.stop(grace=1.0)
