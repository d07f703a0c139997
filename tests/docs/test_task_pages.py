"""The commands of the task pages (own corpus, export, serving, client, on-device), run as
written on a tiny corpus and budget.

Each page's blocks are read from its Markdown and run as one script by
`helpers.page_commands`, whose docstring lists what a test changes and what the pages of
one module (a `CommandSession`) run only once. The own-corpus page runs first, on a
corpus written under the file name it uses: its `train` is the module's one tiny run and
its `export` the one SavedModel export. The pages that start from the Quickstart's run or
export get a copy named as they expect (`runs/fra-eng`, `exports/fra-eng`); those that
call a server they do not start call the Quickstart's (`SERVE`), started once. About 160
CPU-seconds in all on 2 cores, two thirds of it the own-corpus page.
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
    CommandSession,
    PageShell,
    as_run,
    blocks,
    command_key,
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
def session() -> CommandSession:
    return CommandSession()


@pytest.fixture(scope="module")
def own_corpus_page(session, tmp_path_factory) -> tuple[Path, str]:
    """The own-corpus page run as written (its directory, its output): its `train` makes
    the session's one tiny run, its `export` the session's one SavedModel export."""
    directory = tmp_path_factory.mktemp("own-corpus")
    markdown = read(OWN_CORPUS)
    write_user_files(markdown, directory)
    return directory, PageShell(directory, session=session).run_page(markdown, timeout=900)


@pytest.fixture(scope="module")
def fra_eng(own_corpus_page, tmp_path_factory) -> Path:
    """The own-corpus page's corpus, run and export, the run and export as the other
    pages name them (`runs/fra-eng`, `exports/fra-eng`)."""
    directory = tmp_path_factory.mktemp("fra-eng")
    copy_in(
        own_corpus_page[0],
        directory,
        (own_corpus_file(),) * 2,
        ("runs/my-corpus", "runs/fra-eng"),
        ("exports/my-corpus", "exports/fra-eng"),
    )
    return directory


@pytest.fixture(scope="module")
def served(fra_eng, session):
    """`SERVE` serving the export; the ports it took (page port -> free port)."""
    shell = PageShell(fra_eng, session=session)
    log = fra_eng / "server.log"
    with log.open("w") as output:
        server = subprocess.Popen(
            ["bash", "-c", f"exec {as_run(SERVE, shell.ports)}"],
            cwd=fra_eng,
            env=page_environment(),
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    session.ran.add(command_key(SERVE))
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
    assert shell.page_script(page).splitlines() == [
        "keras-attention serve --port 1 &",
        f"keras-attention-client translate --timeout {WAIT} a",
        "curl localhost:2",
        f'"{sys.executable}" page-block-3.py',
        "kill $!",
        "ls",
    ]
    assert (tmp_path / "page-block-3.py").read_text() == "print('localhost:1')\n"


def test_a_costly_command_runs_once_then_is_parsed():
    session = CommandSession()
    assert session.to_run("keras-attention export runs/a --export-dir e   ")
    assert not session.to_run("keras-attention export runs/a \\\n    --export-dir e &")
    assert not session.to_run("keras-attention check-export e/1 --native")
    with pytest.raises(AssertionError, match="--no-such-flag"):
        session.to_run("keras-attention export runs/a --no-such-flag")
    with pytest.raises(AssertionError, match="invalid positive_int value"):
        session.to_run("keras-attention export runs/a --model-version one")
    assert session.to_run("keras-attention export runs/a --format litert --export-dir l")
    program = "import numpy as np\nfrom x import TranslatorExporter\nTranslatorExporter.go()\n"
    assert session.program(program) == "import numpy as np\nfrom x import TranslatorExporter\n"
    assert CommandSession().program(program) == program


@pytest.mark.slow
def test_the_own_corpus_page_runs_as_written(own_corpus_page):
    directory, out = own_corpus_page
    assert json.loads((directory / "runs/my-corpus/metrics.json").read_text())
    assert (directory / "exports/my-corpus/1/saved_model.pb").is_file()
    assert "serving my-corpus (version 1)" in out


@pytest.mark.slow
def test_the_export_page_runs_as_written(tmp_path, fra_eng, served, session):
    copy_in(fra_eng, tmp_path, *[(name, name) for name in (own_corpus_file(), "runs", "exports")])
    out = PageShell(tmp_path, served, session).run_page(read(EXPORT), timeout=600)
    assert '"error"' not in out and '"outputs"' in out and '"predictions"' in out, out


@pytest.mark.slow
def test_the_serving_page_runs_as_written(tmp_path, served, session):
    out = PageShell(tmp_path, served, session).run_page(read(SERVING), timeout=600)
    assert '"model_version_status"' in out and '"outputs"' in out and '"error"' not in out, out


@pytest.mark.slow
def test_the_client_page_runs_as_written(tmp_path, served, session):
    out = PageShell(tmp_path, served, session).run_page(read(CLIENT), timeout=600)
    assert re.search(r"^\S+ \d+ False$", out, flags=re.M), out  # no TensorFlow imported
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [record["source"] for record in records] == ["I am cold."], out


@pytest.mark.slow
def test_the_on_device_page_runs_as_written(tmp_path, fra_eng, session):
    copy_in(fra_eng, tmp_path, *[(name, name) for name in (own_corpus_file(), "runs", "exports")])
    PageShell(tmp_path, session=session).run_page(read(ON_DEVICE), timeout=600)
    for name in ("fra-eng-litert", "fra-eng-int8"):
        assert (tmp_path / "exports" / name / "greedy.tflite").is_file()
        assert (tmp_path / "exports" / name / "beam.tflite").is_file()
    manifest = json.loads((tmp_path / "exports/fra-eng-int8/litert_manifest.json").read_text())
    assert "int8" in json.dumps(manifest)
