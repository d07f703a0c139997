"""`AllowedOps`: the ops a TensorFlow Serving build can run.

TF Serving links core TensorFlow and tensorflow-text's op library, nothing
else. The core set is what a Python process registers after importing only
`tensorflow`; the tf-text set is what importing `tensorflow_text` adds. Both
are read in a fresh subprocess (this process may have imported other op
libraries) from the C API's op registry.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

_LIST_OPS = """
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
from tensorflow.core.framework import op_def_pb2
from tensorflow.python.client import pywrap_tf_session as c_api
import tensorflow as tf

def registered():
    buffer = c_api.TF_GetAllOpList()
    try:
        ops = op_def_pb2.OpList.FromString(c_api.TF_GetBuffer(buffer))
    finally:
        c_api.TF_DeleteBuffer(buffer)
    return {op.name for op in ops.op}

core = registered()
import tensorflow_text
text = registered() - core
print(json.dumps({"tensorflow": tf.__version__, "tensorflow_text": tensorflow_text.__version__,
                  "core": sorted(core), "tf_text": sorted(text)}))
"""


@dataclasses.dataclass(frozen=True)
class AllowedOps:
    """The op names an export may use.

    Attributes:
        core: ops of core TensorFlow.
        tf_text: ops added by tensorflow-text's op library.
        source: where the sets came from (versions, or a file).
    """

    core: frozenset[str]
    tf_text: frozenset[str]
    source: str

    @property
    def all(self) -> frozenset[str]:
        return self.core | self.tf_text

    def origin(self, op: str) -> str | None:
        """`"core"`, `"tf-text"` or `None` (not allowed)."""
        if op in self.core:
            return "core"
        if op in self.tf_text:
            return "tf-text"
        return None

    @classmethod
    def from_registry(cls) -> AllowedOps:
        """Core and tf-text ops as registered by a fresh Python process (cached)."""
        return _from_registry()

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> AllowedOps:
        """Ops from a text file, one op name a line (`#` comments allowed).

        Use it to check against the op list of the exact TF Serving build you
        deploy to. Every op of the file counts as core.
        """
        names = set()
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            name = line.split("#", 1)[0].strip()
            if name:
                names.add(name)
        if not names:
            raise ValueError(f"No op names in {str(path)!r}")
        return cls(core=frozenset(names), tf_text=frozenset(), source=f"file {path}")


@functools.lru_cache(maxsize=1)
def _from_registry() -> AllowedOps:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    completed = subprocess.run(
        [sys.executable, "-c", _LIST_OPS],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(
            "Could not list TensorFlow's registered ops in a subprocess: "
            + completed.stderr.strip()[-2000:]
        )
    listing = json.loads(completed.stdout.strip().splitlines()[-1])
    return AllowedOps(
        core=frozenset(listing["core"]),
        tf_text=frozenset(listing["tf_text"]),
        source=(
            f"ops registered by tensorflow {listing['tensorflow']} "
            f"and tensorflow-text {listing['tensorflow_text']}"
        ),
    )
