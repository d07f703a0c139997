"""Measures `keras-attention adapt` on an in-domain test made from the bundled corpus.

    python benchmarks/adaptation.py --workdir DIR [--topic food] [--mix-original W]
        [--learning-rate LR] [--name NAME]

The topic's pairs are those whose English sentence names one of the topic's words
(`TOPICS`, whole words, any case). They are held out of the base run altogether:

- `DIR/general.tsv`: every other pair of the bundled corpus, the base run's data;
- `DIR/topic-train.tsv`, `DIR/topic-test.tsv`: the topic's pairs, split by English
  source (every translation of a source on one side; a source goes to the test when
  the CRC-32 of its text is 0 modulo `TEST_MODULUS`).

Then, in DIR, with the `keras-attention` of this environment:

    keras-attention train --data DIR/general.tsv --out DIR/runs/base
    keras-attention adapt DIR/runs/base --data DIR/topic-train.tsv \\
        [--mix-original W] [--learning-rate LR] --out DIR/runs/adapted-NAME

(`train`'s and `adapt`'s defaults unless given: a 20-minute base run, a 5-minute
adaptation mixing in `MIX_ORIGINAL` of the base run's pairs at a quarter of its learning
rate), and both runs are scored
with `keras-attention evaluate --test-data` on the topic's test and on the base run's
own test split (the general test), greedy and beam 4, with and without unknown-word
replacement. The record goes to `benchmarks/results/adaptation.json` (`runs.NAME`, NAME
the topic unless given): the pair counts, both runs' training seconds and vocabulary
sizes, and the BLEU table. A DIR that holds finished runs is reused (each step is
skipped when its output exists): one base run serves adaptations with other settings,
each under its own NAME.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import sys
import zlib
from pathlib import Path

import harness

RESULTS = Path(__file__).resolve().parent / "results" / "adaptation.json"
CORPUS = harness.REPO / "keras_attention" / "data" / "fra-eng.tsv.gz"
TEST_MODULUS = 5
"""One topic source in `TEST_MODULUS` goes to the topic's test."""

TOPICS = {
    "food": (
        "eat eats ate eaten eating food foods meal meals dinner lunch breakfast supper "
        "restaurant restaurants cook cooks cooked cooking kitchen bread cheese meat fish soup "
        "salad fruit fruits apple apples orange oranges banana bananas egg eggs milk coffee "
        "tea wine beer cake cakes sugar rice vegetable vegetables potatoes chicken pizza "
        "sandwich hungry delicious taste tastes dessert chocolate juice drink drinks drank menu"
    ).split(),
}
"""Topic word lists: a pair is on the topic when its English sentence holds one of them."""


def split_topic(corpus: Path, words: list[str], out: Path) -> dict[str, int]:
    """Writes general.tsv, topic-train.tsv and topic-test.tsv into `out` from `corpus` (a
    gzipped English TAB French file); returns the pairs written to each."""
    on_topic = re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\b", re.IGNORECASE)
    out.mkdir(parents=True, exist_ok=True)
    names = ("general", "topic-train", "topic-test")
    files = {name: (out / f"{name}.tsv").open("w", encoding="utf-8") for name in names}
    counts = dict.fromkeys(names, 0)
    try:
        with gzip.open(corpus, "rt", encoding="utf-8") as lines:
            for line in lines:
                english = line.split("\t", 1)[0]
                if not on_topic.search(english):
                    name = "general"
                elif zlib.crc32(english.encode("utf-8")) % TEST_MODULUS == 0:
                    name = "topic-test"
                else:
                    name = "topic-train"
                files[name].write(line if line.endswith("\n") else line + "\n")
                counts[name] += 1
    finally:
        for file in files.values():
            file.close()
    return counts


def keras_attention(*arguments: str, cwd: Path) -> None:
    """Runs one `keras-attention` command in `cwd`, failing on a non-zero exit."""
    print("$ keras-attention " + " ".join(arguments), flush=True)
    subprocess.run(["keras-attention", *arguments], cwd=cwd, check=True)


def scores(run: Path, test_data: Path, workdir: Path) -> dict:
    """Greedy and beam BLEU and chrF of `run` on `test_data`, with and without unknown-word
    replacement (`evaluate --test-data`)."""
    table = {}
    for label, flag in (("replaced", "--replace-unknown"), ("kept", "--no-replace-unknown")):
        keras_attention("evaluate", str(run), "--test-data", str(test_data), flag, cwd=workdir)
        metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
        evaluation = metrics["test_data_evaluations"][str(test_data)]
        table[label] = {
            "sentences": evaluation["sentences"],
            **{
                name: {"bleu": evaluation[name]["bleu"], "chrf": evaluation[name]["chrf"]}
                for name in ("greedy", "beam")
            },
        }
    return table


def run_facts(run: Path) -> dict:
    """A trained run's training seconds, steps, learning rate, share of the original
    corpora (0 for the base run) and vocabulary sizes (`vocabulary_entries`:
    the tokens of each vocabulary file, which leaves out the padding entry)."""
    training = json.loads((run / "metrics.json").read_text(encoding="utf-8"))["training"]
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    sizes = {
        side: sum(1 for _ in (run / f"{side}_vocabulary.txt").open(encoding="utf-8"))
        for side in ("source", "target")
    }
    return {
        "seconds": training["seconds"],
        "epochs_run": training["epochs_run"],
        "steps_per_epoch": config["steps_per_epoch"],
        "learning_rate": config["learning_rate"],
        "mix_original": config["mix_original"],
        "time_budget_minutes": config["time_budget_minutes"],
        "vocabulary_entries": sizes,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--topic", choices=sorted(TOPICS), default="food")
    parser.add_argument(
        "--mix-original", type=float, help="adapt's --mix-original; none: adapt's default"
    )
    parser.add_argument(
        "--learning-rate", type=float, help="adapt's --learning-rate; none: adapt's default"
    )
    parser.add_argument(
        "--name",
        type=harness.record_name,
        help="the record's and the adapted run's name; none: the topic",
    )
    args = parser.parse_args(argv)
    record_key = args.name or args.topic
    machine = harness.print_machine_header()
    workdir = args.workdir.resolve()
    counts = split_topic(CORPUS, TOPICS[args.topic], workdir)
    print(", ".join(f"{name}: {count:,} pairs" for name, count in counts.items()), flush=True)
    base, adapted = workdir / "runs" / "base", workdir / "runs" / f"adapted-{record_key}"
    if not (base / "model.keras").is_file():
        keras_attention("train", "--data", str(workdir / "general.tsv"), "--out", str(base), cwd=workdir)  # fmt: skip
    if not (adapted / "model.keras").is_file():
        options = []  # adapt's own defaults unless given
        if args.mix_original is not None:
            options += ["--mix-original", str(args.mix_original)]
        if args.learning_rate is not None:
            options += ["--learning-rate", str(args.learning_rate)]
        keras_attention(
            "adapt", str(base), "--data", str(workdir / "topic-train.tsv"), *options,
            "--out", str(adapted), cwd=workdir,
        )  # fmt: skip
    tests = {"topic": workdir / "topic-test.tsv", "general": base / "splits" / "test.tsv"}
    adapted_facts = run_facts(adapted)
    record = {
        "topic_words": TOPICS[args.topic],
        "pairs": counts,
        "mix_original": adapted_facts["mix_original"],
        "base": run_facts(base),
        "adapted": adapted_facts,
        "bleu": {
            name: {test: scores(run, path, workdir) for test, path in tests.items()}
            for name, run in (("base", base), ("adapted", adapted))
        },
        "machine": machine,
    }
    for test in tests:
        for label in ("kept", "replaced"):
            before, after = (record["bleu"][n][test][label]["beam"]["bleu"] for n in ("base", "adapted"))  # fmt: skip
            print(f"{test:>7} test, beam, [UNK] {label}: {before:.2f} -> {after:.2f} ({after - before:+.2f})")  # fmt: skip
    harness.write_record(RESULTS, "runs", record_key, record)
    print(f"wrote {RESULTS} (runs.{record_key})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
