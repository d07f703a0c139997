"""Our default against OpenNMT-py 3.5.1 at equal budget: one command, one results file.

    python benchmarks/peers/run.py --run-dir runs/fra-eng [--budget-minutes 20]

`--run-dir` is a default run of ours, trained and evaluated on this machine
(`keras-attention train --out RUN && keras-attention evaluate RUN`). The script:

1. creates `benchmarks/peers/.venv` if it is missing (`requirements.txt`:
   OpenNMT-py 3.5.1, its PyTorch, SentencePiece; not a dependency of our
   package) and records its versions;
2. writes the run's training pairs and test set as plain files
   (`peer_data.write_run_data`: the pairs the run's training stream reads,
   its filters included; the test sources with all their references);
3. trains one SentencePiece model on both sides (`onmt_steps.py
   sentencepiece`) and builds OpenNMT-py's shared vocabulary
   (`onmt_build_vocab`);
4. for each OpenNMT-py model (`peer_config.RNN`, `peer_config.TRANSFORMER`):
   trains `--warmup-steps` steps to measure its step time, plans the steps
   that fit the budget (`peer_config.plan_steps`) with a learning-rate
   schedule that ends with them (`peer_config.schedule`), trains that
   (`onmt_train`, its process stopped if it overruns the budget by more than
   5%, and the last checkpoint used), then translates the test sources with
   beam 4 and times decoding at batch 1 and 64 (`onmt_steps.py translate`);
5. exports our run with `keras-attention export`'s defaults and times its
   `beam_search` signature (beam 4) on TF Serving's loading path, batch 1
   and 64, on the same sentences (`our_decode.py`);
6. scores every system's test translations with our sacreBLEU call
   (`score_translations`, as `keras-attention evaluate` does), takes our
   default's training time, parameters and BLEU from the run's metrics.json,
   writes `benchmarks/results/peers.json` and prints the table.

Every measured process runs alone, one after another, with 2 threads
(`OMP_NUM_THREADS`, `torch.set_num_threads`, `TF_NUM_INTRAOP_THREADS`).
`--smoke` checks the whole path in a few minutes (1-minute budget, 30 warm-up
steps, 200 test sentences) and writes to the work directory instead.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # benchmarks/: harness

import harness  # noqa: E402

harness.quiet_tensorflow()

import peer_config  # noqa: E402
import peer_data  # noqa: E402

from keras_attention.evaluation.bleu import score_translations  # noqa: E402
from keras_attention.runs.backup_files import read_json  # noqa: E402
from keras_attention.runs.run_directory import RunDirectory  # noqa: E402
from keras_attention.runs.train_config import TrainConfig  # noqa: E402

VENV = HERE / ".venv"
REQUIREMENTS = HERE / "requirements.txt"
RESULTS = harness.REPO / "benchmarks" / "results" / "peers.json"
OVERRUN = 1.05  # a training process past 105% of the budget is stopped


def threads_environment() -> dict[str, str]:
    n = str(peer_config.THREADS)
    return dict(
        os.environ,
        OMP_NUM_THREADS=n,
        MKL_NUM_THREADS=n,
        TF_NUM_INTRAOP_THREADS=n,
        TF_NUM_INTEROP_THREADS=n,
        TF_CPP_MIN_LOG_LEVEL="2",
    )


def venv_bin(name: str) -> str:
    return str(VENV / "bin" / name)


def ensure_venv() -> dict:
    """Creates the OpenNMT-py environment if missing; returns its package versions."""
    if not Path(venv_bin("onmt_train")).is_file():
        print(f"Creating {VENV} ({REQUIREMENTS.name})", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
        subprocess.run(
            [venv_bin("python"), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)],
            check=True,
        )
    code = (
        "import json, importlib.metadata as m, platform, torch; print(json.dumps({d: "
        "m.version(d) for d in ('OpenNMT-py', 'torch', 'sentencepiece', 'numpy')} | "
        "{'python': platform.python_version(), 'torch_threads': torch.get_num_threads()}))"
    )
    out = subprocess.run(
        [venv_bin("python"), "-c", code],
        check=True,
        capture_output=True,
        text=True,
        env=threads_environment(),
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_logged(command: list[str], log: Path, timeout: float | None = None) -> dict:
    """Runs `command` (output to `log`); stops it after `timeout` seconds. Returns its wall
    seconds, whether it was stopped, and its exit code."""
    started = time.perf_counter()
    with open(log, "w", encoding="utf-8") as f:
        process = subprocess.Popen(
            command, stdout=f, stderr=subprocess.STDOUT, env=threads_environment(), cwd=HERE
        )
        try:
            code = process.wait(timeout=timeout)
            stopped = False
        except subprocess.TimeoutExpired:
            process.terminate()
            code = process.wait()
            stopped = True
    seconds = time.perf_counter() - started
    if code != 0 and not stopped:
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise RuntimeError(f"{' '.join(command)} failed ({code}):\n{tail}")
    return {"wall_seconds": seconds, "stopped": stopped, "exit_code": code}


def last_checkpoint(directory: Path) -> Path:
    checkpoints = sorted(
        directory.glob("model_step_*.pt"), key=lambda p: int(p.stem.rsplit("_", 1)[1])
    )
    if not checkpoints:
        raise RuntimeError(f"no checkpoint in {directory}")
    return checkpoints[-1]


def onmt_train(config: dict, path: Path, timeout: float | None = None) -> tuple[dict, str]:
    path.write_text(peer_config.to_yaml(config), encoding="utf-8")
    log = path.with_suffix(".log")
    Path(config["save_model"]).parent.mkdir(parents=True, exist_ok=True)
    result = run_logged([venv_bin("onmt_train"), "-config", str(path)], log, timeout)
    return result, log.read_text(encoding="utf-8", errors="replace")


def train_peer(model: str, work: Path, budget_seconds: float, warmup_steps: int) -> dict:
    """Measures `model`'s step time, plans its steps to the budget, trains them."""
    print(f"\n[{model}] warm-up: {warmup_steps} steps to measure the step time", flush=True)
    config = peer_config.train_config(model, str(work), warmup_steps)
    config["save_model"] = str(work / f"{model}-warmup" / "model")
    config["save_checkpoint_steps"] = warmup_steps
    warmup, log = onmt_train(config, work / f"{model}.warmup.yaml")
    step_seconds = peer_config.step_seconds(log, skip=max(10, warmup_steps // 4))
    loop_seconds = peer_config.step_times(log)[-1][1]
    startup = max(0.0, warmup["wall_seconds"] - loop_seconds)
    shutil.rmtree(work / f"{model}-warmup", ignore_errors=True)
    steps = peer_config.plan_steps(budget_seconds, step_seconds)
    print(
        f"[{model}] {step_seconds:.3f} s/step after warm-up: {steps} steps planned for "
        f"{budget_seconds / 60:g} min",
        flush=True,
    )
    config = peer_config.train_config(model, str(work), steps)
    shutil.rmtree(Path(config["save_model"]).parent, ignore_errors=True)
    run, log = onmt_train(
        config, work / f"{model}.yaml", timeout=budget_seconds * OVERRUN + startup
    )
    times = peer_config.step_times(log)
    checkpoint = last_checkpoint(Path(config["save_model"]).parent)
    checkpoint_step = int(checkpoint.stem.rsplit("_", 1)[1])
    print(
        f"[{model}] trained {times[-1][0] if times else 0} steps, training loop "
        f"{times[-1][1] if times else 0:.0f} s (process {run['wall_seconds']:.0f} s)"
        + (", stopped at the budget" if run["stopped"] else ""),
        flush=True,
    )
    return {
        "config": config,
        "config_yaml": peer_config.to_yaml(config),
        "parameters": peer_config.parameter_count(log),
        "warmup": {
            "steps": warmup_steps,
            "seconds_per_step": step_seconds,
            "process_seconds": warmup["wall_seconds"],
            "startup_seconds": startup,
        },
        "training": {
            "planned_steps": steps,
            "steps": checkpoint_step,
            "logged_steps": times[-1][0] if times else 0,
            # The training loop's time at its last logged step; without one (a budget
            # too short to log a step), the process's time less the warm-up's startup.
            "seconds": times[-1][1] if times else max(0.0, run["wall_seconds"] - startup),
            "process_seconds": run["wall_seconds"],
            "stopped_at_budget": run["stopped"],
            "checkpoint": checkpoint.name,
        },
        "checkpoint_path": str(checkpoint),
    }


def score(hypotheses: list[str], references: list[list[str]]) -> dict:
    scores = score_translations(hypotheses, references)
    return {
        "bleu": scores.bleu,
        "chrf": scores.chrf,
        "bleu_signature": scores.bleu_signature,
        "chrf_signature": scores.chrf_signature,
        "sentences": len(hypotheses),
    }


def translate_peer(model: str, checkpoint: Path, work: Path, references) -> dict:
    print(f"[{model}] translating the test set (beam 4) and timing batch 1 and 64", flush=True)
    out = work / f"{model}.translate.json"
    run_logged(
        [
            venv_bin("python"),
            str(HERE / "onmt_steps.py"),
            "translate",
            str(work),
            str(checkpoint),
            "--out",
            str(out),
            "--speed-sample",
            str(work / "speed_sample.json"),
        ],
        work / f"{model}.translate.log",
    )
    result = json.loads(out.read_text(encoding="utf-8"))
    hypotheses = result.pop("hypotheses")
    write_translations(work / f"{model}.translations.tsv", work, hypotheses)
    return {**result, "evaluation": score(hypotheses, references)}


def write_translations(path: Path, work: Path, hypotheses: list[str]) -> None:
    sources = (work / "test.src").read_text(encoding="utf-8").splitlines()
    with open(path, "w", encoding="utf-8") as f:
        for source, hypothesis in zip(sources, hypotheses, strict=True):
            f.write(f"{source}\t{hypothesis}\n")


def our_row(run_dir: Path, work: Path, references) -> dict:
    """Our default: training and BLEU from the run's metrics.json, decoding measured here."""
    print("\n[ours] exporting with keras-attention export's defaults; timing beam_search")
    run = RunDirectory(run_dir)
    metrics = run.read_metrics()
    training, evaluation = metrics.get("training", {}), metrics.get("evaluation", {})
    config = TrainConfig.load(run.path)
    out = work / "ours.json"
    env = {**threads_environment(), "PYTHONPATH": harness.child_environment()["PYTHONPATH"]}
    started = time.perf_counter()
    with open(work / "ours.log", "w", encoding="utf-8") as log:
        subprocess.run(
            [
                sys.executable,
                str(HERE / "our_decode.py"),
                str(run_dir),
                str(work),
                "--out",
                str(out),
            ],
            check=True,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
    decoded = json.loads(out.read_text(encoding="utf-8"))
    hypotheses = decoded.pop("hypotheses")
    write_translations(work / "ours.translations.tsv", work, hypotheses)
    beam = evaluation.get("beam", {})
    plan = read_json(run.plan) or {}
    epoch_steps = training.get("epochs_run", 0) * (config.steps_per_epoch or 0) or None
    return {
        "config": json.loads(config.to_json()),
        "parameters": training.get("parameters"),
        "training": {
            "seconds": training.get("seconds"),
            "planned_steps": plan.get("planned_steps", epoch_steps),
            "plan": training.get("plan"),
            "epochs": training.get("epochs_run"),
            "steps_per_epoch": config.steps_per_epoch,
            "stopped_by": training.get("stopped_by"),
            "precision": config.precision,
            "time_budget_minutes": config.time_budget_minutes,
        },
        "evaluation": {
            "bleu": beam.get("bleu"),
            "chrf": beam.get("chrf"),
            "bleu_signature": beam.get("bleu_signature"),
            "beam_width": beam.get("beam_width"),
            "length_penalty": beam.get("length_penalty"),
            "sentences": evaluation.get("sentences"),
            "source": "the run's metrics.json (keras-attention evaluate)",
        },
        "export_evaluation": score(hypotheses, references),
        **decoded,
        "decoding_seconds_total": time.perf_counter() - started,
    }


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", required=True, type=Path, help="our trained default run")
    parser.add_argument(
        "--budget-minutes",
        type=float,
        default=None,
        help="training budget of each OpenNMT-py model (default: our default's "
        "--time-budget-minutes, 20)",
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/peers-work"))
    parser.add_argument("--models", default="rnn,transformer", help="OpenNMT-py models")
    parser.add_argument("--warmup-steps", type=int, default=60)
    parser.add_argument(
        "--speed-sentences", type=int, default=256, help="test sentences timed per batch size"
    )
    parser.add_argument("--max-test-sentences", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None, help=f"default: {RESULTS}")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a quick check of the whole path: 1-minute budget, 30 warm-up steps, 200 test "
        "and 16 timed sentences, results in the work directory",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.budget_minutes = args.budget_minutes or 1.0
        args.warmup_steps = min(args.warmup_steps, 30)
        args.max_test_sentences = args.max_test_sentences or 200
        args.speed_sentences = min(args.speed_sentences, 16)
        args.out = args.out or args.work / "peers.json"
    if args.budget_minutes is None:
        args.budget_minutes = TrainConfig().time_budget_minutes
    args.out = args.out or RESULTS
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    machine = harness.print_machine_header()
    models = [m for m in args.models.split(",") if m]
    budget = args.budget_minutes * 60
    peers_venv = ensure_venv()
    print(f"OpenNMT-py environment: {peers_venv}", flush=True)
    work = args.work
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)

    print("Writing the run's training pairs and test set", flush=True)
    data = peer_data.write_run_data(args.run_dir, work)
    references = json.loads((work / "test.references.json").read_text(encoding="utf-8"))
    if args.max_test_sentences:
        sources = (work / "test.src").read_text(encoding="utf-8").splitlines()
        peer_data.write_lines(work / "test.src", sources[: args.max_test_sentences])
        references = references[: args.max_test_sentences]
        data["test_sources_used"] = len(references)
    sources = (work / "test.src").read_text(encoding="utf-8").splitlines()
    sample = random.Random(0).sample(sources, min(args.speed_sentences, len(sources)))
    (work / "speed_sample.json").write_text(json.dumps(sample, ensure_ascii=False), "utf-8")
    print(json.dumps(data), flush=True)

    print("\nSentencePiece and OpenNMT-py's vocabulary", flush=True)
    spm = run_logged(
        [
            venv_bin("python"),
            str(HERE / "onmt_steps.py"),
            "sentencepiece",
            str(work),
            "--out",
            str(work / "spm.json"),
        ],
        work / "spm.log",
    )
    vocab_yaml = work / "vocab.yaml"
    vocab_yaml.write_text(peer_config.to_yaml(peer_config.vocab_config(str(work))), "utf-8")
    vocab = run_logged(
        [venv_bin("onmt_build_vocab"), "-config", str(vocab_yaml)], work / "vocab.log"
    )
    preprocessing = {
        "sentencepiece": json.loads((work / "spm.json").read_text(encoding="utf-8")),
        "sentencepiece_process_seconds": spm["wall_seconds"],
        "vocabulary_seconds": vocab["wall_seconds"],
        "vocabulary_config_yaml": vocab_yaml.read_text(encoding="utf-8"),
        "vocabulary_entries": sum(1 for _ in open(work / "vocab.shared", encoding="utf-8")),
    }

    systems: dict[str, dict] = {}
    for model in models:
        trained = train_peer(model, work, budget, args.warmup_steps)
        checkpoint = Path(trained.pop("checkpoint_path"))
        systems[model] = {**trained, **translate_peer(model, checkpoint, work, references)}
    systems = {"ours": our_row(args.run_dir, work, references), **systems}

    payload = {
        "description": "Our default against OpenNMT-py at equal training budget and threads",
        "precision": "ours: "
        + systems["ours"]["training"]["precision"]
        + " training, export "
        + str(systems["ours"]["export"]["precision"])
        + "; OpenNMT-py: float32",
        "budget_minutes": args.budget_minutes,
        "threads": peer_config.THREADS,
        "beam_width": peer_config.BEAM_WIDTH,
        "target_tokens": "whitespace-separated words of the detokenized translations",
        "smoke": args.smoke,
        "run_dir": str(args.run_dir),
        "data": data,
        "onmt_environment": peers_venv,
        "preprocessing": preprocessing,
        "systems": systems,
    }
    payload["rows"] = peer_config.table_rows(payload)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    harness.write_json(args.out, payload, machine)
    print("\n" + peer_config.format_table(payload["rows"]))
    print(f"\nWrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
