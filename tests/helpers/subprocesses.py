"""Run Python code in a fresh interpreter and see which modules it loaded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository root: the working directory of the child, so it imports this checkout."""


def modules_loaded_by(code: str, timeout: float = 300, top_level: bool = True) -> set[str]:
    """The names in `sys.modules` after `code` ran in a new Python process.

    Only the top-level names (`keras` for `keras.ops`) unless `top_level=False`.

    Raises `AssertionError` with the child's stderr if it fails.
    """
    script = (
        f"{code}\nimport json, sys\n"
        f"top_level = {top_level}\n"
        "names = {name.split('.')[0] if top_level else name for name in sys.modules}\n"
        "print(json.dumps(sorted(names)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=timeout
    )
    if result.returncode != 0:
        raise AssertionError(f"python -c {code!r} failed:\n{result.stderr}")
    return set(json.loads(result.stdout.strip().splitlines()[-1]))
