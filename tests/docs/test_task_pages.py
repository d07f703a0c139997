"""The commands of the task pages (own corpus, export, serving, client, on-device), run as
written on a tiny corpus and budget.

Each page's blocks are read from its Markdown and run as one script by
`helpers.page_commands` (its docstring lists what a test changes). One tiny run is
trained per session, by the own-corpus page's own `train` command on a corpus written
under that page's file name; the pages that start from a trained run or an export get a
copy where their paths expect it (`runs/fra-eng`, `exports/fra-eng`), and the export
page's first block (export and check) makes the export the others use. Pages that call a
server they do not start call the Quickstart's server, started once for them.
"""

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.page_commands import (
    DOCS,
    SERVE,
    WAIT,
    PageShell,
    as_run,
    block_as_run,
    blocks,
    commands,
    left_out,
    page_environment,
    write_user_files,
)

OWN_CORPUS, EXPORT, SERVING, CLIENT, ON_DEVICE = (
    DOCS / name
    for name in ("own-corpus.md", "export.md", "serving.md", "client.md", "on-device.md")
)


def read(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def own_train_command() -> str:
    return next(c for c in commands(blocks(read(OWN_CORPUS), "bash")[0]) if " train " in f"{c} ")


def own_corpus_file() -> str:
    """The file name the own-corpus page gives its corpus."""
    return re.search(r"--data (\S+)", own_train_command())[1]


def copy_in(source: Path, directory: Path, *paths: tuple[str, str]) -> None:
    """Copies `source/from` to `directory/to` for each `(from, to)`."""
    for origin, target in paths:
        (directory / target).parent.mkdir(parents=True, exist_ok=True)
        if (source / origin).is_dir():
            shutil.copytree(source / origin, directory / target)
        else:
            shutil.copy2(source / origin, directory / target)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A directory holding the own-corpus page's corpus and `runs/my-corpus`, trained by
    the page's `train` command."""
    directory = tmp_path_factory.mktemp("trained")
    write_user_files(read(OWN_CORPUS), directory)
    shell = PageShell(directory)
    shell.bash(as_run(own_train_command(), shell.ports), timeout=600)
    return directory


@pytest.fixture(scope="module")
def exported(trained, tmp_path_factory) -> Path:
    """The trained run as `runs/fra-eng`, exported and checked by the export page's first
    block (`exports/fra-eng/1`)."""
    directory = tmp_path_factory.mktemp("exported")
    copy_in(trained, directory, (own_corpus_file(),) * 2, ("runs/my-corpus", "runs/fra-eng"))
    shell = PageShell(directory)
    shell.bash(block_as_run(blocks(read(EXPORT), "bash")[0], shell.ports), timeout=600)
    return directory


@pytest.fixture(scope="module")
def served(exported):
    """`SERVE` serving the export; the ports it took (page port -> free port)."""
    shell = PageShell(exported)
    log = exported / "server.log"
    with log.open("w") as output:
        server = subprocess.Popen(
            ["bash", "-c", f"exec {as_run(SERVE, shell.ports)}"],
            cwd=exported,
            env=page_environment(),
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + WAIT
        while ": serving fra-eng" not in log.read_text():
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        yield shell.ports
    finally:
        server.terminate()
        server.wait(timeout=60)


def test_commands_split_as_bash_does():
    block = (
        "one --a 1   # a comment\n"
        "# a comment line\n"
        "two --b \\\n    --c\n"
        "curl -d '{\n  \"x\": 1}'\n"
        'python -c "a; \\\nb"\n'
        "echo 'a # b' | three\n"
    )
    assert commands(block) == [
        "one --a 1",
        "two --b \\\n    --c",
        "curl -d '{\n  \"x\": 1}'",
        'python -c "a; \\\nb"',
        "echo 'a # b' | three",
    ]


def test_commands_are_changed_only_as_documented():
    ports = {"8500": "1234", "8501": "1235"}
    assert as_run("keras-attention train --out r", ports).startswith(
        "keras-attention train --max-pairs"
    )
    assert (
        as_run("keras-attention translate runs/r hi", ports)
        == "keras-attention translate runs/r hi"
    )
    assert (
        as_run("keras-attention translate --server localhost:8500 hi", ports)
        == f"keras-attention translate --timeout {WAIT} --server localhost:1234 hi"
    )
    assert as_run("echo x | keras-attention-client translate --server http://h:8501", ports) == (
        f"echo x | keras-attention-client translate --timeout {WAIT} --server http://h:1235"
    )
    assert left_out('pip install "./serving/client[litert]"')
    assert left_out("EXPORT_DIR=$PWD/e docker compose up -d")
    assert left_out("keras-attention serve --port 8500 &") is None


def test_a_page_runs_each_command_once_and_its_server_until_its_last_call(tmp_path):
    page = (
        "```bash\nkeras-attention serve --port 8500 &\nkeras-attention-client translate a\n"
        "kill $!   # stop\n```\n\n```text\nnot a command\n```\n\n"
        "```bash\nkeras-attention-client translate a\npip install x\ncurl localhost:8501\n```\n"
        "```python\nprint('localhost:8500')\n```\n```bash\nls\n```\n"
    )
    shell = PageShell(tmp_path, ports={"8500": "1", "8501": "2"})
    script = shell.page_script(page).splitlines()
    assert script == [
        "keras-attention serve --port 1 &",
        f"keras-attention-client translate --timeout {WAIT} a",
        "curl localhost:2",
        f'"{sys.executable}" page-block-3.py',
        "kill $!",
        "ls",
    ]
    assert (tmp_path / "page-block-3.py").read_text() == "print('localhost:1')\n"


@pytest.mark.slow
def test_the_own_corpus_page_runs_as_written(tmp_path, trained):
    markdown = read(OWN_CORPUS)
    write_user_files(markdown, tmp_path)
    copy_in(trained, tmp_path, ("runs/my-corpus", "runs/my-corpus"))
    out = PageShell(tmp_path).run_page(markdown, timeout=900, already_run=(own_train_command(),))
    assert json.loads((tmp_path / "runs/my-corpus/metrics.json").read_text())
    assert (tmp_path / "exports/my-corpus/1/saved_model.pb").is_file()
    assert "serving my-corpus (version 1)" in out


@pytest.mark.slow
def test_the_export_page_runs_as_written(tmp_path, exported, served):
    markdown = read(EXPORT)
    copy_in(exported, tmp_path, *[(name, name) for name in (own_corpus_file(), "runs", "exports")])
    first = tuple(commands(blocks(markdown, "bash")[0]))
    out = PageShell(tmp_path, served).run_page(markdown, timeout=900, already_run=first)
    assert '"error"' not in out and '"outputs"' in out and '"predictions"' in out
    versions = sorted(
        int(p.name) for p in (tmp_path / "exports/fra-eng").iterdir() if p.name.isdigit()
    )
    assert versions == [1, 2, 3, 4]
    manifest = tmp_path / "exports/fra-eng/2/assets.extra/export_manifest.json"
    assert json.loads(manifest.read_text())["shortlist"]["k"] == 50


@pytest.mark.slow
def test_the_serving_page_runs_as_written(tmp_path, exported):
    copy_in(exported, tmp_path, ("exports", "exports"))
    out = PageShell(tmp_path).run_page(read(SERVING), timeout=600)
    assert "serving fra-eng (version 1)" in out
    assert '"model_version_status"' in out and '"outputs"' in out and '"error"' not in out


@pytest.mark.slow
def test_the_client_page_runs_as_written(tmp_path, served):
    out = PageShell(tmp_path, served).run_page(read(CLIENT), timeout=600)
    assert re.search(r"^\S+ \d+ False$", out, flags=re.M), out  # no TensorFlow imported
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [record["source"] for record in records] == ["I am cold."], out


@pytest.mark.slow
def test_the_on_device_page_runs_as_written(tmp_path, exported):
    copy_in(exported, tmp_path, (own_corpus_file(),) * 2, ("runs", "runs"), ("exports", "exports"))
    PageShell(tmp_path).run_page(read(ON_DEVICE), timeout=900)
    for name in ("fra-eng-litert", "fra-eng-int8"):
        assert (tmp_path / "exports" / name / "greedy.tflite").is_file()
        assert (tmp_path / "exports" / name / "beam.tflite").is_file()
    manifest = json.loads((tmp_path / "exports/fra-eng-int8/litert_manifest.json").read_text())
    assert "int8" in json.dumps(manifest)
