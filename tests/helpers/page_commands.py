"""A documentation page's commands, read from its Markdown and run as written, tiny.

A page's fenced ```bash blocks are commands and its ```python blocks are programs, all
meant to be run: output shown on a page is a comment inside a command block or a block
fenced as ```text (a fence with no language is not run either). So a changed page is a
changed test.

What a test changes in a page's commands, and only this (`as_run`):

- `TINY`: each `keras-attention train` gets flags that make it tiny (about 3,000 pairs,
  20 steps, small layers and vocabularies), inserted after `train`, so that the page's own
  flags (`--data`, `--out`, ...) still win.
- Ports: 8500 and 8501 become free ones (other servers may hold them), in commands and
  in Python blocks alike.
- `WAIT`: a client waits up to `WAIT` seconds for a server to become ready instead of
  its default 30 (`--timeout`; on a loaded 2-core machine, loading TensorFlow and an
  export took longer than that).
- `LEFT_OUT`: commands that cannot run in a test, each with its reason.
- A user's own files: a page that uses one by name gets it, written by the test (a
  corpus from the bundled one, `write_corpus`; a file of sentences).

How a page runs as one script (`PageShell.run_page`): its blocks in page order, bash's
`-euo pipefail`; `kill $!` runs after the page's last block that calls a server, so a
server the page starts serves all of them; a page that calls a server it does not start
is given one by the test (the Quickstart's `SERVE`). A server still running when the
script ends is stopped.

What a `CommandSession` (the pages of one test module) runs once:

- A command run before in the session runs once (a page repeats its summary block
  section by section, and pages share commands), flags compared in any order.
- `COSTLY`: a SavedModel export with its check took about 80 CPU-seconds of a tiny
  run, a `check-export` 30 to 45 (tracing, then each signature's first run on two
  loaders). The session's first such command runs; each later one is parsed by
  `keras-attention`'s own parser, so that a flag that does not exist or a value of the
  wrong type still fails. A Python block that
  exports (`TranslatorExporter`, `export_translator`) then runs its imports only.
  Exporting and checking themselves are tested in tests/export; `keras-attention export`
  checks what it writes as `check-export --native` does.
"""

from __future__ import annotations

import ast
import contextlib
import gzip
import io
import os
import re
import shlex
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from helpers.docs_site import REPOSITORY

DOCS = REPOSITORY / "docs"
TINY = (
    "--max-pairs 3000 --sample-pairs 3000 --epochs 1 --steps-per-epoch 20 --batch-size 16 "
    "--embedding-dim 32 --encoder-units 32 --decoder-units 64 "
    "--source-vocabulary-size 2000 --target-vocabulary-size 2000"
)
WAIT = 300
PORTS = ("8500", "8501")
SERVE = (
    "keras-attention serve --model-name fra-eng --model-base-path exports/fra-eng "
    "--port 8500 --rest-api-port 8501"
)
"""The Quickstart's server ("Start the server again"), for pages that call one."""

LEFT_OUT = {
    "pip install": "installs into the environment the tests run in, which CI installed "
    "from this clone with the same extras",
    "docker": "no container engine in CI",
    "kubectl": "no Kubernetes cluster in CI",
    "tensorflow_model_server": "TF Serving's binary is not on PyPI or Debian",
    "tensorboard": "a server that runs until stopped",
}
_LEFT_OUT = re.compile(rf"^(?:\w+=\S*\s+)*(?:{'|'.join(map(re.escape, LEFT_OUT))})\b")
_CALLS_A_SERVER = re.compile(r"localhost:85\d\d|--server\b|Client\(|keras-attention-client ")
_STARTS_A_SERVER = re.compile(r"^keras-attention serve\b.*&$", re.DOTALL)
COSTLY = re.compile(
    r"^keras-attention (?:export|check-export)\b(?!.*--(?:format litert|saved-model))", re.DOTALL
)
_COSTLY_PYTHON = re.compile(r"\b(?:TranslatorExporter|export_translator)\b")
_STOP_SERVERS = "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT"


def sections(markdown: str) -> dict[str, str]:
    """`## heading` (the text before the first one: "") -> its text."""
    found, heading, lines = {}, "", []
    for line in markdown.splitlines():
        if line.startswith("## "):
            found[heading] = "\n".join(lines)
            heading, lines = line[3:].strip(), []
        else:
            lines.append(line)
    found[heading] = "\n".join(lines)
    return found


def fenced_blocks(markdown: str) -> list[tuple[str, str]]:
    """Every fenced block, `(language, text)` in page order ("" for no language)."""
    found = re.findall(r"^```(\w*)\n(.*?)^```", markdown, flags=re.DOTALL | re.MULTILINE)
    return [(language.lower(), text) for language, text in found]


def blocks(markdown: str, language: str) -> list[str]:
    return [text for found, text in fenced_blocks(markdown) if found == language]


def commands(script: str) -> list[str]:
    """A bash block's commands, comments dropped: a command ends at a newline that is
    outside quotes and not escaped, so `\\` continuations and quoted newlines stay in."""
    found, current, quote, escaped, comment = [], [], None, False, False
    for position, char in enumerate(script + "\n"):
        if comment:
            comment = char != "\n"
            if comment:
                continue
        if quote == "'":
            quote = None if char == "'" else quote
        elif escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif quote == '"':
            quote = None if char == '"' else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (position == 0 or script[position - 1].isspace()):
            comment = True
            continue
        elif char == "\n":
            found.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    return [command for command in found if command]


def left_out(command: str) -> str | None:
    """Why `command` is not run in a test (`LEFT_OUT`), or None."""
    match = _LEFT_OUT.match(command)
    if match is None:
        return None
    return next(reason for start, reason in LEFT_OUT.items() if start in match[0])


def as_run(text: str, ports: dict[str, str]) -> str:
    """`text`, one bash command or a Python block, with the test's changes (module doc)."""
    text = re.sub(r"^keras-attention train\b", f"keras-attention train {TINY}", text)
    client = r"\bkeras-attention-client translate\b"
    if "--server" in text:
        client += r"|\bkeras-attention translate\b"
    text = re.sub(client, rf"\g<0> --timeout {WAIT}", text)
    for port, free in ports.items():
        text = re.sub(rf"\b{port}\b", free, text)
    return text


def command_key(command: str) -> tuple:
    """`command` for comparison: its words, each option with its value in any order."""
    words = shlex.split(command.replace("\\\n", " ").strip().removesuffix("&"))
    head, options = [], []
    for word in words:
        if word.startswith("--"):
            options.append((word,))
        elif options and len(options[-1]) == 1:
            options[-1] += (word,)
        elif options:
            options.append((word,))
        else:
            head.append(word)
    return tuple(head), tuple(sorted(options))


def parse_only(command: str) -> None:
    """Parses a `keras-attention` command as the command does, without running it."""
    from keras_attention.cli.parser import build_parser

    errors = io.StringIO()
    with contextlib.redirect_stderr(errors):
        try:
            build_parser().parse_args(shlex.split(command.replace("\\\n", " "))[1:])
        except SystemExit as error:
            raise AssertionError(f"{command}\n{errors.getvalue()}") from error


def imports_only(program: str) -> str:
    """The import statements of a Python block."""
    found = [
        node for node in ast.parse(program).body if isinstance(node, (ast.Import, ast.ImportFrom))
    ]
    return "\n".join(ast.unparse(node) for node in found) + "\n"


def block_as_run(block: str, ports: dict[str, str]) -> str:
    """A bash block's commands as run, those in `LEFT_OUT` left out."""
    return "\n".join(as_run(command, ports) for command in commands(block) if not left_out(command))


def free_ports() -> dict[str, str]:
    """The pages' ports (`PORTS`) -> free ones."""
    found = {}
    for port in PORTS:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            found[port] = str(probe.getsockname()[1])
    return found


def write_corpus(path: Path, pairs: int = 3000) -> Path:
    """A `source<TAB>target` corpus of `pairs` lines, every k-th of the bundled one."""
    with gzip.open(REPOSITORY / "keras_attention/data/fra-eng.tsv.gz", "rt", encoding="utf-8") as f:
        lines = f.read().splitlines()
    step = len(lines) // pairs
    path.write_text("\n".join(lines[::step][:pairs]) + "\n", encoding="utf-8")
    return path


def write_user_files(markdown: str, directory: Path) -> list[Path]:
    """The files of a user's own that the page's commands name, written into `directory`:
    each `--data FILE` a corpus (`write_corpus`), each `--file FILE` three sentences."""
    script = "\n".join(blocks(markdown, "bash"))
    written = [
        write_corpus(directory / name)
        for name in set(re.findall(r"--data (\S+\.tsv)(?=\s|$)", script))
    ]
    for name in set(re.findall(r"--file (\S+)", script)):
        written.append(directory / name)
        written[-1].write_text("How are you?\nI am cold.\nGood night.\n", encoding="utf-8")
    return written


def page_environment() -> dict[str, str]:
    """The tests' environment, with this interpreter's `bin` first on `PATH`."""
    environment = dict(os.environ)
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment['PATH']}"
    environment.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return environment


@dataclass
class CommandSession:
    """What the pages of one session ran: the commands (`command_key`), and whether a
    `COSTLY` command ran."""

    ran: set = field(default_factory=set)
    costly_ran: bool = False

    def to_run(self, command: str) -> bool:
        """Whether `command` runs: new in the session, not `LEFT_OUT`, and not a `COSTLY`
        one after the first (which is parsed instead). Records it."""
        key = command_key(command)
        if key in self.ran or left_out(command):
            return False
        self.ran.add(key)
        if COSTLY.match(command):
            if self.costly_ran:
                parse_only(command)
                return False
            self.costly_ran = True
        return True

    def program(self, block: str) -> str:
        """A Python block as it runs: its imports only if it exports after a `COSTLY` run."""
        return imports_only(block) if self.costly_ran and _COSTLY_PYTHON.search(block) else block


@dataclass
class PageShell:
    """Runs a page's commands with bash in `directory`, with the test's ports."""

    directory: Path
    ports: dict[str, str] = field(default_factory=free_ports)
    session: CommandSession = field(default_factory=CommandSession)

    def bash(self, script: str, timeout: float) -> str:
        """Runs `script` (already as run); its stdout. Fails with its output on an error."""
        result = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", f"{_STOP_SERVERS}\n{script}"],
            cwd=self.directory,
            env=page_environment(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert result.returncode == 0, (
            f"page commands failed ({result.returncode}):\n{script}\n"
            f"--- stdout\n{result.stdout[-4000:]}\n--- stderr\n{result.stderr[-6000:]}"
        )
        return result.stdout

    def page_script(self, markdown: str) -> str:
        """The page's blocks as one script (module doc); Python blocks are written to
        files in `directory`."""
        parts, serving, last_call = [], False, -1
        for number, (language, text) in enumerate(fenced_blocks(markdown)):
            if language == "python":
                program = self.directory / f"page-block-{number}.py"
                program.write_text(as_run(self.session.program(text), self.ports), encoding="utf-8")
                part = [f'"{sys.executable}" {program.name}']
            elif language == "bash":
                part = []
                for command in commands(text):
                    if " ".join(command.split()) == "kill $!" or not self.session.to_run(command):
                        continue
                    serving = serving or bool(_STARTS_A_SERVER.match(command))
                    part.append(as_run(command, self.ports))
            else:
                continue
            if part and _CALLS_A_SERVER.search(text):
                last_call = len(parts)
            parts.append("\n".join(part))
        if serving and last_call >= 0:
            parts.insert(last_call + 1, "kill $!")
        return "\n".join(part for part in parts if part)

    def run_page(self, markdown: str, timeout: float) -> str:
        """Runs `page_script(markdown)`; its stdout."""
        return self.bash(self.page_script(markdown), timeout)
