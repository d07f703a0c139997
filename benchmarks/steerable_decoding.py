"""Steerable decoding on a trained run's test split: confidence, target prefixes, batch-mates.

Three measurements, each on the run's test sources (`harness.test_sources`, the
order `keras-attention evaluate` scores them), with `Translator.translate` in one
`tf.function` per way of decoding, beam search of width `--beam-width` (4):

- **confidence**: each sentence's `confidence` (the geometric mean of its token
  probabilities, `[END]` included) against its sentence chrF (sacreBLEU, all
  references); the Spearman rank correlation over `--sentences` sentences, for
  greedy and beam search, and the chrF of the least and most confident fifths.
- **prefix**: for `--prefix-sentences` sentences, the first `--prefix-words`
  words of the first reference as the prefix; the share of outputs whose
  tokens start with the prefix's tokens (as the target vocabulary reads them:
  a word outside it is `[UNK]` on both sides), the share whose text starts
  with the prefix's text, how many prefixes hold a word outside the vocabulary,
  and the batch-1 latency (median over the sentences, `--repeats` rounds, best
  kept) with the prefix against plain decoding of the same sentences.
- **unknown words** (a word target vocabulary), on the whole test split: the
  source words outside the source vocabulary that one of the sentence's
  references holds verbatim (names, numbers); the share of them in the output
  without and with `replace_unknown` (each emitted `[UNK]` replaced by the most
  attended source token, the default), BLEU and chrF both ways, how many
  outputs changed and whether every change is an `[UNK]` replaced.
- **constraints**: `--constraint-sentences` test sentences whose unconstrained
  beam output misses words of the first reference; each gets 1 to 3 of those
  words (known to the target vocabulary, two adjacent missed words as one
  phrase) as constraints. The share of the constraints present in the
  constrained output (its tokens hold the phrase's tokens in a row), in the
  library and, with `--export-dir`, through that export served by our
  `ModelServer` over gRPC; BLEU and chrF of those sentences without and with
  the constraints; whether as many other sentences, each in a batch with
  constrained ones, translate as without constraints; and tokens/s at batch 8
  with and without constraints (timed in turn for `--repeats` rounds, best kept).
- **batch-mates** (with `--shortlist K`, a vocabulary shortlist of `K` target ids
  per source id built from the run): whether each of `--prefix-sentences`
  sentences translates to the same text alone and in batches of 64.

    python benchmarks/steerable_decoding.py --run-dir RUN [--sentences 1000] \\
        [--out benchmarks/results/steerable_decoding.json] [--only constraints|unknown_words]

`--only SECTION` measures one section and, with `--out`, replaces that section of
an existing results file (the others keep their figures; the section records the
command and machine it ran on).

The last line printed is `confidence spearman: G greedy, B beam; prefix kept P %`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import harness


def average_ranks(values):
    """Ranks 1..n of `values`, ties given their average rank (NumPy array)."""
    import numpy as np

    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    sorted_values = values[order]
    start = 0
    while start < len(values):
        end = start
        while end + 1 < len(values) and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        ranks[order[start : end + 1]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def spearman(a, b) -> float:
    """Spearman's rank correlation: Pearson's of the average ranks."""
    import numpy as np

    return float(np.corrcoef(average_ranks(a), average_ranks(b))[0, 1])


def translate_function(translator, strategy, steered: bool = False):
    """A `tf.function` of `Translator.translate`: `(texts[, prefixes]) -> outputs`."""
    import tensorflow as tf

    text = tf.TensorSpec([None], tf.string)
    if steered:
        return tf.function(
            lambda texts, prefixes: translator.translate(texts, strategy, prefixes=prefixes),
            input_signature=[text, tf.TensorSpec([None], tf.string)],
            autograph=False,
        )
    return tf.function(
        lambda texts: translator.translate(texts, strategy), input_signature=[text], autograph=False
    )


def batched(fn, items, batch_size, *extra):
    """`fn` over `items` (and `extra` lists alike) in batches; outputs as NumPy, concatenated."""
    import numpy as np
    import tensorflow as tf

    parts = []
    for start in range(0, len(items), batch_size):
        args = [tf.constant(x[start : start + batch_size]) for x in (items, *extra)]
        outputs = fn(*args)
        parts.append({k: outputs[k].numpy() for k in ("translation", "confidence", "tokens")})
    return {
        "translation": np.concatenate([p["translation"] for p in parts]),
        "confidence": np.concatenate([p["confidence"] for p in parts]),
        "tokens": [row for p in parts for row in p["tokens"]],
    }


def measure_confidence(translator, sources, references, beam_width) -> dict:
    import numpy as np
    from sacrebleu.metrics import CHRF

    chrf = CHRF()
    results = {}
    for name, width in (("greedy", 1), ("beam", beam_width)):
        fn = translate_function(translator, translator.strategy(beam_width=width))
        outputs = batched(fn, sources, 64)
        hypotheses = [t.decode("utf-8") for t in outputs["translation"]]
        scores = np.array(
            [
                chrf.sentence_score(h, refs).score
                for h, refs in zip(hypotheses, references, strict=True)
            ]
        )
        confidence = outputs["confidence"].astype(np.float64)
        order = np.argsort(confidence, kind="stable")
        fifth = max(len(order) // 5, 1)
        results[name] = {
            "spearman": spearman(confidence, scores),
            "mean_confidence": float(confidence.mean()),
            "chrf_least_confident_fifth": float(scores[order[:fifth]].mean()),
            "chrf_most_confident_fifth": float(scores[order[-fifth:]].mean()),
            "mean_sentence_chrf": float(scores.mean()),
        }
        print(
            f"confidence, {name}: Spearman {results[name]['spearman']:.3f} with sentence chrF; "
            f"chrF {results[name]['chrf_least_confident_fifth']:.1f} (least confident fifth) "
            f"vs {results[name]['chrf_most_confident_fifth']:.1f} (most)"
        )
    results["chrf_signature"] = str(chrf.get_signature())
    return results


def measure_prefix(translator, sources, references, beam_width, words, repeats) -> dict:
    import tensorflow as tf

    target = translator.target_vectorizer
    prefixes = [" ".join(refs[0].split()[:words]) for refs in references]
    prefix_tokens = [
        [t.decode("utf-8") for t in row]
        for row in target.ids_to_tokens(target.encode(tf.constant(prefixes), ragged=True)).to_list()
    ]
    strategy = translator.strategy(beam_width=beam_width)
    steered = translate_function(translator, strategy, steered=True)
    plain = translate_function(translator, strategy)
    outputs = batched(steered, sources, 8, prefixes)
    kept_tokens = kept_text = 0
    for row, tokens in enumerate(prefix_tokens):
        got = [t.decode("utf-8") for t in outputs["tokens"][row][: len(tokens)]]
        kept_tokens += got == tokens
        text = outputs["translation"][row].decode("utf-8")
        kept_text += text.lower().startswith(prefixes[row].lower())
    unknown = sum("[UNK]" in tokens for tokens in prefix_tokens)
    timings = {"plain": [], "prefix": []}
    for source, prefix in zip(sources, prefixes, strict=True):
        text, forced = tf.constant([source]), tf.constant([prefix])
        plain(text)  # traced once, warm
        steered(text, forced)
        timings["plain"].append(min(harness.time_calls(lambda t=text: plain(t), repeats)))
        timings["prefix"].append(
            min(harness.time_calls(lambda t=text, p=forced: steered(t, p), repeats))
        )
    median = {k: statistics.median(v) for k, v in timings.items()}
    result = {
        "sentences": len(sources),
        "prefix_words": words,
        "kept_tokens_share": kept_tokens / len(sources),
        "kept_text_share": kept_text / len(sources),
        "prefixes_with_unknown_words": unknown,
        "batch1_median_seconds": median,
        "batch1_latency_ratio": median["prefix"] / median["plain"],
        "examples": [
            {"source": s, "prefix": p, "translation": t.decode("utf-8")}
            for s, p, t in list(zip(sources, prefixes, outputs["translation"], strict=True))[:5]
        ],
    }
    print(
        f"prefix ({words} words of the reference): {100 * result['kept_tokens_share']:.1f} % of "
        f"outputs start with its tokens ({unknown} prefixes hold a word outside the vocabulary), "
        f"{100 * result['kept_text_share']:.1f} % with its text; batch-1 latency "
        f"{result['batch1_latency_ratio']:.2f}x plain"
    )
    return result


def measure_unknown(translator, sources, references, beam_width) -> dict:
    """Source words outside the source vocabulary that a reference holds verbatim: the
    share of them in the output without and with `replace_unknown`, and BLEU of all."""
    import tensorflow as tf

    from keras_attention.evaluation import score_translations

    source = translator.source_vectorizer
    tokens = [
        [t.decode("utf-8") for t in row] for row in source.tokenize(tf.constant(sources)).to_list()
    ]
    ids = source.encode(tf.constant(sources), ragged=True).to_list()
    wanted = []
    for row_tokens, row_ids, refs in zip(tokens, ids, references, strict=True):
        in_references = {
            word
            for ref in refs
            for word in translator.target_vectorizer.tokenize(tf.constant([ref])).to_list()[0]
        }
        wanted.append(
            [
                token
                for token, token_id in zip(row_tokens, row_ids, strict=False)
                if token_id == source.unk_id and token.encode("utf-8") in in_references
            ]
        )
    result = {
        "sentences": len(sources),
        "beam_width": beam_width,
        "sentences_with_copyable_words": sum(bool(w) for w in wanted),
    }
    tokens_of = {}
    for name, replace in (("before", False), ("after", True)):
        steered = translator.with_shortlist(translator.shortlist, translator.gather_weights)
        steered.replace_unknown = replace
        fn = translate_function(steered, steered.strategy(beam_width=beam_width))
        outputs = batched(fn, sources, 64)
        hypotheses = [t.decode("utf-8") for t in outputs["translation"]]
        tokens_of[name] = [[t.decode("utf-8") for t in row if t] for row in outputs["tokens"]]
        found = total = 0
        for words, row in zip(wanted, outputs["tokens"], strict=True):
            emitted = {t.decode("utf-8") for t in row}
            total += len(words)
            found += sum(word in emitted for word in words)
        scores = score_translations(hypotheses, references)
        result[name] = {
            "copyable_words": total,
            "found_share": found / max(total, 1),
            "bleu": scores.bleu,
            "chrf": scores.chrf,
            "unk_in_output": sum("[UNK]" in h for h in hypotheses),
        }
        print(
            f"unknown words ({name} replacement): {found}/{total} copyable source words in the "
            f"output; BLEU {scores.bleu:.2f}, chrF {scores.chrf:.2f}; "
            f"{result[name]['unk_in_output']} outputs hold [UNK]"
        )
    # Replacement changes nothing but the [UNK] tokens: the same number of tokens, each
    # either the same or an [UNK] that became a source token.
    changed = [
        (before, after)
        for before, after in zip(tokens_of["before"], tokens_of["after"], strict=True)
        if before != after
    ]
    result["outputs_changed"] = len(changed)
    result["changes_only_unknown"] = all(
        len(before) == len(after)
        and all(
            b == a or (b == "[UNK]" and a != "[UNK]") for b, a in zip(before, after, strict=True)
        )
        for before, after in changed
    )
    result["bleu_signature"] = scores.bleu_signature
    print(
        f"unknown words: {len(changed)} of {len(sources)} outputs changed, "
        f"{'only' if result['changes_only_unknown'] else 'NOT only'} [UNK] tokens replaced"
    )
    return result


def missed_phrases(translator, output_tokens, reference, count):
    """Up to `count` phrases of `reference` whose words the output lacks: known to the
    target vocabulary, alphabetic, two adjacent missed words joined into one phrase."""
    import tensorflow as tf

    target = translator.target_vectorizer
    words = [w.decode("utf-8") for w in target.tokenize(tf.constant([reference])).to_list()[0]]
    ids = target.encode(tf.constant([reference]), ragged=True).to_list()[0]
    emitted = set(output_tokens)
    missed = [
        word.isalpha() and len(word) > 1 and word not in emitted and token_id != target.unk_id
        for word, token_id in zip(words, ids, strict=False)
    ]
    phrases, index = [], 0
    while index < len(missed) and len(phrases) < count:
        if missed[index]:
            pair = index + 1 < len(missed) and missed[index + 1] and len(phrases) % 2 == 1
            phrases.append(" ".join(words[index : index + (2 if pair else 1)]))
            index += 2 if pair else 1
        else:
            index += 1
    return list(dict.fromkeys(phrases))


def holds(tokens, phrase_tokens) -> bool:
    """Whether `tokens` hold `phrase_tokens` in a row."""
    n = len(phrase_tokens)
    return any(tokens[i : i + n] == phrase_tokens for i in range(len(tokens) - n + 1))


def measure_constraints(translator, sources, references, beam_width, wanted, repeats, export):
    """The constraints section (module doc): chosen phrases, their presence, BLEU, the
    sentences without constraints, and tokens/s at batch 8."""
    import tensorflow as tf

    from keras_attention.evaluation import score_translations

    target = translator.target_vectorizer
    strategy = translator.strategy(beam_width=beam_width)
    plain = translate_function(translator, strategy)
    plain_outputs = batched(plain, sources, 64)
    chosen, others = [], []
    for row, refs in enumerate(references):
        tokens = [t.decode("utf-8") for t in plain_outputs["tokens"][row] if t]
        phrases = missed_phrases(translator, tokens, refs[0], 1 + len(chosen) % 3)
        if phrases and len(chosen) < wanted:
            chosen.append((row, phrases))
        elif not phrases or len(others) < wanted:
            others.append(row)
        if len(chosen) == wanted and len(others) >= wanted:
            break
    others = others[: len(chosen)]
    rows = [row for row, _ in chosen]
    texts = [sources[row] for row in rows]
    phrases = [p for _, p in chosen]
    width = max(len(p) for p in phrases)
    padded = [p + [""] * (width - len(p)) for p in phrases]
    constrained = tf.function(
        lambda t, c: translator.translate(t, strategy, constraints=c),
        input_signature=[tf.TensorSpec([None], tf.string), tf.TensorSpec([None, None], tf.string)],
        autograph=False,
    )

    def present(outputs_tokens):
        found = total = 0
        for row_tokens, row_phrases in zip(outputs_tokens, phrases, strict=True):
            emitted = [t.decode("utf-8") if isinstance(t, bytes) else t for t in row_tokens]
            for phrase in row_phrases:
                phrase_tokens = [
                    t.decode("utf-8") for t in target.tokenize(tf.constant([phrase])).to_list()[0]
                ]
                total += 1
                found += holds(emitted, phrase_tokens)
        return found, total

    def run(fn, *inputs):
        parts = [fn(*[tf.constant(x[i : i + 8]) for x in inputs]) for i in range(0, len(texts), 8)]
        return {
            key: [row for part in parts for row in part[key].numpy()]
            for key in ("translation", "tokens", "length")
        }

    library = run(constrained, texts, padded)
    found, total = present(library["tokens"])
    before = [plain_outputs["translation"][row].decode("utf-8") for row in rows]
    after = [t.decode("utf-8") for t in library["translation"]]
    refs = [references[row] for row in rows]
    scores = {"before": score_translations(before, refs), "after": score_translations(after, refs)}
    # Sentences without constraints, each batch of 8 half constrained, half not.
    mixed_texts, mixed_phrases = [], []
    for (row, p), other in zip(chosen, others, strict=False):
        mixed_texts += [sources[row], sources[other]]
        mixed_phrases += [p + [""] * (width - len(p)), [""] * width]
    mixed = [
        constrained(tf.constant(mixed_texts[i : i + 8]), tf.constant(mixed_phrases[i : i + 8]))
        for i in range(0, len(mixed_texts), 8)
    ]
    mixed_translations = [t for part in mixed for t in part["translation"].numpy()]
    same = sum(
        mixed_translations[2 * i + 1] == plain_outputs["translation"][other]
        for i, other in enumerate(others)
    )
    # Tokens/s at batch 8 on the constrained sentences, with and without constraints: the
    # two timed in turn, round after round (best kept), so that a shared machine's load
    # weighs on both alike.
    ways = {"plain": (plain, (texts,)), "constrained": (constrained, (texts, padded))}
    best = dict.fromkeys(ways, float("inf"))
    for _ in range(repeats):
        for name, (fn, inputs) in ways.items():
            best[name] = min(best[name], *harness.time_calls(lambda f=fn, i=inputs: run(f, *i), 1))
    timings = {}
    for name, (fn, inputs) in ways.items():
        tokens = sum(int(n) + 1 for n in run(fn, *inputs)["length"])
        timings[name] = {
            "seconds": best[name],
            "tokens": tokens,
            "tokens_per_second": tokens / best[name],
        }
    result = {
        "sentences": len(chosen),
        "constraints": total,
        "constraints_per_sentence": {str(n): sum(len(p) == n for p in phrases) for n in (1, 2, 3)},
        "present_share": found / total,
        "bleu": {k: v.bleu for k, v in scores.items()},
        "chrf": {k: v.chrf for k, v in scores.items()},
        "bleu_signature": scores["after"].bleu_signature,
        "unconstrained_sentences": len(others),
        "unconstrained_same_share": same / max(len(others), 1),
        "batch8": timings,
        "tokens_per_second_ratio": timings["constrained"]["tokens_per_second"]
        / timings["plain"]["tokens_per_second"],
        "examples": [
            {"source": t, "constraints": p, "before": b, "after": a}
            for t, p, b, a in list(zip(texts, phrases, before, after, strict=True))[:5]
        ],
    }
    if export:
        result["served"] = measure_served_constraints(export, texts, phrases, beam_width, present)
    print(
        f"constraints: {found}/{total} present ({len(chosen)} sentences); BLEU "
        f"{result['bleu']['before']:.2f} -> {result['bleu']['after']:.2f}; "
        f"{same}/{len(others)} unconstrained sentences the same; tokens/s at batch 8 "
        f"{100 * result['tokens_per_second_ratio']:.0f} % of unconstrained"
    )
    return result


def measure_served_constraints(export, texts, phrases, beam_width, present) -> dict:
    """The constraints through `export` served by our `ModelServer`, over gRPC."""
    import tempfile
    from pathlib import Path

    from keras_attention.serving import ModelServer, ServerOptions
    from keras_attention_client import TranslationClient

    config = Path(tempfile.mkdtemp(prefix="steerable-")) / "models.config"
    base = Path(export).resolve().parent
    config.write_text(
        "model_config_list {\n"
        f'  config {{ name: "fra-eng" base_path: "{base}" model_platform: "tensorflow" }}\n'
        "}\n"
    )
    options = ServerOptions(port=0, model_config_file=str(config), file_system_poll_wait_seconds=0)
    with ModelServer(options) as server:
        with TranslationClient(server.address, model_name="fra-eng", batch_size=8) as client:
            results = client.translate(texts, beam_width=beam_width, constraints=phrases)
    found, total = present([list(r.tokens) for r in results])
    print(f"constraints, served export over gRPC: {found}/{total} present")
    return {"export": str(export), "present_share": found / total, "constraints": total}


def measure_batch_mates(translator, sources, k) -> dict:
    from keras_attention.shortlist.vocabulary_shortlist import VocabularyShortlist

    shortlisted = translator.with_shortlist(VocabularyShortlist.from_run(translator_run(), k=k))
    result = {}
    for name, width in (("greedy", 1), ("beam", 4)):
        fn = translate_function(shortlisted, shortlisted.strategy(beam_width=width))
        alone = batched(fn, sources, 1)["translation"]
        together = batched(fn, sources, 64)["translation"]
        same = sum(a == b for a, b in zip(alone, together, strict=True))
        result[name] = {"same_share": same / len(sources)}
        print(
            f"batch-mates ({name}, shortlist k={k}): {same}/{len(sources)} the same alone and in 64s"
        )
    return result


_RUN = {}


def translator_run():
    return _RUN["dir"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run-dir", required=True, help="a trained run")
    parser.add_argument("--sentences", type=int, default=1000, help="test sentences (confidence)")
    parser.add_argument("--prefix-sentences", type=int, default=200)
    parser.add_argument("--prefix-words", type=int, default=2)
    parser.add_argument("--beam-width", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds (best is kept)")
    parser.add_argument("--shortlist", type=int, default=0, help="K for the batch-mates check")
    parser.add_argument("--constraint-sentences", type=int, default=200)
    parser.add_argument(
        "--export-dir", default=None, help="an export of the run (a version directory) to serve"
    )
    parser.add_argument(
        "--only",
        choices=["constraints", "unknown_words"],
        default=None,
        help="measure this section only",
    )
    parser.add_argument("--out", default=None, help="write the results JSON here")
    args = parser.parse_args(argv)
    if args.only is not None:
        return main_section(args, argv)
    harness.quiet_tensorflow()
    info = harness.print_machine_header()
    from keras_attention.inference.trained_run import load_translator

    _RUN["dir"] = args.run_dir
    translator = load_translator(args.run_dir)
    sources, references = harness.test_sources(args.run_dir, args.sentences)
    started = time.perf_counter()
    payload = {
        "command": " ".join(
            ["python", "benchmarks/steerable_decoding.py", *(argv or sys.argv[1:])]
        ),
        "run_dir": str(args.run_dir),
        "beam_width": args.beam_width,
        "precision": translator.model.dtype_policy.name,
        "sentences": len(sources),
        "confidence": measure_confidence(translator, sources, references, args.beam_width),
    }
    count = args.prefix_sentences
    payload["prefix"] = measure_prefix(
        translator,
        sources[:count],
        references[:count],
        args.beam_width,
        args.prefix_words,
        args.repeats,
    )
    if translator.replace_unknown:  # on by default where the model may emit [UNK]
        payload["unknown_words"] = measure_unknown(
            translator, *harness.test_sources(args.run_dir), args.beam_width
        )
    if args.shortlist:
        payload["batch_mates"] = measure_batch_mates(translator, sources[:count], args.shortlist)
    payload["seconds"] = time.perf_counter() - started
    if args.out:
        harness.write_json(args.out, payload, info)
    confidence = payload["confidence"]
    print(
        f"confidence spearman: {confidence['greedy']['spearman']:.3f} greedy, "
        f"{confidence['beam']['spearman']:.3f} beam; prefix kept "
        f"{100 * payload['prefix']['kept_tokens_share']:.1f} %"
    )
    return 0


def main_section(args, argv) -> int:
    """`--only SECTION`: that section, merged into the results file at `--out`."""
    import json
    from pathlib import Path

    from keras_attention.inference.trained_run import load_translator

    harness.quiet_tensorflow()
    info = harness.print_machine_header()
    translator = load_translator(args.run_dir)
    sources, references = harness.test_sources(args.run_dir)
    started = time.perf_counter()
    if args.only == "unknown_words":
        section = measure_unknown(translator, sources, references, args.beam_width)
    else:
        section = measure_constraints(
            translator,
            sources,
            references,
            args.beam_width,
            args.constraint_sentences,
            args.repeats,
            args.export_dir,
        )
    section["command"] = " ".join(
        ["python", "benchmarks/steerable_decoding.py", *(argv or sys.argv[1:])]
    )
    section["seconds"] = time.perf_counter() - started
    section["precision"] = translator.model.dtype_policy.name
    section["machine"] = info
    if args.out:
        path = Path(args.out)
        payload = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        machine = payload.pop("machine", info)
        payload[args.only] = section
        harness.write_json(path, payload, machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
