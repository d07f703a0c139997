"""A run's LiteRT export against its SavedModel: sizes, speed, agreement, ops.

One trained run (`--run-dir`) is exported

- as a SavedModel computing in float32 over the whole vocabulary
  (`--precision float32 --weights float32 --shortlist none`, beam width 4,
  the CLI's length penalty), run as `tensorflow_model_server` runs it: tag
  `serve` in a `tf.compat.v1.Session`, the SignatureDef's tensor names
  (`SavedModelSession`): `serving_default` (greedy) and `beam_search`;
- as a SavedModel with int8 weights (`--weights int8`, the same otherwise),
  for the agreement of the int8 models with it (no speed measured);
- as LiteRT models (`LiteRTExporter`, the code of `keras-attention export
  --format litert`) once per `--weights` (float32, float16, int8), run in
  LiteRT's interpreter (`ai_edge_litert`) through `LiteRTTranslator` (the
  text side in plain Python), greedy and beam (the same beam width and
  length penalty); and, for comparison with `int8`, `int8-dynamic-range`:
  the float32 function converted with LiteRT's own post-training
  dynamic-range quantization (`Optimize.DEFAULT`: int8 weights and int8
  kernels that quantize their inputs on the fly), which the export does not
  offer;
- with a vocabulary shortlist of `--shortlist` K target ids per source id
  (`VocabularyShortlist.from_run`, the default frequent ids): a float32
  SavedModel exported with it (agreement and BLEU only) and LiteRT models
  exported with it (`--shortlist-weights`), measured as the others and
  compared with that SavedModel too.

Measured, in this one process:

- size: each `.tflite` file, against the bytes of the SavedModel's
  `variables/` directory; the op kinds of each model (Flex ops: 0 expected);
- agreement: every distinct source of the run's test split (or the first
  `--max-sentences`) translated by both, batch `--agreement-batch`: the share
  of sentences whose LiteRT tokens equal the float32 SavedModel's (and the
  int8 SavedModel's), and sacreBLEU of both (all references), greedy and beam;
- speed: batch 1 (`--latency-sentences` sentences one at a time: median and
  99th-percentile milliseconds) and batch 8 (the first `--throughput-sentences`
  sentences: target tokens per second, best of `--repeats` passes), LiteRT
  (each weights) against the SavedModel on the Session path. The LiteRT
  interpreter runs with `--threads` CPU threads; TensorFlow with its defaults.

Writes `benchmarks/results/litert_export.json` (with the machine record) and
prints a table; docs/on-device.md renders its figures.

    python benchmarks/litert_export.py --run-dir runs/fra-eng
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import harness

harness.quiet_tensorflow()

import numpy as np  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "litert_export.json"
WEIGHTS = ("float32", "float16", "int8", "int8-dynamic-range")
MODES = {"greedy": "serving_default", "beam": "beam_search"}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", required=True, help="a trained run")
    parser.add_argument("--work-dir", default=None, help="where the exports go (default: temp)")
    parser.add_argument("--weights", default=",".join(WEIGHTS), help="comma-separated")
    parser.add_argument("--max-sentences", type=int, default=None)
    parser.add_argument("--agreement-batch", type=int, default=32)
    parser.add_argument("--latency-sentences", type=int, default=32)
    parser.add_argument("--throughput-sentences", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--beam-width", type=int, default=4)
    parser.add_argument(
        "--shortlist", type=int, default=100, help="K of the shortlisted models (0: none)"
    )
    parser.add_argument("--shortlist-weights", default="float32,int8", help="comma-separated")
    parser.add_argument("--output", default=str(RESULTS))
    return parser.parse_args(argv)


def saved_model_translate(session, signature, sources, batch_size):
    """`(tokens lists, translations)` of a SavedModel signature, `batch_size` at a time."""
    tokens, translations = [], []
    for start in range(0, len(sources), batch_size):
        batch = np.array([s.encode("utf-8") for s in sources[start : start + batch_size]])
        out = session.run(signature, {"text": batch})
        for row in range(len(batch)):
            length = int(out["length"][row])
            tokens.append([t.decode("utf-8") for t in out["tokens"][row][:length]])
            translations.append(out["translation"][row].decode("utf-8"))
    return tokens, translations


def latency_ms(translate, sentences):
    """Milliseconds of each one-sentence call (after one warmup call)."""
    translate(sentences[:1])
    times = []
    for sentence in sentences:
        start = time.perf_counter()
        translate([sentence])
        times.append((time.perf_counter() - start) * 1000)
    return times


def throughput(translate, sentences, batch_size, repeats, count_tokens):
    """Target tokens per second at `batch_size`, best of `repeats` passes."""
    best, tokens = None, 0
    for _ in range(repeats):
        start = time.perf_counter()
        tokens = 0
        for i in range(0, len(sentences), batch_size):
            tokens += count_tokens(translate(sentences[i : i + batch_size]))
        seconds = time.perf_counter() - start
        best = seconds if best is None else min(best, seconds)
    return tokens / best


def speed(translate, sentences_1, sentences_8, repeats, count_tokens):
    times = latency_ms(translate, sentences_1)
    return {
        "batch1_p50_ms": statistics.median(times),
        "batch1_p99_ms": float(np.percentile(times, 99)),
        "batch8_tokens_per_second": throughput(translate, sentences_8, 8, repeats, count_tokens),
    }


def dynamic_range_exporter():
    """`LiteRTExporter` converting with LiteRT's post-training dynamic-range quantization."""
    import tensorflow as tf

    from keras_attention.export.litert.exporter import LiteRTExporter

    class DynamicRange(LiteRTExporter):
        def convert(self, mode: str) -> bytes:
            converter = tf.lite.TFLiteConverter.from_concrete_functions(
                [self.decode_function(mode)], self.translator.model
            )
            converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
            return converter.convert()

    return DynamicRange


def main(argv=None):
    args = parse_args(argv)
    info = harness.print_machine_header()
    from keras_attention.evaluation.bleu import score_translations
    from keras_attention.export.export_settings import ExportSettings
    from keras_attention.export.litert.exporter import LiteRTExporter
    from keras_attention.export.translator_exporter import export_translator
    from keras_attention.saved_model_session import SavedModelSession
    from keras_attention_client.litert_translator import LiteRTTranslator

    DynamicRangeExporter = dynamic_range_exporter()  # noqa: N806

    work = Path(args.work_dir or tempfile.mkdtemp(prefix="litert_bench_"))
    sources, references = harness.test_sources(args.run_dir, args.max_sentences)
    print(f"{len(sources)} test sources of {args.run_dir}")

    base = work / "savedmodel"
    shutil.rmtree(base, ignore_errors=True)
    settings = ExportSettings(precision="float32", weights="float32", shortlist=None)
    exported = export_translator(args.run_dir, base, settings=settings, beam_width=args.beam_width)
    variables = harness.variables_bytes(exported.path)
    length_penalty = exported.manifest.decoding["beam_search"]["length_penalty"]
    print(f"SavedModel float32: variables {variables / 1e6:.1f} MB")

    result = {
        "command": "python benchmarks/"
        + Path(__file__).name
        + " "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "run_dir": str(Path(args.run_dir).resolve()),
        "test_sentences": len(sources),
        "beam_width": args.beam_width,
        "length_penalty": length_penalty,
        "litert_threads": args.threads,
        "saved_model": {"precision": "float32", "weights": "float32", "variables_bytes": variables},
        "litert": {},
    }

    def count_saved(outputs):
        return sum(len(t) for t in outputs[0])

    def count_litert(results):
        return sum(r.length for r in results)

    reference = {}
    with SavedModelSession(exported.path) as session:
        for mode, signature in MODES.items():
            tokens, translations = saved_model_translate(
                session, signature, sources, args.agreement_batch
            )
            bleu = score_translations(translations, references)
            reference[mode] = tokens
            result["saved_model"][mode] = {"bleu": bleu.bleu, "bleu_signature": bleu.bleu_signature}
            result["saved_model"][mode].update(
                speed(
                    lambda batch, signature=signature: saved_model_translate(
                        session, signature, batch, len(batch)
                    ),
                    sources[: args.latency_sentences],
                    sources[: args.throughput_sentences],
                    args.repeats,
                    count_saved,
                )
            )
            print(f"SavedModel {mode}: {result['saved_model'][mode]}")

    int8_base = work / "savedmodel-int8"
    shutil.rmtree(int8_base, ignore_errors=True)
    int8_settings = ExportSettings(precision="float32", weights="int8", shortlist=None)
    int8_export = export_translator(
        args.run_dir, int8_base, settings=int8_settings, beam_width=args.beam_width
    )
    result["saved_model_int8"] = {
        "precision": "float32",
        "weights": "int8",
        "variables_bytes": harness.variables_bytes(int8_export.path),
    }

    def compare_saved_model(path, key: str) -> dict:
        """Translates with another SavedModel; its agreement with the float32 one into result[key]."""
        tokens_by_mode = {}
        with SavedModelSession(path) as session:
            for mode, signature in MODES.items():
                tokens, translations = saved_model_translate(
                    session, signature, sources, args.agreement_batch
                )
                tokens_by_mode[mode] = tokens
                bleu = score_translations(translations, references)
                identical = sum(a == b for a, b in zip(tokens, reference[mode], strict=True))
                result[key][mode] = {
                    "bleu": bleu.bleu,
                    "bleu_difference": bleu.bleu - result["saved_model"][mode]["bleu"],
                    "token_identical_with_float32": identical / len(sources),
                }
                print(f"{key} {mode}: {result[key][mode]}")
        return tokens_by_mode

    reference_int8 = compare_saved_model(int8_export.path, "saved_model_int8")

    def measure(name, exporter, references_by_name):
        """Exports `exporter` into `work/litert-<name>`, measures it into result["litert"]."""
        directory = work / f"litert-{name}"
        shutil.rmtree(directory, ignore_errors=True)
        start = time.perf_counter()
        manifest = exporter.export(directory)
        entry = {
            "export_seconds": time.perf_counter() - start,
            "models": {
                mode: {
                    "bytes": model["bytes"],
                    "share_of_saved_model_variables": model["bytes"] / variables,
                    "builtin_ops": model["ops"]["builtin"],
                    "custom_ops": model["ops"]["custom"],
                    "flex_ops": model["ops"]["flex"],
                }
                for mode, model in manifest["models"].items()
            },
        }
        translator = LiteRTTranslator(directory, num_threads=args.threads)
        for mode in MODES:
            got = translator.translate(sources, mode, batch_size=args.agreement_batch)
            identical = sum(r.tokens == t for r, t in zip(got, reference[mode], strict=True))
            bleu = score_translations([r.text for r in got], references)
            entry[mode] = {
                "token_identical": identical / len(sources),
                "identical_sentences": identical,
                "bleu": bleu.bleu,
                "bleu_difference": bleu.bleu - result["saved_model"][mode]["bleu"],
            }
            for key, tokens in references_by_name.items():
                same = sum(r.tokens == t for r, t in zip(got, tokens[mode], strict=True))
                entry[mode][f"token_identical_with_{key}"] = same / len(sources)
            entry[mode].update(
                speed(
                    lambda batch, mode=mode, translator=translator: translator.translate(
                        batch, mode, batch_size=8
                    ),
                    sources[: args.latency_sentences],
                    sources[: args.throughput_sentences],
                    args.repeats,
                    count_litert,
                )
            )
            print(f"LiteRT {name} {mode}: {entry[mode]}")
        result["litert"][name] = entry
        print(
            f"LiteRT {name}: "
            + ", ".join(f"{m} {e['bytes'] / 1e6:.1f} MB" for m, e in entry["models"].items())
        )

    common = {"beam_width": args.beam_width, "length_penalty": length_penalty}
    for weights in args.weights.split(","):
        if weights == "int8-dynamic-range":
            exporter = DynamicRangeExporter.from_run(args.run_dir, weights="float32", **common)
        else:
            exporter = LiteRTExporter.from_run(args.run_dir, weights=weights, **common)
        measure(weights, exporter, {"int8_saved_model": reference_int8})

    if args.shortlist:
        # The shortlist: the SavedModel exported with it is the reference of the LiteRT
        # models exported with it.
        from keras_attention.shortlist.vocabulary_shortlist import VocabularyShortlist

        shortlist = VocabularyShortlist.from_run(args.run_dir, args.shortlist)
        short_base = work / "savedmodel-shortlist"
        shutil.rmtree(short_base, ignore_errors=True)
        short_settings = ExportSettings(precision="float32", weights="float32", shortlist=shortlist)
        short_export = export_translator(
            args.run_dir, short_base, settings=short_settings, beam_width=args.beam_width
        )
        result["saved_model_shortlist"] = {"shortlist": shortlist.describe()}
        reference_short = compare_saved_model(short_export.path, "saved_model_shortlist")
        for weights in args.shortlist_weights.split(","):
            exporter = LiteRTExporter.from_run(
                args.run_dir, weights=weights, vocabulary_shortlist=shortlist, **common
            )
            measure(
                f"{weights}-shortlist",
                exporter,
                {"int8_saved_model": reference_int8, "shortlisted_saved_model": reference_short},
            )

    harness.write_json(args.output, result, info)
    print(f"Wrote {args.output}")
    print(markdown_table(result, info))


def markdown_table(result: dict, info: dict) -> str:
    """The results as a Markdown table (docs/on-device.md renders the same figures from the
    JSON file)."""
    saved = result["saved_model"]
    variables = saved["variables_bytes"]
    lines = [
        "| model | size MB | % of SavedModel variables | greedy identical | beam identical "
        "| BLEU greedy | BLEU beam | batch 1 greedy p50 ms | batch 1 beam p50 ms "
        "| batch 8 greedy tokens/s | batch 8 beam tokens/s | Flex ops |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| SavedModel float32 (Session path) | {variables / 1e6:.1f} | 100 | | "
        f"| {saved['greedy']['bleu']:.2f} | {saved['beam']['bleu']:.2f} "
        f"| {saved['greedy']['batch1_p50_ms']:.1f} | {saved['beam']['batch1_p50_ms']:.1f} "
        f"| {saved['greedy']['batch8_tokens_per_second']:.0f} "
        f"| {saved['beam']['batch8_tokens_per_second']:.0f} | |",
    ]
    for weights, entry in result["litert"].items():
        size = max(model["bytes"] for model in entry["models"].values())
        flex = sum(len(model["flex_ops"]) for model in entry["models"].values())
        greedy, beam = entry["greedy"], entry["beam"]
        lines.append(
            f"| LiteRT {weights} | {size / 1e6:.1f} | {100 * size / variables:.1f} "
            f"| {100 * greedy['token_identical']:.1f} % | {100 * beam['token_identical']:.1f} % "
            f"| {greedy['bleu']:.2f} ({greedy['bleu_difference']:+.2f}) "
            f"| {beam['bleu']:.2f} ({beam['bleu_difference']:+.2f}) "
            f"| {greedy['batch1_p50_ms']:.1f} | {beam['batch1_p50_ms']:.1f} "
            f"| {greedy['batch8_tokens_per_second']:.0f} | {beam['batch8_tokens_per_second']:.0f} "
            f"| {flex} |"
        )
    lines += [
        "",
        f"{result['test_sentences']} test sentences of `{Path(result['run_dir']).name}`; beam "
        f"width {result['beam_width']}, length penalty {result['length_penalty']}; LiteRT "
        f"interpreter with {result['litert_threads']} threads. Size: the larger of the two "
        "`.tflite` files. Identical: the share of sentences whose tokens equal the SavedModel's; "
        "BLEU: sacreBLEU, all references (difference to the SavedModel's). "
        f"`{result['command']}`, code {info.get('commit')}, {info.get('date')}, "
        f"{info.get('cpu')}.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
