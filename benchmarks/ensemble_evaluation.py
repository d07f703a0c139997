"""BLEU and evaluation time of ensembles of 1, 2, ... N runs against the first run alone.

    python benchmarks/ensemble_evaluation.py RUN1 RUN2 [RUN3 ...] [--name NAME]

For k = 1 .. N, runs `keras-attention evaluate RUN1 .. RUNk --no-replace-unknown` (the
ensemble of the first k runs, `load_ensemble`, on RUN1's test split; k = 1 is RUN1 alone)
and records its greedy and beam BLEU and chrF and its wall time (loading the models,
then greedy and beam-4 decoding of the whole test split at batch 64, on this machine), in
`benchmarks/results/ensembles.json` under `runs.NAME`. The runs must have the same
vocabularies (trained on the same data with the same seed and vocabulary settings;
their `--init-seed` may differ).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import harness

RESULTS = Path(__file__).resolve().parent / "results" / "ensembles.json"


def evaluate(runs: list[str]) -> dict:
    """One `keras-attention evaluate` of `runs`' ensemble (or the one run): its scores from
    the first run's metrics.json, and its wall seconds."""
    start = time.perf_counter()
    subprocess.run(["keras-attention", "evaluate", *runs, "--no-replace-unknown"], check=True)
    seconds = time.perf_counter() - start
    metrics = json.loads((Path(runs[0]) / "metrics.json").read_text(encoding="utf-8"))
    evaluation = metrics["evaluation"]
    if len(runs) > 1:
        evaluation = metrics["ensemble_evaluations"][" ".join(runs)]
    return {
        "runs": runs,
        "sentences": evaluation["sentences"],
        "replace_unknown": evaluation["replace_unknown"],
        **{
            name: {"bleu": evaluation[name]["bleu"], "chrf": evaluation[name]["chrf"]}
            for name in ("greedy", "beam")
        },
        "evaluate_seconds": round(seconds, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("runs", nargs="+", metavar="RUN", help="trained run directories")
    parser.add_argument(
        "--name", type=harness.record_name, default="recipe_runs", help="the record runs.NAME"
    )
    args = parser.parse_args(argv)
    machine = harness.print_machine_header()
    rows = []
    for size in range(1, len(args.runs) + 1):
        row = evaluate(args.runs[:size])
        rows.append(row)
        print(
            f"{size} model(s): BLEU greedy {row['greedy']['bleu']:.2f} beam "
            f"{row['beam']['bleu']:.2f}, evaluate {row['evaluate_seconds']:.0f} s "
            f"({row['evaluate_seconds'] / rows[0]['evaluate_seconds']:.2f}x one model)",
            flush=True,
        )
    harness.write_record(RESULTS, "runs", args.name, {"ensembles": rows, "machine": machine})
    print(f"wrote {RESULTS} (runs.{args.name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
