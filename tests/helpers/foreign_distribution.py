"""A stand-in for the unrelated PyPI project `keras-attention` 1.0.0.

That project also installs a top-level `keras_attention` package (its wheel:
`keras_attention/__init__.py`, `self_attention.py`, `settings.py` and
`keras_attention-1.0.0.dist-info/` with `top_level.txt` and `RECORD`). The
stand-in has the same names and metadata layout, and no code that runs.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

NAME = "keras-attention"
VERSION = "1.0.0"
DIST_INFO = f"keras_attention-{VERSION}.dist-info"
MODULES = {
    "keras_attention/__init__.py": "from keras_attention.self_attention import SelfAttention\n",
    "keras_attention/self_attention.py": "class SelfAttention:\n    pass\n",
}


def metadata_files(top_level: str | None = "keras_attention") -> dict[str, str]:
    """The files of the stand-in's wheel: `MODULES` and its `.dist-info` (RECORD last).

    Args:
        top_level: the content of `top_level.txt`; None leaves the file out (then
            only `RECORD` says which packages the distribution installs).
    """
    files = dict(MODULES)
    files[f"{DIST_INFO}/METADATA"] = f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
    files[f"{DIST_INFO}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    if top_level is not None:
        files[f"{DIST_INFO}/top_level.txt"] = f"{top_level}\n"
    files[f"{DIST_INFO}/RECORD"] = "".join(_record_line(n, t) for n, t in files.items()) + (
        f"{DIST_INFO}/RECORD,,\n"
    )
    return files


def write_dist_info(folder: Path, top_level: str | None = "keras_attention") -> Path:
    """Writes only the stand-in's `.dist-info` into `folder` (as if on `sys.path`); returns it."""
    for name, text in metadata_files(top_level).items():
        if name.startswith(DIST_INFO):
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    return folder / DIST_INFO


def build_wheel(folder: Path) -> Path:
    """Writes the stand-in's wheel, `keras_attention-1.0.0-py3-none-any.whl`, into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"keras_attention-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in metadata_files().items():
            wheel.writestr(name, text)
    return path


def _record_line(name: str, text: str) -> str:
    data = text.encode("utf-8")
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}\n"
