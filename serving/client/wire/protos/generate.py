"""Regenerates the client's `*_pb2.py` / `*_pb2_grpc.py` from the `.proto` files beside it.

    pip install "grpcio-tools==1.85.1"    # or: pip install -e ".[test]"
    python serving/client/wire/protos/generate.py

Runs `grpc_tools.protoc` on a copy of the `.proto` files laid out as the
installed package (`keras_attention_client/wire/protos/`, so the generated modules
import each other as `keras_attention_client.wire.protos.*`), then points each module
at the private descriptor pool of `_pool.py` instead of protobuf's default one.
`tests/serving/test_protos.py` checks that the checked-in files are what this
script writes.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

PROTOS = Path(__file__).resolve().parent
PACKAGE = "keras_attention_client/wire/protos"
_DEFAULT_POOL = "_descriptor_pool.Default()"


def generate(out_dir: str | os.PathLike = PROTOS) -> list[Path]:
    """Writes the generated modules into `out_dir`; returns their paths, sorted."""
    import grpc_tools
    from grpc_tools import protoc

    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / "src"
        (staged / PACKAGE).mkdir(parents=True)
        for proto in PROTOS.glob("*.proto"):
            shutil.copyfile(proto, staged / PACKAGE / proto.name)
        sources = sorted(f"{PACKAGE}/{p.name}" for p in PROTOS.glob("*.proto"))
        args = ["protoc", f"-I{staged}", f"-I{include}", f"--python_out={tmp}"]
        args += [f"--grpc_python_out={tmp}", *sources]
        cwd = os.getcwd()
        os.chdir(staged)
        try:
            status = protoc.main(args)
        finally:
            os.chdir(cwd)
        if status != 0:
            raise RuntimeError(f"protoc failed with status {status}: {' '.join(args)}")
        written = []
        for path in sorted((Path(tmp) / PACKAGE).glob("*.py")):
            text = path.read_text()
            if path.name.endswith("_pb2_grpc.py") and "Stub" not in text:
                continue  # a file without a service
            if path.name.endswith("_pb2.py"):
                if _DEFAULT_POOL not in text:
                    raise RuntimeError(f"Unexpected protoc output in {path.name}")
                text = text.replace(_DEFAULT_POOL, "_pool.POOL")
                text = re.sub(
                    r"(# @@protoc_insertion_point\(imports\)\n)",
                    r"\1\nfrom keras_attention_client.wire.protos import _pool\n",
                    text,
                    count=1,
                )
            target = Path(out_dir) / path.name
            target.write_text(text)
            written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(PROTOS), help="output directory (default: here)")
    args = parser.parse_args(argv)
    for path in generate(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
