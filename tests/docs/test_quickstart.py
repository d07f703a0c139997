"""The Quickstart page's commands, run as written in a fresh directory, with a tiny
training budget: train, evaluate, translate, export, serve, the client from Python and
from the shell.

The page's code blocks are read from docs/quickstart.md and run by bash. Three things
are changed, and only these: each `keras-attention train` gets flags that make it tiny
(`TINY`); the ports 8500 and 8501 become free ones (other servers may hold them); and a
client waits up to `WAIT` seconds for the server to be ready instead of its default 30
(on a loaded 2-core machine, loading TensorFlow and the export took longer than that).
`tensorboard` (a server that runs until stopped) is left out, and a server still running
when a script fails is stopped. About 5-8 minutes on 2 CPU cores.
"""

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.docs_site import REPOSITORY

pytestmark = pytest.mark.slow

PAGE = REPOSITORY / "docs" / "quickstart.md"
TINY = (
    "--max-pairs 3000 --sample-pairs 3000 --epochs 1 --steps-per-epoch 20 --batch-size 16 "
    "--embedding-dim 32 --encoder-units 32 --decoder-units 64 "
    "--source-vocabulary-size 2000 --target-vocabulary-size 2000"
)
LEFT_OUT = ("tensorboard ",)
WAIT = 300
STOP_SERVERS = "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT"


def sections(markdown: str) -> dict[str, str]:
    """`## heading` (the first one: "") -> its text."""
    found, heading, lines = {}, "", []
    for line in markdown.splitlines():
        if line.startswith("## "):
            found[heading] = "\n".join(lines)
            heading, lines = line[3:].strip(), []
        else:
            lines.append(line)
    found[heading] = "\n".join(lines)
    return found


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def as_run(script: str, ports: dict[str, str]) -> str:
    lines = [line for line in script.splitlines() if not line.startswith(LEFT_OUT)]
    script = "\n".join(lines)
    script = re.sub(
        r"^keras-attention train\b", f"keras-attention train {TINY}", script, flags=re.M
    )
    script = re.sub(r"\btranslate --server\b", f"translate --timeout {WAIT} --server", script)
    for port, free in ports.items():
        script = script.replace(port, free)
    return script


def test_sections_hold_the_commands_this_test_runs():
    page = sections(PAGE.read_text(encoding="utf-8"))
    first = blocks(page[""], "bash")[0]
    for command in ("train", "evaluate", "translate", "export", "serve"):
        assert re.search(rf"^keras-attention {command}\b", first, flags=re.M), command
    assert "kill $!" in first
    assert blocks(page["Calling the served model"], "python")
    assert re.search(
        r"Start the server again \(`keras-attention serve", page["Calling the served model"]
    )


def test_the_quickstart_runs_as_written(tmp_path):
    page = sections(PAGE.read_text(encoding="utf-8"))
    ports = {"8500": str(free_port()), "8501": str(free_port())}
    environment = dict(os.environ)
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment['PATH']}"
    environment.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    def bash(script: str, timeout: float) -> str:
        result = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", f"{STOP_SERVERS}\n{script}"],
            cwd=tmp_path,
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert result.returncode == 0, (
            f"quickstart commands failed ({result.returncode}):\n{script}\n"
            f"--- stdout\n{result.stdout[-4000:]}\n--- stderr\n{result.stderr[-6000:]}"
        )
        return result.stdout

    first = as_run(blocks(page[""], "bash")[0], ports)
    out = bash(first, timeout=900)
    assert (tmp_path / "runs/fra-eng/model.keras").is_file()
    assert (tmp_path / "exports/fra-eng/1/saved_model.pb").is_file()
    assert "serving fra-eng (version 1)" in out

    more = as_run(blocks(page["More from the trained run"], "bash")[0], ports)
    bash(more, timeout=600)
    assert list((tmp_path / "runs/fra-eng/plots").glob("*.png"))

    served = page["Calling the served model"]
    start = " ".join(re.search(r"Start the server again \(`(.*?)`\)", served, re.DOTALL)[1].split())
    client = tmp_path / "client.py"
    client.write_text(as_run(blocks(served, "python")[0], ports))
    shell = as_run(blocks(served, "bash")[0], ports)
    script = "\n".join(
        [
            as_run(start, ports),
            shell,  # its first command waits for the server to be ready
            f"{sys.executable} client.py",
            "kill $!",
        ]
    )
    out = bash(script, timeout=600)
    # The ready line, a line per sentence from the two shell clients and the three
    # sentences of the Python block (a tiny model may translate to an empty line).
    lines = out.splitlines()
    assert lines[0].startswith("keras-attention serve: serving fra-eng (version 1)")
    assert len(lines) == 1 + 2 + 3, out
