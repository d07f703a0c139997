"""Greedy translation speed: the exported SavedModel on TF Serving's path vs. an eager loop.

Measures sentences/second, strings in and strings out, at several batch
sizes, in one process:

- `eager loop`: the way a notebook decodes: text processing eagerly, then a
  plain Python `for` loop over the steps that calls `model.next_logits`
  eagerly and picks the argmax, stopping when every sentence has ended.
- `export (Session)`: the `serving_default` signature of an export written
  by `TranslatorExporter`, loaded as `tensorflow_model_server` loads it (tag
  `serve` in a `tf.compat.v1.Session`) and run through the SignatureDef's
  tensor names: one `tf.while_loop` in the graph.
- `export + XLA (Session)`: the same with `jit_compile=True` on the decoding
  loop (skipped with `--no-jit`; reported as failed if the Session path
  cannot compile it).

Both decode greedily with the same model, so they emit the same tokens; the
script checks that and prints the share of identical translations.

Then (unless `--no-design`) the export's decoding inputs against the design
before them, beam width 4, on the Session path: the `search` signature of an
export with decoding inputs (one graph for every beam width, the width and
n-best fed as tensors, `beam_width` 4 given) against the `beam_search` one
of an export written with `decoding_inputs=False` (text only, beam width 4
fixed in the graph), both of the same model. It prints their sentences/second and
the ratio new / before (target >= 0.9x) at each batch size, checks that both
give the same translations, and the cost of `n_best` 4 against `n_best` 1
on the new export (seconds per sentence, target <= 1.2x).

    python benchmarks/export_decode.py [--run-dir RUN] [--batch-sizes 1,8,64]

Without `--run-dir` a model is trained for a few dozen steps on the bundled
corpus into a temporary directory first: `--size small` (64-dim embeddings,
64 encoder and 128 decoder units, 2,000/3,000-token vocabularies; the
default) or `--size default` (TrainConfig's sizes: 256/256/512,
12,000/16,000).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import harness

harness.quiet_tensorflow()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_attention.export import SavedModelSession, TranslatorExporter  # noqa: E402
from keras_attention.inference.trained_run import load_translator  # noqa: E402
from keras_attention.runs.run_directory import RunDirectory  # noqa: E402


def eager_greedy(translator, texts: list[str]) -> list[bytes]:
    """Greedy decoding in a plain Python loop over steps, every op eager."""
    model = translator.model
    target = translator.target_vectorizer
    source_ids = translator.source_vectorizer(tf.constant(texts))
    state = model.initial_decode_state(source_ids)
    ids = tf.fill([len(texts)], target.start_id)
    finished = np.zeros(len(texts), dtype=bool)
    emitted = []
    for step in range(translator.max_output_length):
        logits, state, _ = model.next_logits(step, ids, state)
        next_ids = tf.argmax(logits, axis=-1, output_type=tf.int32).numpy()
        next_ids[finished] = target.pad_id
        emitted.append(next_ids)
        finished |= next_ids == target.end_id
        if finished.all():
            break
        ids = tf.constant(next_ids)
    return target.decode(tf.constant(np.stack(emitted, axis=1))).numpy().tolist()


def session_greedy(session: SavedModelSession, texts: list[str]) -> list[bytes]:
    batch = np.array([t.encode("utf-8") for t in texts], dtype=object)
    return session.run("serving_default", {"text": batch}, ["translation"])["translation"].tolist()


def throughput(
    translate, sentences: list[str], batch_size: int, repeats: int
) -> tuple[float, list]:
    """Best sentences/second over `repeats` passes (after one untimed warmup batch)."""
    batches = [sentences[i : i + batch_size] for i in range(0, len(sentences), batch_size)]
    translate(batches[0])
    outputs = []

    def one_pass():
        outputs[:] = [t for batch in batches for t in translate(batch)]

    return len(sentences) / min(harness.time_calls(one_pass, repeats, warmup=0)), outputs


def beam_outputs(
    session: SavedModelSession, texts: list[str], signature: str = "beam_search", **inputs
) -> list:
    batch = np.array([t.encode("utf-8") for t in texts], dtype=object)
    feeds = {"text": batch, **{k: np.int32(v) for k, v in inputs.items()}}
    return session.run(signature, feeds, ["translation"])["translation"].tolist()


def compare_designs(
    run_dir: Path, scratch: Path, sentences: list[str], batch_sizes: list[int], repeats: int
) -> dict:
    """Beam width 4: the export with decoding inputs vs the design before them; n-best 4 vs 1."""
    sessions = {}
    for name, decoding_inputs in (("before", False), ("inputs", True)):
        exporter = TranslatorExporter.from_run(
            run_dir, beam_width=4, decoding_inputs=decoding_inputs
        )
        sessions[name] = SavedModelSession(exporter.export(scratch / f"design-{name}").path)
    old, new = sessions["before"], sessions["inputs"]
    figures: dict[str, dict[int, float]] = {"before": {}, "inputs": {}, "ratio": {}}
    n_best: dict[str, dict[int, float]] = {"n_best 1": {}, "n_best 4": {}, "ratio": {}}
    print("\nbeam width 4: search (decoding inputs) vs beam_search before them (Session path)")
    for batch_size in batch_sizes:
        runs = {
            "before": lambda texts: beam_outputs(old, texts),
            "inputs": lambda texts: beam_outputs(new, texts, "search", beam_width=4),
            "n_best 1": lambda texts: beam_outputs(new, texts, "search", beam_width=4, n_best=1),
            "n_best 4": lambda texts: beam_outputs(new, texts, "search", beam_width=4, n_best=4),
        }
        speeds, outputs = {}, {}
        # Alternate the designs over the repeats, so drift on a shared machine hits both.
        for _ in range(repeats):
            for name, translate in runs.items():
                speed, outputs[name] = throughput(translate, sentences, batch_size, 1)
                speeds[name] = max(speeds.get(name, 0.0), speed)
        if outputs["before"] != outputs["inputs"]:
            print(f"  batch {batch_size}: the two designs' translations differ")
        figures["before"][batch_size] = speeds["before"]
        figures["inputs"][batch_size] = speeds["inputs"]
        figures["ratio"][batch_size] = speeds["inputs"] / speeds["before"]
        n_best["n_best 1"][batch_size] = speeds["n_best 1"]
        n_best["n_best 4"][batch_size] = speeds["n_best 4"]
        n_best["ratio"][batch_size] = speeds["n_best 1"] / speeds["n_best 4"]
    print(f"{'sentences/s':<28}" + "".join(f"{f'batch {b}':>12}" for b in batch_sizes))
    for name, label in (("before", "before (text only, fixed)"), ("inputs", "decoding inputs")):
        print(f"{label:<28}" + "".join(f"{figures[name][b]:>12.1f}" for b in batch_sizes))
    print(
        f"{'  inputs / before':<28}"
        + "".join(f"{figures['ratio'][b]:>11.2f}x" for b in batch_sizes)
        + "   (target >= 0.9x)"
    )
    for name in ("n_best 1", "n_best 4"):
        print(f"{name:<28}" + "".join(f"{n_best[name][b]:>12.1f}" for b in batch_sizes))
    print(
        f"{'  cost of n_best 4 / 1':<28}"
        + "".join(f"{n_best['ratio'][b]:>11.2f}x" for b in batch_sizes)
        + "   (target <= 1.2x)"
    )
    for session in sessions.values():
        session.close()
    return {"sentences_per_second": figures, "n_best_sentences_per_second": n_best}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    harness.add_run_arguments(parser, train_steps=60)
    parser.add_argument("--batch-sizes", default="1,8,64", help="comma-separated batch sizes")
    parser.add_argument(
        "--sentences", type=int, default=128, help="sentences translated per measurement"
    )
    parser.add_argument("--repeats", type=int, default=2, help="timed passes (best is kept)")
    parser.add_argument("--no-jit", dest="jit", action="store_false", help="skip XLA")
    parser.add_argument(
        "--no-design",
        dest="design",
        action="store_false",
        help="skip the decoding inputs vs the design before them",
    )
    parser.add_argument(
        "--only-design", action="store_true", help="only the decoding inputs comparison"
    )
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    machine = harness.print_machine_header()

    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        run_dir = (
            Path(args.run_dir)
            if args.run_dir
            else harness.train_small_run(scratch, args.train_steps, args.size)
        )
        translator = load_translator(run_dir)
        with open(RunDirectory(run_dir).test_split, encoding="utf-8") as f:
            pool = [line.split("\t")[0] for line in f]
        rng = np.random.default_rng(0)
        sentences = [pool[i] for i in rng.integers(0, len(pool), size=args.sentences)]

        design = (
            compare_designs(run_dir, scratch, sentences, batch_sizes, args.repeats)
            if args.design or args.only_design
            else None
        )
        if args.only_design:
            if args.json:
                harness.write_json(args.json, {"design": design}, machine)
            return 0
        methods = {"eager loop": lambda texts: eager_greedy(translator, texts)}
        sessions = []
        for name, jit in (("export (Session)", False), ("export + XLA (Session)", True)):
            if jit and not args.jit:
                continue
            with harness.Stopwatch() as watch:
                exporter = TranslatorExporter.from_run(run_dir, jit_compile=jit)
                session = SavedModelSession(exporter.export(scratch / "m").path)
            sessions.append(session)
            print(f"{name}: exported and loaded in {watch.seconds:.1f} s")
            methods[name] = lambda texts, session=session: session_greedy(session, texts)

        config = translator.model.get_config()
        print(
            f"Model: embedding {config['embedding_dim']}, encoder {config['encoder_units']}, "
            f"decoder {config['decoder_units']}, vocabularies {config['source_vocabulary_size']}/"
            f"{config['target_vocabulary_size']}, {config['attention']} attention; "
            f"{len(sentences)} test sentences per measurement, max_output_length "
            f"{translator.max_output_length}"
        )
        results: dict[str, dict[int, float | str]] = {name: {} for name in methods}
        agreement: dict[str, dict[int, float]] = {name: {} for name in methods}
        for batch_size in batch_sizes:
            reference = None
            for name, translate in methods.items():
                try:
                    speed, outputs = throughput(translate, sentences, batch_size, args.repeats)
                except Exception as error:  # noqa: BLE001 - report and go on
                    results[name][batch_size] = f"failed: {type(error).__name__}: {error}"[:300]
                    continue
                results[name][batch_size] = speed
                reference = outputs if reference is None else reference
                agreement[name][batch_size] = float(
                    np.mean([a == b for a, b in zip(outputs, reference, strict=True)])
                )

        header = f"{'sentences/s':<24}" + "".join(f"{f'batch {b}':>12}" for b in batch_sizes)
        print(header)
        eager = results["eager loop"]
        for name, row in results.items():
            cells = "".join(
                f"{v:>12.1f}" if isinstance(v, float) else f"{'failed':>12}" for v in row.values()
            )
            print(f"{name:<24}{cells}")
            if name != "eager loop":
                ratios = "".join(
                    f"{row[b] / eager[b]:>11.1f}x"
                    if isinstance(row.get(b), float) and isinstance(eager.get(b), float)
                    else f"{'-':>12}"
                    for b in batch_sizes
                )
                print(f"{'  vs. eager loop':<24}{ratios}")
        for name, row in results.items():
            for batch_size, value in row.items():
                if isinstance(value, str):
                    print(f"{name} at batch {batch_size}: {value}")
        for name, row in agreement.items():
            if row and min(row.values()) < 1.0:
                print(f"{name}: identical translations {row} (share of sentences)")
        if args.json:
            harness.write_json(
                args.json,
                {"sentences_per_second": results, "agreement": agreement, "design": design},
                machine,
            )
        for session in sessions:
            session.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
