"""Export size, decoding speed and BLEU per `--weights` storage and `--precision`.

Exports one trained run several times, `(precision, weights)` per row, and
loads each version as `tensorflow_model_server` does (tag `serve`, a
`tf.compat.v1.Session`, the SignatureDef's tensor names). Per row, in one
process:

- the bytes of `variables/` on disk, and float32's over them;
- greedy (`serving_default`) and beam (`beam_search`) sentences/s on test
  sentences at each batch size, the best of `--repeats` passes, and the ratio
  to the first row (float32 compute, float32 weights), the rows taking turns
  so that a change of the machine's speed falls on all of them;
- the share of beam translations identical to the first row's;
- with `--bleu`, beam-search BLEU (sacreBLEU, all references) on the whole
  test split, and the difference to the first row.

    python benchmarks/export_weights.py --run-dir RUN [--batch-sizes 1,32] [--bleu]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import harness

harness.quiet_tensorflow()

import numpy as np  # noqa: E402

from keras_attention.evaluation.bleu import score_translations  # noqa: E402
from keras_attention.export import SavedModelSession, TranslatorExporter  # noqa: E402

VARIANTS = (
    ("float32", "float32"),
    ("float32", "bfloat16"),
    ("float32", "int8"),
    ("mixed_bfloat16", "float32"),
    ("mixed_bfloat16", "int8"),
)
"""`(precision, weights)` rows; the first is the baseline."""


def translate(session: SavedModelSession, signature: str, texts: list[str]) -> list[str]:
    batch = np.array([t.encode("utf-8") for t in texts], dtype=object)
    outputs = session.run(signature, {"text": batch}, ["translation"])["translation"]
    return [t.decode("utf-8") for t in outputs.tolist()]


def translate_all(session, signature, texts, batch_size) -> list[str]:
    return [
        t
        for i in range(0, len(texts), batch_size)
        for t in translate(session, signature, texts[i : i + batch_size])
    ]


def one_pass_seconds(session, signature, texts, batch_size) -> float:
    batches = [texts[i : i + batch_size] for i in range(0, len(texts), batch_size)]
    return harness.time_calls(
        lambda: [translate(session, signature, b) for b in batches], 1, warmup=0
    )[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", required=True, help="a trained run directory")
    parser.add_argument("--batch-sizes", default="1,32", help="comma-separated batch sizes")
    parser.add_argument("--sentences", type=int, default=64, help="sentences per timed pass")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes (best is kept)")
    parser.add_argument("--beam-width", type=int, default=4)
    parser.add_argument(
        "--bleu", action="store_true", help="also score beam search on the whole test split"
    )
    args = parser.parse_args(argv)
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    harness.print_machine_header()
    sources, references = harness.test_sources(args.run_dir)
    rng = np.random.default_rng(0)
    timed = [sources[i] for i in rng.choice(len(sources), args.sentences, replace=False)]

    with tempfile.TemporaryDirectory() as scratch:
        sessions, sizes = [], []
        for precision, weights in VARIANTS:
            exported = TranslatorExporter.from_run(
                args.run_dir, beam_width=args.beam_width, precision=precision, weights=weights
            ).export(Path(scratch) / f"{precision}-{weights}")
            sizes.append(harness.variables_bytes(exported.path))
            sessions.append(SavedModelSession(exported.path))
        signatures = ("serving_default", "beam_search")
        best = {
            (row, signature, batch): float("inf")
            for row in range(len(VARIANTS))
            for signature in signatures
            for batch in batch_sizes
        }
        for session in sessions:  # warm up every shape once
            for signature in signatures:
                for batch in batch_sizes:
                    translate(session, signature, timed[:batch])
        for _ in range(args.repeats):
            for row, session in enumerate(sessions):
                for signature in signatures:
                    for batch in batch_sizes:
                        seconds = one_pass_seconds(session, signature, timed, batch)
                        key = (row, signature, batch)
                        best[key] = min(best[key], seconds)
        beams = [
            translate_all(session, "beam_search", timed, max(batch_sizes)) for session in sessions
        ]
        bleu = []
        if args.bleu:
            for session in sessions:
                hypotheses = translate_all(session, "beam_search", sources, 64)
                bleu.append(score_translations(hypotheses, references).bleu)
        for session in sessions:
            session.close()

    columns = [f"{s.split('_')[0]} b{b}" for s in signatures for b in batch_sizes]
    print(
        f"{len(timed)} test sentences per pass, best of {args.repeats}; speeds are "
        f"sentences/s (ratio to the first row); beam width {args.beam_width}"
    )
    print(
        f"{'precision / weights':<26}{'variables':>11}{'x smaller':>10}"
        + "".join(f"{c:>18}" for c in columns)
        + f"{'same beam':>10}"
        + (f"{'beam BLEU':>16}" if bleu else "")
    )
    for row, (precision, weights) in enumerate(VARIANTS):
        cells = ""
        for signature in signatures:
            for batch in batch_sizes:
                speed = len(timed) / best[(row, signature, batch)]
                ratio = best[(0, signature, batch)] / best[(row, signature, batch)]
                cells += f"{speed:>11.1f} ({ratio:.2f}x)"
        same = np.mean([a == b for a, b in zip(beams[row], beams[0], strict=True)])
        line = (
            f"{precision + ' / ' + weights:<26}{sizes[row] / 1e6:>9.2f}MB"
            f"{sizes[0] / sizes[row]:>9.2f}x{cells}{same:>10.1%}"
        )
        if bleu:
            line += f"{bleu[row]:>8.2f} ({bleu[row] - bleu[0]:+.2f})"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
