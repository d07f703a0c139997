"""Records runs of the default recipe in benchmarks/results/default_run.json.

    python benchmarks/default_run.py --quickstart [--workdir DIR]

makes the record that the README's and the Quickstart's tables show,
`quickstart.<kind>` (`native_bf16` or `no_native_bf16`, from the CPU's flags and
`ONEDNN_MAX_CPU_ISA`: a cap below AVX512_CORE_BF16 means no native bfloat16). It
clones this checkout's HEAD into DIR (default: a new temporary directory; a DIR that
holds a clone is used as it is), runs README's Quickstart command there exactly as
printed (`quickstart_command()`: a virtual environment, the install, `keras-attention
train`, `keras-attention evaluate runs/fra-eng`), then `keras-attention evaluate
runs/fra-eng --no-replace-unknown` and `keras-attention export runs/fra-eng
--export-dir exports/fra-eng`, and records the run with both evaluations and the
export's weights, shortlist and size. The record's `machine.command` is the
Quickstart command; tests/docs/test_result_labels.py fails when a table labelled as
that command's result reads another record.

    keras-attention train --data ... --out RUN && keras-attention evaluate RUN
    python benchmarks/default_run.py --run-dir RUN --kind NAME --command "..."

records a run made another way (other options, another split, an earlier code
version) as `runs.NAME`: the run directory's `config.json` and `metrics.json` (the
`training` and `evaluation` sections that `train` and `evaluate` wrote), with the
machine's provenance (`harness.machine_info()`: date, commit, CPU model and flags),
the run's precision and the command that made it. `--replaced-metrics` adds a second
evaluation of the same run, with unknown-word replacement, as `evaluation_replaced`.
Run it from the checkout that trained the run, right after `evaluate`.
The README's and the docs' figures are rendered from this file
(`python docs/gen_readme_figures.py`, and the docs build).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import harness

from keras_attention.precision import onednn_cap_without_bf16

RESULTS = Path(__file__).resolve().parent / "results" / "default_run.json"
README = harness.REPO / "README.md"
QUICKSTART_RUN = "runs/fra-eng"
QUICKSTART_EXPORT = "exports/fra-eng"
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
    "seed",
    "init_seed",
    "label_smoothing",
    "ema",
    "ema_momentum",
    "keep_epoch_weights",
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


def quickstart_command(readme: Path = README) -> str:
    """The one-line command of README's Quickstart: its section's first bash block."""
    text = readme.read_text(encoding="utf-8")
    section = text.partition("\n## Quickstart\n")[2].partition("\n## ")[0]
    block = re.search(r"^```bash\n(.*?)^```", section, flags=re.DOTALL | re.MULTILINE)
    if not section or not block or len(block.group(1).strip().splitlines()) != 1:
        raise ValueError(f"{readme}: no one-line bash block under '## Quickstart'")
    return block.group(1).strip()


def export_facts(export_base: Path) -> dict:
    """The newest version under `export_base`: its weights, shortlist and size."""
    from keras_attention.export.export_manifest import ExportManifest
    from keras_attention.export.version_directory import VersionDirectory

    versions = VersionDirectory(export_base)
    if versions.latest() is None:
        raise FileNotFoundError(f"no version directory under {export_base}")
    newest = versions.path(versions.latest())
    manifest = ExportManifest.load(newest)
    return {
        "weights": manifest.weights.get("weights"),
        "shortlist": manifest.shortlist.get("k") if manifest.shortlist else None,
        "target_vocabulary_size": manifest.vocabulary.get("target_size"),
        "variables_bytes": harness.variables_bytes(newest),
    }


def run_quickstart(workdir: Path, command: str) -> Path:
    """Runs the Quickstart `command` in a clone at `workdir` (made from this checkout's
    HEAD unless it holds one), then evaluates without unknown-word replacement and
    exports. Returns the copy of the metrics of the Quickstart's own `evaluate`."""
    if not (workdir / ".git").exists():
        subprocess.run(["git", "clone", "--quiet", str(harness.REPO), str(workdir)], check=True)
    subprocess.run(["bash", "-c", command], cwd=workdir, check=True)
    replaced = workdir / "quickstart-metrics.json"
    shutil.copyfile(workdir / QUICKSTART_RUN / "metrics.json", replaced)
    tool = str(workdir / ".venv" / "bin" / "keras-attention")
    steps = (
        [tool, "evaluate", QUICKSTART_RUN, "--no-replace-unknown"],
        [tool, "export", QUICKSTART_RUN, "--export-dir", QUICKSTART_EXPORT],
    )
    for step in steps:
        subprocess.run(step, cwd=workdir, check=True)
    return replaced


def quickstart_record(workdir: Path, machine: dict, replaced: Path) -> dict:
    """The `quickstart.<kind>` record of the clone at `workdir`."""
    machine = {**machine, "commit": harness.git_commit(workdir), "command": quickstart_command()}
    result = record(workdir / QUICKSTART_RUN, machine, replaced)
    result["export"] = export_facts(workdir / QUICKSTART_EXPORT)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--run-dir", type=Path, default=Path("runs/fra-eng"))
    parser.add_argument(
        "--kind",
        type=harness.record_name,
        help="without --quickstart, the record runs.NAME to write: lowercase letters, digits "
        "and underscores, e.g. native_bf16_earlier_split (required then)",
    )
    parser.add_argument(
        "--command", default=RUN_COMMAND, help="without --quickstart, the command that made the run"
    )
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
    parser.add_argument(
        "--quickstart",
        action="store_true",
        help="run README's Quickstart command in a clone at --workdir and record it as "
        "quickstart.<kind> (see the module's docstring)",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        help="with --quickstart: the clone to run in, made if it holds none "
        "(default: a new temporary directory)",
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
    if not args.quickstart and not args.kind:
        parser.error("--kind names the runs.<name> record (or give --quickstart)")
    kind = "native_bf16" if native else "no_native_bf16"
    if args.quickstart:
        workdir = args.workdir or Path(tempfile.mkdtemp(prefix="quickstart-"))
        replaced = run_quickstart(workdir, quickstart_command())
        harness.write_record(
            args.out, "quickstart", kind, quickstart_record(workdir, machine, replaced)
        )
        where = f"quickstart.{kind} from {workdir}"
    else:
        kind = args.kind
        harness.write_record(
            args.out, "runs", kind, record(args.run_dir, machine, args.replaced_metrics)
        )
        where = f"runs.{kind} from {args.run_dir}"
    print(f"{args.out}: {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
