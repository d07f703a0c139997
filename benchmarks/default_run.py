"""Records a trained and evaluated default run in benchmarks/results/default_run.json.

    keras-attention train && keras-attention evaluate runs/fra-eng
    python benchmarks/default_run.py --run-dir runs/fra-eng

reads the run directory's `config.json` and `metrics.json` (the `training` and
`evaluation` sections that `train` and `evaluate` wrote) and writes them, with
the machine's provenance (`harness.machine_info()`: date, commit, CPU model and
flags) and the run's precision, as the record `runs.<kind>` of the results file:
`native_bf16` or `no_native_bf16`, from the CPU's flags and `ONEDNN_MAX_CPU_ISA`
(a cap below AVX512_CORE_BF16 means no native bfloat16), unless `--kind` names
the record (e.g. `native_bf16_earlier_split`, the default recipe trained on another
split with `--data`, `--validation-data` and `--test-data`; give `--command` then).
`--replaced-metrics` adds a second evaluation of the same run, with unknown-word
replacement, as `evaluation_replaced`.
Run it from the checkout that trained the run, right after `evaluate`. The
README's and the docs' default-run figures are rendered from this file
(`python docs/gen_readme_figures.py`, and the docs build).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path

import harness

from keras_attention.precision import onednn_cap_without_bf16

RESULTS = Path(__file__).resolve().parent / "results" / "default_run.json"
RUN_COMMAND = "keras-attention train && keras-attention evaluate runs/fra-eng"
CONFIG_FIELDS = (
    "precision",
    "tokenizer",
    "source_vocabulary_size",
    "target_vocabulary_size",
    "epochs",
    "steps_per_epoch",
    "batch_size",
    "time_budget_minutes",
)
NATIVE_BF16_FLAGS = {"AVX512_BF16", "AMX_BF16"}


def validation_losses(history: Path) -> list[float]:
    """The `val_loss` column of the run's `history.csv` (one row per epoch), rounded."""
    if not history.is_file():
        return []
    with history.open(encoding="utf-8", newline="") as file:
        return [
            round(float(row["val_loss"]), 4) for row in csv.DictReader(file) if row.get("val_loss")
        ]


def record_name(name: str) -> str:
    """`--kind`: a record name of lowercase letters, digits and underscores."""
    if not re.fullmatch(r"[a-z0-9_]+", name):
        raise argparse.ArgumentTypeError(
            f"a record name is lowercase letters, digits and underscores. Received: {name!r}"
        )
    return name


def read_metrics(path: Path) -> tuple[dict, dict]:
    """The `training` and `evaluation` sections of a run's metrics.json at `path`."""
    metrics = json.loads(path.read_text(encoding="utf-8"))
    training, evaluation = metrics.get("training"), metrics.get("evaluation")
    if not training or not evaluation:
        raise ValueError(
            f"{path} needs `training` and `evaluation` sections: run "
            f"`keras-attention train` and `keras-attention evaluate`. Received: {sorted(metrics)}"
        )
    return training, evaluation


def evaluation_record(evaluation: dict) -> dict:
    """What a record keeps of an `evaluation` section."""
    kept = ("sentences", "greedy", "beam", "epochs", "training_state", "replace_unknown")
    return {key: value for key, value in evaluation.items() if key in kept}


def record(run_dir: Path, machine: dict, replaced: Path | None = None) -> dict:
    """The `runs.<kind>` record of a trained and evaluated run directory.

    `replaced`: a copy of the run's metrics.json from an `evaluate` with unknown-word
    replacement, recorded as `evaluation_replaced` beside `evaluation` (the run
    directory's own metrics.json, e.g. from `evaluate --no-replace-unknown`).
    """
    config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    training, evaluation = read_metrics(run_dir / "metrics.json")
    steps = training["epochs_run"] * config["steps_per_epoch"]
    plan_file = run_dir / "plan.json"
    plan = json.loads(plan_file.read_text(encoding="utf-8")) if plan_file.is_file() else None
    if plan and not training.get("stopped_by"):  # ended where its budget plan did
        steps = plan["planned_steps"]
    summary = {
        "seconds": training["seconds"],
        "epochs_run": training["epochs_run"],
        "steps": steps,
        "seconds_per_step": round(training["seconds"] / steps, 4),
        "parameters": training["parameters"],
        "best_val_loss": training.get("best_val_loss"),
        "stopped_by": training.get("stopped_by"),
        "val_loss_by_epoch": validation_losses(run_dir / "history.csv"),
        "plan": plan,
    }
    result = {
        "config": {name: config.get(name) for name in CONFIG_FIELDS},
        "training": summary,
        "evaluation": evaluation_record(evaluation),
        "machine": {**machine, "precision": config.get("precision")},
    }
    if replaced is not None:
        other = evaluation_record(read_metrics(replaced)[1])
        if other.get("replace_unknown") is not True:
            raise ValueError(f"{replaced}: its evaluation did not replace unknown words")
        result["evaluation_replaced"] = other
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--run-dir", type=Path, default=Path("runs/fra-eng"))
    parser.add_argument(
        "--kind",
        type=record_name,
        help="the record to write: native_bf16, no_native_bf16, or another name of lowercase "
        "letters, digits and underscores for a run beside the default's, e.g. "
        "native_bf16_earlier_split (default: native_bf16 or no_native_bf16 from the CPU's flags)",
    )
    parser.add_argument("--command", default=RUN_COMMAND, help="the command that made the run")
    parser.add_argument(
        "--commit",
        help="the code version that trained the run, where it is not the checkout's "
        "(default: the checkout's HEAD)",
    )
    parser.add_argument(
        "--replaced-metrics",
        type=Path,
        help="a copy of the run's metrics.json from an evaluate with unknown-word replacement "
        "(the default), recorded as evaluation_replaced beside the run directory's own "
        "(e.g. from evaluate --no-replace-unknown) (default: none)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    machine = harness.print_machine_header()
    machine["command"] = args.command
    if args.commit:
        machine["commit"] = args.commit
    native = NATIVE_BF16_FLAGS & set(machine["cpu_flags"]) and not onednn_cap_without_bf16(
        machine["onednn_max_cpu_isa"]
    )
    kind = args.kind or ("native_bf16" if native else "no_native_bf16")
    results = json.loads(args.out.read_text(encoding="utf-8")) if args.out.is_file() else {}
    results.setdefault("runs", {})[kind] = record(args.run_dir, machine, args.replaced_metrics)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"{args.out}: runs.{kind} from {args.run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
