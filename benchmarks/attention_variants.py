"""Every attention variant, trained the same way, in one table.

For each variant (Bahdanau, Bahdanau weight-normalized, the six Luong scores, and the
no-attention baseline) this script

1. trains a translator on the bundled English->French corpus with `keras-attention
   train`'s own code path (`keras_attention.training.train`), the same size, seed and
   number of steps for every variant (no time budget, no early stopping), into
   `OUT/<variant>/`; by default the size and budget of `keras-attention train`'s
   defaults (embedding 256, encoder 256, decoder 512, 8 x 500 steps);
2. scores the test split with `evaluate_run` (sacreBLEU greedy and beam 4, chrF, BLEU by
   source length, all references) and measures how peaked the trained attention is (the
   mean largest weight and the entropy as a share of the uniform's, greedy translations
   of 256 test sources);
3. measures **alignment accuracy** on a synthetic task with known alignments: digit
   strings translated to French number words in *reverse* order ("3 7 1" -> "un sept
   trois"), so the aligned source token of target position t is source position
   n - 1 - t (not the diagonal). It is the share of target tokens whose attention
   argmax (teacher forcing) is that source token, averaged over `--alignment-seeds`
   (a tiny model trained `--alignment-steps` steps per seed); also the share within one
   position of it (a bidirectional encoder's neighbouring annotation carries the word
   too), the commonest offset and the task's token accuracy (the baseline's too).

It writes `OUT/results.json` (updated after each variant, so a partial run keeps what
finished; a variant's `machine` holds the date, commit, command and machine of the
invocation that measured its `alignment` and its `translation` figures), `OUT/variants.md`
(the tables) and `OUT/bleu_by_length.png` (the BLEU against sentence length figure of
Bahdanau et al., 2015, for all variants).

    python benchmarks/attention_variants.py --out runs/variants       # ~3 h: 9 runs of 15-20 min
    python benchmarks/attention_variants.py --out runs/variants-1000 --steps 1000 \
        --steps-per-epoch 250 --embedding-dim 128 --encoder-units 128 --decoder-units 256
    python benchmarks/attention_variants.py --alignment-only          # 53 min beside other jobs
    python benchmarks/attention_variants.py --variants none --run none=runs/r12   # reuse a run
    python benchmarks/attention_variants.py --variants bahdanau none --steps 200 --quick

`--run NAME=DIR` takes variant NAME from a run directory trained before (e.g. by
`keras-attention train` with the same settings: its config.json must agree with this
script's, apart from the output path, patience and time budget) instead of training it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import harness

VARIANTS = {
    # The paper's decoder (query s_{t-1}), as the recorded table was trained; the
    # recipe's Bahdanau decoder is the conditional GRU ("bahdanau conditional").
    "bahdanau": {"attention": "bahdanau", "conditional": False},
    "bahdanau normalized": {"attention": "bahdanau", "normalize": True, "conditional": False},
    "bahdanau conditional": {"attention": "bahdanau", "conditional": True},
    "luong dot": {"attention": "luong", "score": "dot"},
    "luong general": {"attention": "luong", "score": "general"},
    "luong scaled_dot": {"attention": "luong", "score": "scaled_dot"},
    "luong concat": {"attention": "luong", "score": "concat"},
    "luong cosine": {"attention": "luong", "score": "cosine"},
    "luong location": {"attention": "luong", "score": "location"},
    "none": {"attention": "none"},
}
BUCKETS = ((1, 5), (6, 10), (11, 15), (16, None))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs/variants", help="output directory")
    parser.add_argument(
        "--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS), metavar="NAME"
    )
    parser.add_argument(
        "--steps", type=int, default=4000, help="training steps per variant (default: train's)"
    )
    parser.add_argument("--steps-per-epoch", type=int, default=500)
    parser.add_argument("--embedding-dim", type=int, default=None, help="default: train's")
    parser.add_argument("--encoder-units", type=int, default=None, help="default: train's")
    parser.add_argument("--decoder-units", type=int, default=None, help="default: train's")
    parser.add_argument(
        "--tokenizer", default="subwords", choices=("subwords", "words"), help="as `train`'s"
    )
    parser.add_argument(
        "--source-vocabulary-size", type=int, default=None, help="default: the tokenizer's"
    )
    parser.add_argument("--target-vocabulary-size", type=int, default=None)
    parser.add_argument("--alignment-steps", type=int, default=3000)
    parser.add_argument("--alignment-seeds", type=int, nargs="+", default=[0, 1, 2], metavar="SEED")
    parser.add_argument(
        "--alignment-only", action="store_true", help="measure the alignment task only"
    )
    parser.add_argument(
        "--run",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="take variant NAME from a run directory trained before (repeatable)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--quick", action="store_true", help="greedy only, 300 test sentences (a smoke run)"
    )
    args = parser.parse_args(argv)
    runs = {}
    for item in args.run:
        name, sep, directory = item.partition("=")
        if not sep or name not in VARIANTS or not directory:
            parser.error(f"--run takes NAME=DIR with NAME one of {list(VARIANTS)}; got {item!r}")
        runs[name] = Path(directory)
    if runs and args.quick:
        # A quick evaluation would overwrite the trained run's own metrics.json.
        parser.error("--quick evaluates 300 sentences into the run directory; not with --run")
    args.run = runs
    return args


# ----------------------------------------------------------------- alignment task


def measure_alignment(variant: dict, steps: int, seeds: list[int]) -> dict:
    """The digits task learned by a small model of `variant`, once per seed.

    Returns the means over the seeds of the exact alignment accuracy, the accuracy
    within one position and the teacher-forced token accuracy, the exact accuracy of
    each seed and each seed's commonest offset of the argmax (`None` for the alignment
    figures of the baseline, which has no attention).
    """
    import keras
    import numpy as np

    from keras_attention import Seq2Seq
    from keras_attention.data import alignment_accuracy, alignment_offsets, make_alignment_task
    from keras_attention.data.alignment_task import VOCABULARY_SIZE
    from keras_attention.training import MaskedSparseCategoricalCrossentropy

    exact, within_one, offsets, token_accuracy = [], [], [], []
    for seed in seeds:
        keras.utils.set_random_seed(seed)
        train = make_alignment_task(steps * 32 // 4, seed=seed)
        arguments = harness.seq2seq_arguments(
            embedding_dim=32,
            encoder_units=32,
            decoder_units=64,
            max_length=train.source_ids.shape[1],
            tie_embeddings=True,
            **variant,
        )
        model = Seq2Seq(VOCABULARY_SIZE, VOCABULARY_SIZE, **arguments)
        model.compile(
            optimizer=keras.optimizers.Adam(5e-3, global_clipnorm=5.0),
            loss=MaskedSparseCategoricalCrossentropy(),
        )
        model.fit(
            (train.source_ids, train.target_in),
            train.target_out,
            batch_size=32,
            epochs=4,
            verbose=0,
        )
        test = make_alignment_task(500, seed=seed + 1)
        logits, attention = model.call_with_attention((test.source_ids, test.target_in))
        real = test.target_out > 0
        predicted = np.asarray(logits).argmax(-1)
        token_accuracy.append(float((predicted[real] == test.target_out[real]).mean()))
        if attention is not None:
            exact.append(alignment_accuracy(attention, test))
            within_one.append(alignment_accuracy(attention, test, tolerance=1))
            offsets.append(next(iter(alignment_offsets(attention, test))))
    has_attention = variant["attention"] != "none"
    return {
        "alignment_accuracy": float(np.mean(exact)) if has_attention else None,
        "alignment_accuracy_by_seed": exact if has_attention else None,
        "alignment_within_one": float(np.mean(within_one)) if has_attention else None,
        "alignment_commonest_offset_by_seed": offsets if has_attention else None,
        "alignment_token_accuracy": float(np.mean(token_accuracy)),
        "alignment_seeds": list(seeds),
        "alignment_steps": steps,
    }


# ------------------------------------------------------------------ translation


def variant_config(name: str, args: argparse.Namespace):
    """The `TrainConfig` of variant `name` in this comparison."""
    from keras_attention.runs.train_config import TrainConfig

    sizes = {
        key: getattr(args, key)
        for key in ("embedding_dim", "encoder_units", "decoder_units")
        if getattr(args, key) is not None
    }
    return TrainConfig(
        out=str(Path(args.out) / name.replace(" ", "-")),
        tokenizer=args.tokenizer,
        source_vocabulary_size=args.source_vocabulary_size,
        target_vocabulary_size=args.target_vocabulary_size,
        epochs=max(1, args.steps // args.steps_per_epoch),
        steps_per_epoch=args.steps_per_epoch,
        patience=10**6,
        time_budget_minutes=None,
        seed=args.seed,
        **sizes,
        **VARIANTS[name],
    )


# Fields that do not change what a run learns, when it runs to its planned steps (and,
# below, the fields the variant's attention does not read).
IGNORED_FIELDS = ("out", "patience", "time_budget_minutes")


def check_trained_run(name: str, run_dir: Path, expected) -> dict:
    """The `training` section of the run's metrics.json; refuses a run directory that was
    not trained as this comparison's `name`."""
    from keras_attention.runs.run_directory import RunDirectory
    from keras_attention.runs.train_config import TrainConfig

    config = TrainConfig.load(run_dir)
    unused = {
        "luong": ("normalize", "conditional"),
        "bahdanau": ("score", "score_scale", "scale_by_dimension", "input_feeding"),
        "none": (
            "score",
            "score_scale",
            "scale_by_dimension",
            "input_feeding",
            "normalize",
            "attention_units",
            "conditional",
        ),
    }[expected.attention]
    differences = expected.differences(config, ignore=IGNORED_FIELDS + unused)
    if differences:
        raise SystemExit(
            f"--run {name}={run_dir}: the run was trained differently from this "
            "comparison's settings (comparison -> run): " + "; ".join(differences)
        )
    training = RunDirectory(run_dir).read_metrics()["training"]
    planned = config.maximum_epochs * config.steps_per_epoch
    done = training["epochs_run"] * config.steps_per_epoch
    if done != planned:
        raise SystemExit(
            f"--run {name}={run_dir}: the run stopped after {done} of its {planned} steps "
            f"({training.get('stopped_by')}), so it does not compare"
        )
    return training


def saved_translations_are_current(run_dir: Path) -> bool:
    """Whether the run's evaluation (beam 4, whole test split) is of its model now."""
    from keras_attention.runs import run_state
    from keras_attention.runs.run_directory import RunDirectory

    run = RunDirectory(run_dir)
    evaluation = run.read_metrics().get("evaluation") or {}
    return (
        run_state.evaluation_is_current(run, evaluation) is True
        and evaluation.get("beam", {}).get("beam_width") == 4
        and all((run_dir / f"translations.{d}.tsv").is_file() for d in ("greedy", "beam"))
    )


def test_references(run_dir: Path) -> list[tuple[str, list[str]]]:
    """The run's test split as `(source, all its references)`, in evaluate_run's order."""
    from keras_attention.data import group_references, load_corpus
    from keras_attention.runs.run_directory import RunDirectory

    return group_references(load_corpus(RunDirectory(run_dir).test_split).pairs)


def rescore_saved_translations(run_dir: Path) -> dict:
    """BLEU, chrF and BLEU by length (this script's buckets) of the run's saved
    translations, without decoding again. Refuses translations of another test split."""
    from keras_attention.evaluation.bleu import bleu_by_length, score_translations

    grouped = test_references(run_dir)
    sources = [source for source, _ in grouped]
    references = [refs for _, refs in grouped]
    evaluation = {}
    for decoding in ("greedy", "beam"):
        with open(run_dir / f"translations.{decoding}.tsv", encoding="utf-8") as f:
            # As evaluate_run writes them: "source<TAB>translation" per line.
            rows = [line.rstrip("\n").split("\t", 1) for line in f]
        if [row[0] for row in rows] != sources:
            raise SystemExit(f"{run_dir}: translations.{decoding}.tsv is not of its test split")
        hypotheses = [row[1] if len(row) > 1 else "" for row in rows]
        scores = score_translations(hypotheses, references)
        evaluation[decoding] = {
            "bleu": scores.bleu,
            "chrf": scores.chrf,
            "bleu_signature": scores.bleu_signature,
            "bleu_by_length": bleu_by_length(sources, hypotheses, references, BUCKETS),
        }
    return evaluation


def attention_sharpness(run_dir: Path, sentences: int = 256) -> dict | None:
    """How peaked the trained model's attention is on the first `sentences` test sources
    (greedy translations): the mean largest weight and the mean entropy as a share of
    the uniform's over the real source tokens (1 = uniform). `None` without attention."""
    import numpy as np
    import tensorflow as tf

    from keras_attention.inference.trained_run import load_translator

    translator = load_translator(run_dir)
    if translator.model.decoder.attention_layer is None:
        return None
    sources = [source for source, _ in test_references(run_dir)[:sentences]]
    result = translator.translate(tf.constant(sources), translator.strategy())
    largest, entropy = [], []
    for weights, steps, source_tokens in zip(
        result["attention"].numpy(),
        result["length"].numpy(),
        (result["source_tokens"].numpy() != b"").sum(axis=1),
        strict=True,
    ):
        if steps == 0 or source_tokens < 2:
            continue
        rows = weights[:steps, :source_tokens]
        largest.append(rows.max(-1).mean())
        p = np.clip(rows, 1e-9, 1.0)
        entropy.append((-(p * np.log(p)).sum(-1) / np.log(source_tokens)).mean())
    return {"largest_weight": float(np.mean(largest)), "entropy": float(np.mean(entropy))}


def train_and_evaluate(name: str, args: argparse.Namespace) -> dict:
    from keras_attention.evaluation.run_evaluation import evaluate_run
    from keras_attention.training.trainer import train

    config = variant_config(name, args)
    run_dir = args.run.get(name)
    if run_dir is None:
        run_dir = Path(config.out)
        with harness.Stopwatch() as watch:
            summary = train(config, verbose=0)
        train_seconds = watch.seconds
    else:
        summary = check_trained_run(name, run_dir, config)
        train_seconds = summary["seconds"]
    if args.run.get(name) is not None and saved_translations_are_current(run_dir):
        evaluation = rescore_saved_translations(run_dir)
    else:
        evaluation = evaluate_run(
            run_dir,
            beam_width=1 if args.quick else 4,
            max_sentences=300 if args.quick else None,
            # An open last bucket (16+): the 16-20 and 21+ buckets are tiny.
            buckets=BUCKETS,
        )
    rows = {
        decoding: {key: evaluation[decoding][key] for key in ("bleu", "chrf", "bleu_by_length")}
        for decoding in ("greedy", "beam")
        if decoding in evaluation
    }
    history = [float(v) for v in _history(run_dir, "val_loss")]
    return {
        "run_dir": str(run_dir),
        "parameters": summary["parameters"],
        "steps": summary["epochs_run"] * args.steps_per_epoch,
        "train_seconds": round(train_seconds, 1),
        "best_val_loss": summary["best_val_loss"],
        "val_loss_by_epoch": history,
        "attention_sharpness": attention_sharpness(run_dir),
        **rows,
        "bleu_signature": evaluation["greedy"]["bleu_signature"],
    }


def _history(run_dir: Path, column: str) -> list[str]:
    import csv

    with open(run_dir / "history.csv", encoding="utf-8", newline="") as f:
        return [row[column] for row in csv.DictReader(f) if row.get(column)]


# ----------------------------------------------------------------------- report


def _percent(value) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def write_report(results: dict, out: Path) -> None:
    from keras_attention.plotting.attention_plots import plot_bleu_by_length

    lines = [
        "| variant | params | steps | best val loss | BLEU greedy | BLEU beam 4 | chrF beam 4 "
        "| beam BLEU 1-5 | 6-10 | 11-15 | 16+ | largest weight | entropy |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: | ---: |",
    ]
    alignment_lines = [
        "| variant | alignment accuracy (mean) | by seed | within one position "
        "| commonest offset by seed | token accuracy |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    curves = {}
    order = list(VARIANTS)
    for name in sorted(results, key=lambda n: order.index(n) if n in order else len(order)):
        r = results[name]
        if "alignment_token_accuracy" in r:
            by_seed = r["alignment_accuracy_by_seed"]
            offsets = r["alignment_commonest_offset_by_seed"]
            alignment_lines.append(
                f"| {name} | {_percent(r['alignment_accuracy'])} "
                f"| {'n/a' if by_seed is None else ' / '.join(_percent(v) for v in by_seed)} "
                f"| {_percent(r['alignment_within_one'])} "
                f"| {'n/a' if offsets is None else ' / '.join(f'{v:+d}' for v in offsets)} "
                f"| {_percent(r['alignment_token_accuracy'])} |"
            )
        if "greedy" not in r:
            continue
        best = r.get("beam", r["greedy"])
        buckets = {b["bucket"]: b["bleu"] for b in best["bleu_by_length"]}
        sharpness = r.get("attention_sharpness")
        lines.append(
            f"| {name} | {r['parameters']:,} | {r['steps']} | {r['best_val_loss']:.3f} "
            f"| {r['greedy']['bleu']:.2f} | {r.get('beam', {}).get('bleu', float('nan')):.2f} "
            f"| {best['chrf']:.2f} | "
            + " | ".join(
                f"{buckets.get(b, float('nan')):.2f}" for b in ("1-5", "6-10", "11-15", "16+")
            )
            + (
                " | n/a | n/a |"
                if sharpness is None
                else f" | {sharpness['largest_weight']:.3f} | {sharpness['entropy']:.3f} |"
            )
        )
        curves[name] = best["bleu_by_length"]
    report = "\n".join(lines) + "\n\n" + "\n".join(alignment_lines) + "\n"
    (out / "variants.md").write_text(report, encoding="utf-8")
    print(report, flush=True)
    if curves:
        plot_bleu_by_length(
            curves, out / "bleu_by_length.png", title="BLEU by source length (beam search, width 4)"
        )


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    machine = harness.print_machine_header()
    harness.quiet_tensorflow()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / "results.json"
    results = json.loads(results_path.read_text()) if results_path.is_file() else {}
    for name in args.variants:
        result = results.setdefault(name, {})
        watch = harness.Stopwatch()
        if "alignment_token_accuracy" not in result:
            result.update(
                measure_alignment(VARIANTS[name], args.alignment_steps, args.alignment_seeds)
            )
            result.setdefault("machine", {})["alignment"] = machine
        if not args.alignment_only and "greedy" not in result:
            result.update(train_and_evaluate(name, args))
            result.setdefault("machine", {})["translation"] = machine
        results_path.write_text(json.dumps(results, indent=2), encoding="utf-8")
        beam = result.get("beam", {}).get("bleu")
        print(
            f"{name}: alignment {_percent(result['alignment_accuracy'])} "
            f"(within one {_percent(result['alignment_within_one'])}, token accuracy "
            f"{_percent(result['alignment_token_accuracy'])})"
            + (f", beam BLEU {beam:.2f}" if beam is not None else "")
            + f" ({watch.seconds:.0f} s)",
            flush=True,
        )
        write_report(results, out)
    return results


if __name__ == "__main__":
    main()
