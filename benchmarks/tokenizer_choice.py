"""Words vs. subwords at several vocabulary sizes, by corpus size, budget and direction.

For each direction of the bundled corpus (English->French, French->English), each corpus
size (`--sizes`, pairs drawn by `split_corpus(max_pairs=N)`, so a smaller corpus's test
split is drawn the same way as the full one's) and each budget (`--steps`), this script
trains one translator per tokenizer option with `keras-attention train`'s own code path
(`keras_attention.training.train`, every other setting its default, the same seed, no
time budget or early stopping) into `OUT/<direction>/<size>/<steps>/<option>/`, then
scores the test split with `evaluate_run` (sacreBLEU and chrF, greedy and beam 4, all
references). The options are `words` (the word tokenizer at its default vocabulary
sizes) and `subwords-N` (SentencePiece BPE, N pieces per side), `--options` chooses.

It also records what the training split of each (direction, size) shows, the inputs a
rule for choosing the tokenizer can read before training (`CorpusStatistics` of
`keras_attention.runs.tokenizer_choice`): pairs, distinct words, mean characters per
sentence, distinct word tokens and the share of the word tokens `auto` word vocabularies
hold, on each side; statistics recorded by an older version are counted again.

It writes `OUT/results.json` after every run (a rerun with the same `--out` skips what is
done and resumes an interrupted training from its last epoch) and, at the end,
`OUT/tokenizers.md` (one table per direction, also printed; a rerun with nothing left
to train just refreshes the statistics and writes it). Runs go in order of budget, then direction, then size, so
the short budget's table fills first.

    python benchmarks/tokenizer_choice.py --out runs/tokenizers          # everything, ~8 h
    python benchmarks/tokenizer_choice.py --out runs/tokenizers --steps 1500
    python benchmarks/tokenizer_choice.py --out /tmp/t --sizes 3000 --steps 100 \
        --options words subwords-1000 --directions en-fr --max-sentences 100   # a smoke run
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import harness

DIRECTIONS = ("en-fr", "fr-en")
SIZES = ("30000", "60000", "all")
OPTIONS = ("words", "subwords-2000", "subwords-4000", "subwords-8000", "subwords-16000")
STEPS_PER_EPOCH = 500


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs/tokenizers", help="output directory")
    parser.add_argument("--directions", nargs="+", default=list(DIRECTIONS), choices=DIRECTIONS)
    parser.add_argument(
        "--sizes", nargs="+", default=list(SIZES), metavar="N", help="pairs, or 'all'"
    )
    parser.add_argument("--steps", nargs="+", type=int, default=[1500, 4000], metavar="STEPS")
    parser.add_argument(
        "--options",
        nargs="+",
        default=list(OPTIONS),
        metavar="OPTION",
        help="'words' or 'subwords-N'",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--max-sentences", type=int, default=None, help="score only the first N test sources"
    )
    args = parser.parse_args(argv)
    for size in args.sizes:
        if size != "all" and not (size.isdigit() and int(size) > 0):
            parser.error(f"--sizes takes positive pair counts or 'all'; got {size!r}")
    for option in args.options:
        if option != "words" and not (
            option.startswith("subwords-") and option[9:].isdigit() and int(option[9:]) > 0
        ):
            parser.error(f"--options takes 'words' or 'subwords-N'; got {option!r}")
    for steps in args.steps:
        if steps < 1:
            parser.error(f"--steps must be positive; got {steps}")
    return args


def run_config(direction: str, size: str, steps: int, option: str, args):
    """The `TrainConfig` of one cell of the table."""
    from keras_attention.runs.train_config import TrainConfig

    # None: the word tokenizer's fixed sizes (VOCABULARY_SIZES), not `auto`'s.
    tokenizer = {
        "tokenizer": "words",
        "source_vocabulary_size": None,
        "target_vocabulary_size": None,
    }
    if option != "words":
        pieces = int(option.split("-", 1)[1])
        tokenizer = {
            "tokenizer": "subwords",
            "source_vocabulary_size": pieces,
            "target_vocabulary_size": pieces,
        }
    epochs, remainder = divmod(steps, STEPS_PER_EPOCH)
    return TrainConfig(
        out=str(Path(args.out) / direction / size / str(steps) / option),
        reverse=direction == "fr-en",
        max_pairs=None if size == "all" else int(size),
        epochs=max(1, epochs),
        steps_per_epoch=STEPS_PER_EPOCH if epochs else remainder,
        patience=10**6,
        time_budget_minutes=None,
        seed=args.seed,
        **tokenizer,
    )


def statistics_fields() -> set[str]:
    """The fields `corpus_statistics` records (its module imports no TensorFlow)."""
    import dataclasses

    from keras_attention.runs.tokenizer_choice import CorpusStatistics

    return {field.name for field in dataclasses.fields(CorpusStatistics)}


def corpus_statistics(config) -> dict:
    """What the training split shows before any tokenizer is trained: the inputs of
    `--tokenizer auto` (`keras_attention.runs.tokenizer_choice.corpus_statistics`)."""
    import dataclasses

    from keras_attention.runs import tokenizer_choice
    from keras_attention.runs.run_data import sample_splits

    return dataclasses.asdict(tokenizer_choice.corpus_statistics(sample_splits(config).train))


def train_and_evaluate(config, max_sentences: int | None) -> dict:
    from keras_attention.evaluation.run_evaluation import evaluate_run
    from keras_attention.runs.train_config import TrainConfig
    from keras_attention.training.trainer import train

    with harness.Stopwatch() as watch:
        summary = train(config, verbose=0)
    evaluation = evaluate_run(config.out, beam_width=4, max_sentences=max_sentences)
    resolved = TrainConfig.load(config.out)
    return {
        "run_dir": config.out,
        "source_vocabulary_size": resolved.source_vocabulary_size,
        "target_vocabulary_size": resolved.target_vocabulary_size,
        "parameters": summary["parameters"],
        "steps": summary["epochs_run"] * config.steps_per_epoch,
        "train_seconds": round(watch.seconds, 1),
        "best_val_loss": summary["best_val_loss"],
        **{
            decoding: {key: evaluation[decoding][key] for key in ("bleu", "chrf")}
            for decoding in ("greedy", "beam")
        },
        "test_sentences": evaluation.get("sentences"),
        "bleu_signature": evaluation["beam"].get("bleu_signature"),
    }


def write_report(results: dict, out: Path) -> None:
    lines = []
    for direction in DIRECTIONS:
        cells = results.get("runs", {}).get(direction)
        if not cells:
            continue
        lines += [
            f"### {direction}",
            "",
            "| pairs | steps | option | vocabulary (source / target) | beam BLEU | beam chrF "
            "| greedy BLEU | train s |",
            "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for key in sorted(cells, key=_order):
            size, steps, option = key.split("/")
            r = cells[key]
            if "beam" not in r:
                lines.append(f"| {size} | {steps} | {option} | failed: {r.get('error')} |||||")
                continue
            best = max(
                (
                    v["beam"]["bleu"]
                    for k, v in cells.items()
                    if "beam" in v and k.split("/")[:2] == [size, steps]
                ),
                default=None,
            )
            bleu = f"{r['beam']['bleu']:.2f}"
            if best is not None and r["beam"]["bleu"] == best:
                bleu = f"**{bleu}**"
            lines.append(
                f"| {size} | {steps} | {option} | {r['source_vocabulary_size']:,} / "
                f"{r['target_vocabulary_size']:,} | {bleu} | {r['beam']['chrf']:.2f} "
                f"| {r['greedy']['bleu']:.2f} | {r['train_seconds']:.0f} |"
            )
        lines.append("")
        statistics = results.get("statistics", {}).get(direction, {})
        if statistics:
            lines += [
                "| pairs | training pairs | distinct words (source / target) "
                "| characters per sentence (source / target) | distinct word tokens "
                "| `auto` word vocabularies hold | source words seen once per pair |",
                "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            ]
            for size in sorted(statistics, key=lambda s: _order(f"{s}/0/words")):
                s = statistics[size]
                lines.append(
                    f"| {size} | {s['train_pairs']:,} | {s['source_distinct_words']:,} / "
                    f"{s['target_distinct_words']:,} | {s['source_characters_per_sentence']:.1f}"
                    f" / {s['target_characters_per_sentence']:.1f} | "
                    f"{s['source_distinct_tokens']:,} / {s['target_distinct_tokens']:,} | "
                    f"{s['source_word_coverage']:.2%} / {s['target_word_coverage']:.2%} | "
                    f"{s['source_words_seen_once'] / max(1, s['train_pairs']):.3f} |"
                )
            lines.append("")
    report = "\n".join(lines)
    (out / "tokenizers.md").write_text(report, encoding="utf-8")
    print(report, flush=True)


def _order(key: str):
    size, steps, option = key.split("/")
    pieces = 0 if option == "words" else int(option.split("-", 1)[1])
    return (float("inf") if size == "all" else int(size), int(steps), pieces)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    machine = harness.print_machine_header()
    harness.quiet_tensorflow()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / "results.json"
    results = json.loads(results_path.read_text(encoding="utf-8")) if results_path.is_file() else {}
    results.pop("machine", None)  # write_json adds the latest invocation's
    for steps in args.steps:
        for direction in args.directions:
            for size in args.sizes:
                statistics = results.setdefault("statistics", {}).setdefault(direction, {})
                if set(statistics.get(size, {})) != statistics_fields():  # new, or older fields
                    config = run_config(direction, size, STEPS_PER_EPOCH, "words", args)
                    statistics[size] = corpus_statistics(config)
                    harness.write_json(results_path, results)
                for option in args.options:
                    key = f"{size}/{steps}/{option}"
                    cells = results.setdefault("runs", {}).setdefault(direction, {})
                    if "beam" in cells.get(key, {}):
                        continue
                    config = run_config(direction, size, steps, option, args)
                    try:
                        cells[key] = train_and_evaluate(config, args.max_sentences)
                    except ValueError as error:  # e.g. more pieces than the corpus has
                        cells[key] = {"error": str(error)}
                    cells[key]["machine"] = machine
                    harness.write_json(results_path, results)
                    beam = cells[key].get("beam", {}).get("bleu")
                    print(
                        f"{direction} {key}: "
                        + (f"beam BLEU {beam:.2f}" if beam is not None else "failed"),
                        flush=True,
                    )
    write_report(results, out)
    return results


if __name__ == "__main__":
    main()
