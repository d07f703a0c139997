"""Training processes on localhost for distributed-training tests.

Free ports on 127.0.0.1, `CUDA_VISIBLE_DEVICES=""`, a bounded wait, and every
child killed at the end (`Workers` is a context manager).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def free_ports(count: int) -> list[int]:
    sockets = []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def worker_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("TF_CONFIG", None)
    env.update(
        CUDA_VISIBLE_DEVICES="",
        KERAS_BACKEND="tensorflow",
        TF_CPP_MIN_LOG_LEVEL="2",
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "tests"), env.get("PYTHONPATH", "")]),
    )
    env.update(extra)
    return env


def tf_config(hosts: list[str], index: int) -> str:
    return json.dumps({"cluster": {"worker": hosts}, "task": {"type": "worker", "index": index}})


def train_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "keras_attention.cli", "train", *args]


class Workers:
    """Processes started together, their output in `log_dir`, all killed on exit."""

    def __init__(self, log_dir: Path):
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.processes: list[subprocess.Popen] = []
        self.logs: list[Path] = []

    def start(self, argv: list[str], env: dict[str, str], name: str) -> subprocess.Popen:
        log = self.log_dir / f"{name}.log"
        with open(log, "w") as f:
            process = subprocess.Popen(
                argv, env=env, stdout=f, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True
            )
        self.processes.append(process)
        self.logs.append(log)
        return process

    def wait(self, timeout: float) -> list[int | None]:
        """Exit codes, `None` for a process still running after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(p.poll() is None for p in self.processes):
            time.sleep(0.2)
        return [p.poll() for p in self.processes]

    def output(self, index: int) -> str:
        return self.logs[index].read_text(errors="replace")

    def outputs(self) -> str:
        return "\n".join(
            f"----- {log.name}\n{log.read_text(errors='replace')[-3000:]}" for log in self.logs
        )

    def kill_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc) -> None:
        self.kill_all()


def start_cluster(
    workers: Workers, argv: list[str], count: int = 2, use_tf_config: bool = True, **env: str
) -> list[str]:
    """Starts `count` workers of `argv` (a train command) on free localhost ports."""
    hosts = [f"127.0.0.1:{port}" for port in free_ports(count)]
    for index in range(count):
        if use_tf_config:
            command = [*argv, "--distribute", "multi-worker"]
            extra = {"TF_CONFIG": tf_config(hosts, index)}
        else:
            command = [
                *argv,
                "--distribute",
                "multi-worker",
                "--worker-hosts",
                ",".join(hosts),
                "--task-index",
                str(index),
            ]
            extra = {}
        workers.start(command, worker_env(**extra, **env), f"worker{index}")
    return hosts
