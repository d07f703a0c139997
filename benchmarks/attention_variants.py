"""Every attention variant, trained the same way, in one table.

For each variant (Bahdanau, Bahdanau weight-normalized, the six Luong scores, and the
no-attention baseline) this script

1. trains a translator on the bundled English->French corpus with `keras-attention
   train`'s own code path (`keras_attention.training.train`), the same size, seed and
   number of steps for every variant (no time budget, no early stopping), into
   `OUT/<variant>/`;
2. scores the test split with `evaluate_run` (sacreBLEU greedy and beam 4, chrF, BLEU by
   source length, all references);
3. measures **alignment accuracy** on a synthetic task with known alignments: digit
   strings translated to French number words in *reverse* order ("3 7 1" -> "un sept
   trois"), so the aligned source token of target position t is source position
   n - 1 - t (not the diagonal). It is the share of target tokens whose attention
   argmax (teacher forcing) is that source token.

It writes `OUT/results.json` (updated after each variant, so a partial run keeps what
finished), `OUT/variants.md` (the tables) and `OUT/bleu_by_length.png` (the BLEU against
sentence length figure of Bahdanau et al., 2015, for all variants).

    python benchmarks/attention_variants.py --out runs/variants            # ~1 h on 2 cores
    python benchmarks/attention_variants.py --variants bahdanau none --steps 200 --quick
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

VARIANTS = {
    "bahdanau": {"attention": "bahdanau"},
    "bahdanau normalized": {"attention": "bahdanau", "normalize": True},
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
    parser.add_argument("--steps", type=int, default=1000, help="training steps per variant")
    parser.add_argument("--steps-per-epoch", type=int, default=250)
    parser.add_argument("--embedding-dim", type=int, default=128)
    parser.add_argument("--encoder-units", type=int, default=128)
    parser.add_argument("--decoder-units", type=int, default=256)
    parser.add_argument(
        "--tokenizer", default="subwords", choices=("subwords", "words"), help="as `train`'s"
    )
    parser.add_argument(
        "--source-vocabulary-size", type=int, default=None, help="default: the tokenizer's"
    )
    parser.add_argument("--target-vocabulary-size", type=int, default=None)
    parser.add_argument("--alignment-steps", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--quick", action="store_true", help="greedy only, 300 test sentences (a smoke run)"
    )
    return parser.parse_args(argv)


# ----------------------------------------------------------------- alignment task


def measure_alignment(variant: dict, steps: int, seed: int) -> float | None:
    """Alignment accuracy of a small model of `variant` after `steps` steps of batch 32."""
    import keras

    from keras_attention import Seq2Seq
    from keras_attention.data import alignment_accuracy, make_alignment_task
    from keras_attention.data.alignment_task import VOCABULARY_SIZE
    from keras_attention.training import MaskedSparseCategoricalCrossentropy

    if variant["attention"] == "none":
        return None
    keras.utils.set_random_seed(seed)
    train = make_alignment_task(steps * 32 // 4, seed=seed)
    model = Seq2Seq(
        VOCABULARY_SIZE,
        VOCABULARY_SIZE,
        embedding_dim=32,
        encoder_units=32,
        decoder_units=64,
        max_source_length=train.source_ids.shape[1],
        tie_embeddings=True,
        **variant,
    )
    model.compile(
        optimizer=keras.optimizers.Adam(5e-3, global_clipnorm=5.0),
        loss=MaskedSparseCategoricalCrossentropy(),
    )
    model.fit(
        (train.source_ids, train.target_in), train.target_out, batch_size=32, epochs=4, verbose=0
    )
    test = make_alignment_task(500, seed=seed + 1)
    _, attention = model.call_with_attention((test.source_ids, test.target_in))
    return alignment_accuracy(attention, test)


# ------------------------------------------------------------------ translation


def train_and_evaluate(name: str, variant: dict, args: argparse.Namespace) -> dict:
    from keras_attention.evaluation.run_evaluation import evaluate_run
    from keras_attention.training.train_config import TrainConfig
    from keras_attention.training.trainer import train

    run_dir = Path(args.out) / name.replace(" ", "-")
    config = TrainConfig(
        out=str(run_dir),
        tokenizer=args.tokenizer,
        embedding_dim=args.embedding_dim,
        encoder_units=args.encoder_units,
        decoder_units=args.decoder_units,
        source_vocabulary_size=args.source_vocabulary_size,
        target_vocabulary_size=args.target_vocabulary_size,
        epochs=max(1, args.steps // args.steps_per_epoch),
        steps_per_epoch=args.steps_per_epoch,
        patience=10**6,
        time_budget_minutes=None,
        seed=args.seed,
        **variant,
    )
    started = time.monotonic()
    summary = train(config, verbose=0)
    train_seconds = time.monotonic() - started
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
        "parameters": summary["parameters"],
        "steps": summary["epochs_run"] * args.steps_per_epoch,
        "train_seconds": round(train_seconds, 1),
        "best_val_loss": summary["best_val_loss"],
        "val_loss_by_epoch": history,
        **rows,
        "bleu_signature": evaluation["greedy"]["bleu_signature"],
    }


def _history(run_dir: Path, column: str) -> list[str]:
    import csv

    with open(run_dir / "history.csv", encoding="utf-8", newline="") as f:
        return [row[column] for row in csv.DictReader(f) if row.get(column)]


# ----------------------------------------------------------------------- report


def write_report(results: dict, out: Path) -> None:
    from keras_attention.plotting.attention_plots import plot_bleu_by_length

    lines = [
        "| variant | params | steps | best val loss | BLEU greedy | BLEU beam 4 | chrF beam 4 "
        "| beam BLEU 1-5 | 6-10 | 11-15 | 16+ | alignment accuracy |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    curves = {}
    for name, r in results.items():
        if "greedy" not in r:
            continue
        best = r.get("beam", r["greedy"])
        buckets = {b["bucket"]: b["bleu"] for b in best["bleu_by_length"]}
        alignment = r.get("alignment_accuracy")
        lines.append(
            f"| {name} | {r['parameters']:,} | {r['steps']} | {r['best_val_loss']:.3f} "
            f"| {r['greedy']['bleu']:.2f} | {r.get('beam', {}).get('bleu', float('nan')):.2f} "
            f"| {best['chrf']:.2f} | "
            + " | ".join(
                f"{buckets.get(b, float('nan')):.2f}" for b in ("1-5", "6-10", "11-15", "16+")
            )
            + f" | {'n/a' if alignment is None else f'{alignment:.1%}'} |"
        )
        curves[name] = best["bleu_by_length"]
    (out / "variants.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines), flush=True)
    if curves:
        plot_bleu_by_length(
            curves, out / "bleu_by_length.png", title="BLEU by source length (beam search, width 4)"
        )


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / "results.json"
    results = json.loads(results_path.read_text()) if results_path.is_file() else {}
    for name in args.variants:
        variant = VARIANTS[name]
        if "greedy" in results.get(name, {}):
            print(f"{name}: done before, kept", flush=True)
            continue
        started = time.monotonic()
        result = {"alignment_accuracy": measure_alignment(variant, args.alignment_steps, args.seed)}
        result.update(train_and_evaluate(name, variant, args))
        results[name] = result
        results_path.write_text(json.dumps(results, indent=2), encoding="utf-8")
        print(
            f"{name}: val {result['best_val_loss']:.3f} greedy {result['greedy']['bleu']:.2f} "
            f"beam {result.get('beam', {}).get('bleu', float('nan')):.2f} alignment "
            f"{result['alignment_accuracy']} ({time.monotonic() - started:.0f} s)",
            flush=True,
        )
        write_report(results, out)
    return results


if __name__ == "__main__":
    main()
