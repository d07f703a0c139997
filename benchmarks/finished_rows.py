"""Decoding that drops finished sentences from the batch, against computing every row.

A batch decodes for as many steps as its longest translation needs; before
2026-12-02 the model computed every row at every step, the finished ones
included. With `drop_finished=True` (what `Translator.strategy` builds, so
translation and the exports run it) `GreedySearch` and `BeamSearch` drop a
sentence's rows from the loop once it has finished. This script translates the
same test sources both ways, in one process, each way one `tf.function` of
`Translator.translate` (the exports' graph without the SavedModel), the two
taking turns over `--repeats` rounds (best kept):

- `every row`: `drop_finished=False`;
- `running rows`: `drop_finished=True`;

for greedy search and beam search (width 4) at each batch size, with the
batches as the test split draws them (`drawn`) and with the sources sorted by
length first (`by length`, as `translate --batch-size` and the export table's
BLEU passes batch them: similar lengths finish closer together, so less is
dropped). It checks that both ways give the same translations.

    python benchmarks/finished_rows.py --run-dir RUN [--batch-sizes 1,8,64] [--repeats 3]

The last line printed is `dropping finished rows: A.AAx greedy batch N, B.BBx
beam batch N` (N the largest batch size, batches as drawn).
"""

from __future__ import annotations

import argparse
import sys

import harness


def translate_function(translator, strategy):
    """A `tf.function` strings -> translations (strings) with `strategy`."""
    import tensorflow as tf

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def run(texts):
        return translator.translate(texts, strategy)["translation"]

    return run


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    harness.add_race_arguments(parser, sentences=256)
    args = parser.parse_args(argv)
    batch_sizes, translator, sources = harness.race_setup(args)
    import numpy as np

    drawn = sources[: args.sentences]
    orders = {"drawn": drawn, "by length": sorted(drawn, key=lambda s: (len(s.split()), s))}
    ratios = {}
    print("\nsentences/s | every row | running rows | ratio | same translations")
    for name, beam_width in (("greedy", 1), ("beam 4", 4)):
        dropping = translator.strategy(beam_width=beam_width)
        keeping = type(dropping).from_config({**dropping.get_config(), "drop_finished": False})
        functions = {
            "every row": translate_function(translator, keeping),
            "running rows": translate_function(translator, dropping),
        }
        for batch_size in batch_sizes:
            for order, texts in orders.items():
                if batch_size == 1 and order != "drawn":
                    continue  # one sentence per batch: the order changes nothing
                batches = harness.source_batches(texts, batch_size, args.sentences)
                count = sum(len(b) for b in batches)
                same = np.mean(
                    np.concatenate(
                        [functions["every row"](b) == functions["running rows"](b) for b in batches]
                    )
                )
                best = harness.race(functions, batches, args.repeats)
                ratio = best["every row"] / best["running rows"]
                ratios[name, batch_size, order] = ratio
                print(
                    f"{name} batch {batch_size} {order} | {count / best['every row']:.1f} | "
                    f"{count / best['running rows']:.1f} | {ratio:.2f}x | {same:.0%}",
                    flush=True,
                )
    largest = batch_sizes[-1]
    print(
        f"\ndropping finished rows: {ratios['greedy', largest, 'drawn']:.2f}x greedy batch "
        f"{largest}, {ratios['beam 4', largest, 'drawn']:.2f}x beam batch {largest}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
