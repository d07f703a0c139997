"""Beam search speed: `keras_attention.seq2seq.BeamSearchDecoder` vs `Seq2Seq`'s own, and TFA's.

One default-config `Seq2Seq` (the model `keras-attention train` builds by default:
Luong decoder, GRU, scaled cosine score, tied output; float32) with untrained,
seeded weights and word vocabularies of `--pairs` pairs of the bundled corpus (every
k-th line) decodes the same batches of those pairs' sources (evenly spread over them)
three ways:

- `Seq2Seq`: `keras_attention.decoding.BeamSearch` over `Seq2Seq.step_function`
  (as `Translator` runs it, with TFA's ranking, `tfa_scoring`, as the decoders rank);
- `BeamSearchDecoder`: `keras_attention.seq2seq`'s, over an `AttentionWrapper` that
  holds the same weights (`seq2seq_mapping.py` says how the decoder maps);
- with `--tfa-python PATH`: TensorFlow Addons 0.23's `BeamSearchDecoder` on the same
  weights and batches, in that interpreter (a side environment, never a dependency:
  `seq2seq_decoder_speed_tfa.py` runs there).

Every search has the same beam width, length penalty and most steps, and ranks as
TFA's does (the length penalty's length leaves the end token out:
`BeamSearch.tfa_scoring` on the `Seq2Seq` side), so the three run the same search;
the script prints the share of sentences whose ids agree (up to the end token).
The timed part is the decoding from the encoder's outputs (the bridge, the keys and
the search loop, in `tf.function`); the encoder runs once per batch before. Each
pass decodes every batch; the first pass of each decoder is not timed, the decoders
take turns, and the median pass gives sentences/s. The TFA process runs between
blocks of the in-process passes, one after the other (its ratio crosses processes).

    python benchmarks/seq2seq_decoder_speed.py [--tfa-python $TFA_PYTHON]

where `$TFA_PYTHON` is the Python of a venv with `tensorflow-cpu==2.15.1` and
`tensorflow-addons==0.23.0` (the results record the command with that name).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import harness

harness.quiet_tensorflow()

import keras  # noqa: E402
import numpy as np  # noqa: E402
import seq2seq_mapping  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_attention import seq2seq  # noqa: E402
from keras_attention.data import load_corpus  # noqa: E402
from keras_attention.decoding import BeamSearch  # noqa: E402
from keras_attention.models import Seq2Seq  # noqa: E402
from keras_attention.runs.train_config import FLOAT32_TARGET_WORDS, VOCABULARY_SIZES  # noqa: E402
from keras_attention.text import END_ID, START_ID, TextVectorizer, build_vocabulary  # noqa: E402

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "seq2seq_decoder_speed.json"
COMPANION = HERE / "seq2seq_decoder_speed_tfa.py"
NAMES = ("Seq2Seq", "BeamSearchDecoder")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=256, help="sentences per pass")
    parser.add_argument("--batch-size", type=int, default=64, help="sentences per batch")
    parser.add_argument("--repeats", type=int, default=4, help="timed passes per decoder")
    parser.add_argument("--beam-width", type=int, default=4)
    parser.add_argument("--length-penalty", type=float, default=0.6, help="GNMT alpha")
    parser.add_argument("--max-steps", type=int, default=50, help="most decoding steps")
    parser.add_argument(
        "--pairs", type=int, default=20000, help="corpus pairs the vocabularies are built from"
    )
    parser.add_argument("--seed", type=int, default=0, help="weights' seed")
    parser.add_argument("--tfa-python", help="a Python with tensorflow-addons 0.23 (optional)")
    parser.add_argument(
        "--tfa-blocks", type=int, default=2, help="TFA processes, alternating with ours"
    )
    parser.add_argument("--json", default=str(RESULTS), help="results file ('' for none)")
    return parser.parse_args(argv)


def build_model(pairs, seed):
    """`(model, source_vectorizer)`: a default-config `Seq2Seq` with seeded weights,
    word vocabularies of `pairs` at the default run's float32 sizes."""
    keras.utils.set_random_seed(seed)
    source_size, _ = VOCABULARY_SIZES["words"]
    source = build_vocabulary([s for s, _ in pairs], source_size)
    target = build_vocabulary([t for _, t in pairs], FLOAT32_TARGET_WORDS)
    model = Seq2Seq(len(source), len(target), **harness.seq2seq_arguments())
    model.build()
    return model, TextVectorizer(source, max_length=30)


def encoder_outputs(model, source_ids):
    """`(annotations, source_mask, summary)` of one batch of source ids."""
    annotations, summary = model.encoder(source_ids, training=False)
    return annotations, tf.not_equal(source_ids, 0), summary


def decoders(model, search):
    """The two in-process decoders, `tf.function`s of `(annotations, mask, summary)`
    returning the best hypothesis' ids, and the mapped seq2seq objects' weights."""
    strategy = BeamSearch(
        beam_width=search["beam_width"],
        length_penalty=search["length_penalty"],
        max_steps=search["max_steps"],
        end_id=search["end_id"],
    )
    strategy.tfa_scoring = True  # TFA's ranking: the same search as the decoders'

    def seq2seq_decode(annotations, source_mask, summary):
        state = model.decoder.initial_state(annotations, source_mask, summary)
        start_ids = tf.fill([tf.shape(annotations)[0]], search["start_id"])
        result = strategy(model.step_function(state), state, start_ids)
        return result.tokens, result.lengths

    weights = seq2seq_mapping.seq2seq_weights(model)
    parts = seq2seq_mapping.DecoderParts(seq2seq, keras, tf, weights, search)
    signature = [
        tf.TensorSpec([None, None, model.decoder.combine.kernel.shape[0] - model.decoder.units]),
        tf.TensorSpec([None, None], tf.bool),
        tf.TensorSpec([None, weights["bridge/kernel"].shape[0]]),
    ]
    functions = {
        "Seq2Seq": tf.function(seq2seq_decode, input_signature=signature),
        "BeamSearchDecoder": tf.function(parts.decode, input_signature=signature),
    }
    return functions, weights


ROWS = {
    "Seq2Seq": lambda result: seq2seq_mapping.rows_of_lengths(*result),
    "BeamSearchDecoder": lambda ids: seq2seq_mapping.rows_before_end(ids, END_ID),
}
"""Each decoder's output as rows of ids before the end token."""


def decode_all(name, function, inputs):
    """`ROWS[name]` of every batch's output."""
    rows = []
    for batch in inputs:
        rows += ROWS[name](tf.nest.map_structure(lambda t: t.numpy(), function(*batch)))
    return rows


def timed_pass(function, inputs):
    with harness.Stopwatch() as watch:
        for batch in inputs:
            tf.nest.map_structure(lambda t: t.numpy(), function(*batch))
    return watch.seconds


def run_companion(python, arrays_path, repeats):
    """The TFA companion's JSON result (its ids and pass seconds)."""
    env = dict(os.environ, TF_ADDONS_PY_OPS="1", TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("PYTHONPATH", None)
    result = subprocess.run(
        [python, str(COMPANION), str(arrays_path), "--repeats", str(repeats)],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    if result.returncode != 0:
        raise RuntimeError(f"The TFA companion failed: {result.stderr.strip()[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def save_arrays(path, weights, inputs, search):
    arrays = {f"w/{name}": value for name, value in weights.items()}
    for i, batch in enumerate(inputs):
        for part, value in zip(("annotations", "mask", "summary"), batch, strict=True):
            arrays[f"{part}/{i}"] = value.numpy()
    arrays["search"] = np.array(json.dumps({**search, "batches": len(inputs)}))
    np.savez(path, **arrays)


def summary_of(seconds, sentences):
    median = statistics.median(seconds)
    return {
        "pass_seconds": seconds,
        "median_seconds": median,
        "sentences_per_s": sentences / median,
    }


def main(argv=None):
    args = parse_args(argv)
    machine = harness.print_machine_header()
    if args.tfa_python:  # recorded without this machine's path of the side environment
        machine["command"] = machine["command"].replace(args.tfa_python, "$TFA_PYTHON")
    pairs = load_corpus(max_pairs=args.pairs).pairs
    model, vectorizer = build_model(pairs, args.seed)
    step = max(1, len(pairs) // args.sentences)
    texts = [source for source, _ in pairs[::step]][: args.sentences]
    texts = texts[: len(texts) - len(texts) % args.batch_size]
    batches = [
        vectorizer(tf.constant(texts[i : i + args.batch_size]))
        for i in range(0, len(texts), args.batch_size)
    ]
    inputs = [encoder_outputs(model, ids) for ids in batches]
    search = {
        "beam_width": args.beam_width,
        "length_penalty": args.length_penalty,
        "max_steps": args.max_steps,
        "start_id": START_ID,
        "end_id": END_ID,
    }
    vocabularies = (model.encoder.vocabulary_size, model.decoder.vocabulary_size)
    print(
        f"Default-config Seq2Seq, untrained (seed {args.seed}), vocabularies "
        f"{vocabularies[0]}/{vocabularies[1]}; {len(texts)} sentences in batches of "
        f"{args.batch_size}; beam {args.beam_width}, length penalty {args.length_penalty} "
        f"(TFA's), at most {args.max_steps} steps",
        flush=True,
    )
    functions, weights = decoders(model, search)
    rows = {name: decode_all(name, function, inputs) for name, function in functions.items()}
    agreement = {
        "BeamSearchDecoder_vs_Seq2Seq": seq2seq_mapping.identical_share(
            rows["BeamSearchDecoder"], rows["Seq2Seq"]
        )
    }
    lengths = [len(row) for row in rows["Seq2Seq"]]  # the end token not counted
    print(
        f"Identical ids, BeamSearchDecoder vs Seq2Seq: "
        f"{agreement['BeamSearchDecoder_vs_Seq2Seq']:.1%} (mean length "
        f"{statistics.mean(lengths):.1f} tokens)",
        flush=True,
    )

    blocks = max(1, args.tfa_blocks) if args.tfa_python else 1
    seconds = {name: [] for name in NAMES}
    tfa_runs = []
    with tempfile.TemporaryDirectory() as scratch:
        arrays_path = Path(scratch) / "seq2seq_decoder_speed.npz"
        if args.tfa_python:
            save_arrays(arrays_path, weights, inputs, search)
        for block in range(blocks):
            for repeat in range(block, args.repeats, blocks):
                order = NAMES if repeat % 2 == 0 else NAMES[::-1]
                for name in order:
                    seconds[name].append(timed_pass(functions[name], inputs))
            if args.tfa_python:
                per_run = max(1, args.repeats // blocks)
                tfa_runs.append(run_companion(args.tfa_python, arrays_path, per_run))
                print(f"TFA process {block + 1}/{blocks} done", flush=True)

    results = {name: summary_of(seconds[name], len(texts)) for name in NAMES}
    ratio = results["BeamSearchDecoder"]["median_seconds"] / results["Seq2Seq"]["median_seconds"]
    for name in NAMES:
        print(f"{name:>18}: {results[name]['sentences_per_s']:.1f} sentences/s", flush=True)
    print(f"BeamSearchDecoder / Seq2Seq time: {ratio:.3f}x (target <= 1.2x)", flush=True)
    tfa = None
    if tfa_runs:
        tfa_seconds = [s for run in tfa_runs for s in run["pass_seconds"]]
        tfa = {
            **summary_of(tfa_seconds, len(texts)),
            "versions": tfa_runs[0]["versions"],
            "processes": len(tfa_runs),
        }
        tfa_rows = [tuple(row) for row in tfa_runs[0]["rows"]]
        agreement["TFA_vs_BeamSearchDecoder"] = seq2seq_mapping.identical_share(
            tfa_rows, rows["BeamSearchDecoder"]
        )
        tfa["ratio_BeamSearchDecoder_over_TFA"] = (
            results["BeamSearchDecoder"]["median_seconds"] / tfa["median_seconds"]
        )
        print(
            f"{'TFA ' + tfa['versions']['tensorflow_addons']:>18}: "
            f"{tfa['sentences_per_s']:.1f} sentences/s (TensorFlow "
            f"{tfa['versions']['tensorflow']}, another process); BeamSearchDecoder / TFA "
            f"time: {tfa['ratio_BeamSearchDecoder_over_TFA']:.3f}x; identical ids, TFA vs "
            f"BeamSearchDecoder: {agreement['TFA_vs_BeamSearchDecoder']:.1%}",
            flush=True,
        )
    if args.json:
        payload = {
            "command": machine["command"],
            "model": {
                "config": "TrainConfig defaults, float32, no dropout",
                "weights": f"untrained, seed {args.seed}",
                "source_vocabulary_size": vocabularies[0],
                "target_vocabulary_size": vocabularies[1],
            },
            "sentences": len(texts),
            "batch_size": args.batch_size,
            "search": search,
            "mean_output_tokens": statistics.mean(lengths),
            "decoders": results,
            "ratio_BeamSearchDecoder_over_Seq2Seq": ratio,
            "tfa": tfa,
            "identical_ids": agreement,
        }
        harness.write_json(args.json, payload, machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
