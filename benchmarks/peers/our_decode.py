"""Our side of the decoding race: the default export on TF Serving's loading path.

    python our_decode.py RUN_DIR WORK --out RESULT.json

Exports the run as `keras-attention export RUN_DIR --export-dir WORK/export`
does with no flag (`--no-check` only), loads the version as
`tensorflow_model_server` loads it (tag `serve` in a `tf.compat.v1.Session`,
`SavedModelSession`) and runs its `beam_search` signature (beam width 4): all
of `WORK/test.src` at batch 64 (the hypotheses, scored by `run.py`), then the
sentences of `WORK/speed_sample.json` at batch 1 and 64, timing the Session
calls only, after a warm-up call. Target tokens are counted as for OpenNMT-py
(`peer_config.words`).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: harness

import harness  # noqa: E402

harness.quiet_tensorflow()

import numpy as np  # noqa: E402
import peer_config  # noqa: E402

from keras_attention.export import SavedModelSession  # noqa: E402
from keras_attention.export import cli as export_cli  # noqa: E402

SIGNATURE = "beam_search"


def default_export(run_dir: Path, base: Path) -> tuple[Path, dict]:
    """`keras-attention export RUN_DIR --export-dir BASE --no-check`: the version and its
    manifest."""
    parser = argparse.ArgumentParser(prog="keras-attention export")
    export_cli.add_export_arguments(parser)
    args = parser.parse_args([str(run_dir), "--export-dir", str(base), "--no-check"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = export_cli.run_export(args)
    if code != 0:
        raise RuntimeError(f"keras-attention export failed: {out.getvalue()}")
    version = max((p for p in base.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    manifest = json.loads(
        (version / "assets.extra" / "export_manifest.json").read_text(encoding="utf-8")
    )
    return version, manifest


def translate(session: SavedModelSession, texts: list[str], batch_size: int):
    """Translations of `texts` in batches of `batch_size`, and the seconds of the calls."""
    outputs, seconds = [], 0.0
    for start in range(0, len(texts), batch_size):
        batch = np.array([t.encode("utf-8") for t in texts[start : start + batch_size]], object)
        started = time.perf_counter()
        result = session.run(SIGNATURE, {"text": batch}, ["translation"])["translation"]
        seconds += time.perf_counter() - started
        outputs += [t.decode("utf-8") for t in result.tolist()]
    return outputs, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("work", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    version, manifest = default_export(args.run_dir, args.work / "export")
    export_seconds = time.perf_counter() - started
    session = SavedModelSession(version)
    sources = (args.work / "test.src").read_text(encoding="utf-8").splitlines()
    translate(session, sources[:64], 64)  # warm-up
    hypotheses, seconds = translate(session, sources, 64)
    result = {
        "export": {
            "signature": SIGNATURE,
            "precision": manifest.get("precision"),
            "weights": manifest.get("weights"),
            "shortlist": manifest.get("shortlist"),
            "signatures": sorted(manifest.get("signatures") or {}),
            "seconds": export_seconds,
        },
        "threads": {
            "cpu_count": os.cpu_count(),
            "TF_NUM_INTRAOP_THREADS": os.environ.get("TF_NUM_INTRAOP_THREADS"),
            "TF_NUM_INTEROP_THREADS": os.environ.get("TF_NUM_INTEROP_THREADS"),
        },
        "hypotheses": hypotheses,
        "test_seconds": seconds,
        "decoding": peer_config.decoding_speeds(
            lambda sentences, batch_size: translate(session, sentences, batch_size),
            json.loads((args.work / "speed_sample.json").read_text(encoding="utf-8")),
        ),
    }
    session.close()
    args.out.write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
