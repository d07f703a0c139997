"""Where a decoding step's time goes: an export's greedy and beam signatures, op by op.

    python benchmarks/decode_profile.py --export exports/fra-eng/1 --run-dir runs/fra-eng \\
        --name default [--bleu] [--batch-sizes 1,8,64] [--sentences 64] [--repeats 3] \\
        [--out benchmarks/results/decode_profile.json]

For `serving_default` (greedy) and `beam_search` (the export's beam width) at each batch
size, the script feeds the first `--sentences` sources of the run's test split, in
batches of that size, to the SignatureDef in the export's own Session
(`SavedModelSession`, TF Serving's loading path). After one warm-up pass it times
`--repeats` untraced passes, then runs each batch once more with
`RunOptions(trace_level=FULL_TRACE)` and reads the step stats: every op executed, its
type (from the node's timeline label) and its time. It reports:

- `wall_ms`: the best untraced pass; `tokens`: the target tokens of the pass (the
  `length` output, end token included); `tokens_per_second`; `batch_latency_ms`: p50
  and p99 of the batches' best times (at batch size 1, per sentence);
- `iterations`: the decoding loop's iterations over the pass (`loop_figures`),
  `ms_per_iteration` (traced wall time over iterations) and `ops_per_iteration` (op
  executions under the loop's scope per iteration);
- `groups`: the share of the summed op time by kind (`GROUPS`: matrix multiplications,
  element-wise arithmetic, shape and copy ops, gathers and scatters, top-k and argmax,
  reductions and softmax, loop control, tensor arrays, text processing), and
  `op_types`: the ten op types that took the most time;
- `op_time_over_wall`: the summed op time over the traced wall time (below 1: time no op
  accounts for, e.g. the executor's scheduling between ops, or ops of both cores overlapping
  it when above).

The record is written as `exports.<--name>` of the results file, beside the records of
other exports (e.g. the same run exported with other options), each with its machine.

With `--bleu`, each signature also translates the run's whole test split (batches of 64)
and its sacreBLEU is recorded (`rows.<signature>.bleu`): a faster export is compared
with the same BLEU.

Tracing adds a little time to each op, so the traced wall time is above the untraced
one; shares are read from the traced run, speeds from the untraced runs.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import time
from pathlib import Path

import harness

harness.quiet_tensorflow()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_attention.evaluation.bleu import score_translations  # noqa: E402
from keras_attention.saved_model_session import SavedModelSession  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "decode_profile.json"
SIGNATURES = {"greedy": "serving_default", "beam": "beam_search"}
LOOP_CONTROL = {"Enter", "Exit", "Merge", "Switch", "NextIteration", "LoopCond", "RefEnter"}
GROUPS = {
    "matmul": re.compile(r"(MatMul|Einsum|Conv)"),
    "gather_scatter": re.compile(r"(Gather|Scatter|Lookup|OneHot)"),
    "top_k": re.compile(r"^(TopK|ArgMax|ArgMin|Unique)"),
    "reduce_softmax": re.compile(
        r"^(_Mkl)?(Softmax|LogSoftmax|Sum|Max|Min|Mean|Prod|All|Any|Cumsum|Cumprod)$"
    ),
    "loop_control": re.compile(r"^(" + "|".join(sorted(LOOP_CONTROL)) + r")$"),
    "tensor_array": re.compile(r"^(TensorArray|TensorList)"),
    "text": re.compile(
        r"(String|Regex|Utf8|Unicode|Ragged|Tokeniz|Wordpiece|SentencePiece|Normalize|Case)"
    ),
    "shape_copy": re.compile(
        r"^(_Mkl)?(Reshape|Transpose|ConcatV2|Concat|Pack|Unpack|Slice|StridedSlice|Tile|"
        r"ExpandDims|Squeeze|Identity|IdentityN|Shape|ShapeN|Size|Rank|Fill|Cast|Range|"
        r"Select|SelectV2|Where|ZerosLike|OnesLike|BroadcastTo|BroadcastArgs|Const|Placeholder|"
        r"ReadVariableOp|VarHandleOp|_Retval|_Arg|NoOp|Bitcast|EnsureShape|StopGradient)$"
    ),
}
LABEL = re.compile(r"=\s*([A-Za-z0-9_]+)\(")


def op_group(op_type: str) -> str:
    """The kind of an op type: `GROUPS`' first match, element-wise arithmetic otherwise."""
    for name, pattern in GROUPS.items():
        if pattern.search(op_type):
            return name
    return "elementwise"


def traced_ops(run_metadata) -> list[tuple[str, str, float]]:
    """(node name, op type, microseconds) of every op execution in the step stats."""
    ops = []
    for device in run_metadata.step_stats.dev_stats:
        for node in device.node_stats:
            match = LABEL.search(node.timeline_label)
            op_type = match.group(1) if match else node.node_name.rsplit("/", 1)[-1]
            micros = node.op_end_rel_micros - node.op_start_rel_micros
            ops.append((node.node_name, op_type, float(max(micros, node.all_end_rel_micros, 0))))
    return ops


def loop_figures(ops: list[tuple[str, str, float]]) -> tuple[int, int]:
    """(iterations, op executions) of the decoding loop: of the `LoopCond`s outside the
    encoder, the one executed most; its iterations are its executions less its entries
    (the executions of one of its `Enter` nodes), its ops those under its frame's scope."""
    counts = collections.Counter(name for name, _, _ in ops)
    types = {name: op_type for name, op_type, _ in ops}
    conds = [n for n in counts if types[n] == "LoopCond" and "/encoder" not in n]
    if not conds:
        return 0, 0
    cond = max(conds, key=counts.__getitem__)
    loop = cond.split("/LoopCond")[0]
    entries = max(
        (counts[n] for n in counts if n.startswith(loop + "/") and types[n] == "Enter"), default=1
    )
    scope = loop.rsplit("/", 1)[0] + "/"
    inside = sum(count for name, count in counts.items() if name.startswith(scope))
    return max(counts[cond] - entries, 1), inside


def run_batches(session, signature: str, batches: list[list[str]], **run_arguments) -> list:
    """Runs the signature on each batch; returns each run's `length` output."""
    defs = session.signature_defs[signature]
    text = defs.inputs[next(iter(defs.inputs))].name
    length = defs.outputs["length"].name
    return [
        session.session.run(
            length, {text: np.array([t.encode() for t in batch], dtype=object)}, **run_arguments
        )
        for batch in batches
    ]


def profile(session, signature: str, sources: list[str], batch_size: int, repeats: int) -> dict:
    """The figures of one signature at one batch size over `sources`."""
    batches = [sources[i : i + batch_size] for i in range(0, len(sources), batch_size)]
    lengths = run_batches(session, signature, batches)  # warm-up
    tokens = int(sum(np.sum(length) for length in lengths))
    per_batch = np.full((repeats, len(batches)), np.inf)
    for repeat in range(repeats):
        for index, batch in enumerate(batches):
            start = time.perf_counter()
            run_batches(session, signature, [batch])
            per_batch[repeat, index] = time.perf_counter() - start
    metadata = tf.compat.v1.RunMetadata()
    options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
    ops, start = [], time.perf_counter()
    for batch in batches:
        run_batches(session, signature, [batch], options=options, run_metadata=metadata)
        ops += traced_ops(metadata)
        metadata.Clear()
    traced = time.perf_counter() - start
    by_type, by_group = collections.Counter(), collections.Counter()
    for _, op_type, micros in ops:
        by_type[op_type] += micros
        by_group[op_group(op_type)] += micros
    total = sum(by_type.values()) or 1.0
    iterations, inside = loop_figures(ops)
    wall = float(per_batch.sum(axis=1).min())
    latency = per_batch.min(axis=0) * 1e3
    return {
        "sentences": len(sources),
        "batches": len(batches),
        "wall_ms": round(wall * 1e3, 3),
        "traced_wall_ms": round(traced * 1e3, 3),
        "tokens": tokens,
        "tokens_per_second": round(tokens / wall, 1),
        "batch_latency_ms": {
            "p50": round(float(np.percentile(latency, 50)), 3),
            "p99": round(float(np.percentile(latency, 99)), 3),
        },
        "iterations": iterations,
        "ms_per_iteration": round(traced * 1e3 / iterations, 4) if iterations else None,
        "ops_per_iteration": round(inside / iterations, 1) if iterations else None,
        "op_executions": len(ops),
        "op_time_over_wall": round(total / 1e6 / traced, 3),
        "groups": {k: round(v / total, 4) for k, v in by_group.most_common()},
        "op_types": {k: round(v / total, 4) for k, v in by_type.most_common(10)},
    }


def test_bleu(session, signature: str, run_dir: Path, batch_size: int = 64) -> dict:
    """sacreBLEU of the signature's `translation` output on the run's whole test split."""
    sources, references = harness.test_sources(run_dir)
    defs = session.signature_defs[signature]
    text = defs.inputs[next(iter(defs.inputs))].name
    output = defs.outputs["translation"].name
    translations = []
    for i in range(0, len(sources), batch_size):
        batch = np.array([t.encode() for t in sources[i : i + batch_size]], dtype=object)
        translations += [t.decode() for t in session.session.run(output, {text: batch})]
    scores = score_translations(translations, references)
    return {"sentences": len(sources), "bleu": scores.bleu, "signature": scores.bleu_signature}


def print_row(name: str, batch: int, row: dict) -> None:
    groups = ", ".join(f"{k} {v:.0%}" for k, v in list(row["groups"].items())[:5])
    print(
        f"{name:>6} batch {batch:>3}: {row['wall_ms']:9.1f} ms, {row['tokens_per_second']:8.0f} "
        f"tokens/s, p50 {row['batch_latency_ms']['p50']:.1f} ms a batch, {row['iterations']:>4} iterations, {row['ms_per_iteration'] or 0:.3f} ms and "
        f"{row['ops_per_iteration'] or 0:.0f} ops each; op time / wall {row['op_time_over_wall']:.2f}; "
        f"{groups}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--export", type=Path, required=True, help="an export's version directory")
    parser.add_argument(
        "--run-dir", type=Path, required=True, help="the run whose test split to feed"
    )
    parser.add_argument("--batch-sizes", default="1,8,64")
    parser.add_argument(
        "--sentences", type=int, default=64, help="test sources decoded at each batch size"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--bleu",
        action="store_true",
        help="also translate the whole test split with each signature (batches of 64) and "
        "record its sacreBLEU",
    )
    parser.add_argument(
        "--name",
        required=True,
        help="the record's name under `exports` in --out, e.g. default or shortlist_100",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    machine = harness.print_machine_header()
    batch_sizes = [int(size) for size in args.batch_sizes.split(",")]
    sources, _ = harness.test_sources(args.run_dir, args.sentences)
    if len(sources) < max(batch_sizes):
        parser.error(f"{args.run_dir}'s test split has {len(sources)} sources")
    rows = {}
    with SavedModelSession(args.export) as session:
        for name, signature in SIGNATURES.items():
            if signature not in session.signature_defs:
                print(f"{args.export} has no {signature} signature; skipped")
                continue
            rows[name] = {}
            for batch in batch_sizes:
                rows[name][str(batch)] = row = profile(
                    session, signature, sources, batch, args.repeats
                )
                print_row(name, batch, row)
            if args.bleu:
                rows[name]["bleu"] = test_bleu(session, signature, args.run_dir)
                print(f"{name:>6} BLEU {rows[name]['bleu']['bleu']:.2f}", flush=True)
    record = {"export": str(args.export), "rows": rows, "machine": machine}
    harness.write_record(args.out, "exports", args.name, record)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
