"""The steps that run inside the OpenNMT-py virtual environment (`run.py` calls them).

    python onmt_steps.py sentencepiece WORK --vocab-size 8000
    python onmt_steps.py translate WORK MODEL --out RESULT.json [--speed-sample FILE]

`sentencepiece` trains one unigram model on both sides of `WORK/train.{src,tgt}`
(`WORK/spm.model`). `translate` loads the model once in OpenNMT-py's translator
(`onmt.inference_engine.InferenceEnginePY`, the engine `onmt_translate` runs;
options from `peer_config.translate_options`: beam 4, raw text in, detokenized
text out through the `sentencepiece` transform), translates `WORK/test.src` at
batch 64 (the hypotheses that are scored), then times the sentences of
`--speed-sample` at batch 1 and 64: the seconds of `infer_list` only, after a
warm-up call. Threads: `peer_config.THREADS`.

This file imports only OpenNMT-py, PyTorch, SentencePiece and the standard
library (and `peer_config`, which is plain Python).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import peer_config


def train_sentencepiece(work: Path, vocab_size: int) -> dict:
    import sentencepiece as spm

    settings = {**peer_config.SENTENCEPIECE, "vocab_size": vocab_size}
    started = time.perf_counter()
    spm.SentencePieceTrainer.train(
        input=[str(work / "train.src"), str(work / "train.tgt")],
        model_prefix=str(work / "spm"),
        input_sentence_size=1_000_000,
        shuffle_input_sentence=True,
        num_threads=peer_config.THREADS,
        minloglevel=2,
        **settings,
    )
    return {**settings, "seconds": time.perf_counter() - started}


def option_list(options: dict) -> list[str]:
    """`{"beam_size": 4, "transforms": ["a"], "flag": True}` -> `-beam_size 4 -transforms a -flag`."""
    args = []
    for key, value in options.items():
        if value is False or value is None:
            continue
        args.append(f"-{key}")
        if value is True:
            continue
        args += [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return args


def build_engine(model: Path, work: Path, batch_size: int, output: Path):
    from onmt.inference_engine import InferenceEnginePY
    from onmt.opts import translate_opts
    from onmt.utils.misc import set_random_seed
    from onmt.utils.parse import ArgumentParser

    parser = ArgumentParser(description="translate.py")
    translate_opts(parser)
    options = peer_config.translate_options(str(model), str(work), batch_size, str(output))
    options["src"] = str(work / "test.src")
    opt = parser.parse_args(option_list(options))
    ArgumentParser.validate_translate_opts(opt)
    ArgumentParser._get_all_transform_translate(opt)  # noqa: SLF001 - as onmt_translate does
    ArgumentParser._validate_transforms_opts(opt)  # noqa: SLF001
    ArgumentParser.validate_translate_opts_dynamic(opt)
    set_random_seed(opt.seed, False)
    return InferenceEnginePY(opt), options


def translate_all(engine, sources: list[str], batch_size: int) -> tuple[list[str], float]:
    engine.opt.batch_size = batch_size
    started = time.perf_counter()
    _, predictions = engine.infer_list(sources)
    seconds = time.perf_counter() - started
    return [best[0] for best in predictions], seconds


def translate(work: Path, model: Path, out: Path, speed_sample: Path | None) -> dict:
    import torch

    torch.set_num_threads(peer_config.THREADS)
    sources = (work / "test.src").read_text(encoding="utf-8").splitlines()
    engine, options = build_engine(model, work, 64, work / "predictions.txt")
    translate_all(engine, sources[:64], 64)  # warm-up
    hypotheses, seconds = translate_all(engine, sources, 64)
    result = {
        "options": {k: v for k, v in options.items() if k not in ("src", "output")},
        "threads": torch.get_num_threads(),
        "hypotheses": hypotheses,
        "test_seconds": seconds,
        "decoding": {},
    }
    if speed_sample is not None:
        sample = json.loads(speed_sample.read_text(encoding="utf-8"))
        result["decoding"] = peer_config.decoding_speeds(
            lambda sentences, batch_size: translate_all(engine, sentences, batch_size), sample
        )
    engine.terminate()
    out.write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    spm = commands.add_parser("sentencepiece")
    spm.add_argument("work", type=Path)
    spm.add_argument("--vocab-size", type=int, default=peer_config.SENTENCEPIECE["vocab_size"])
    spm.add_argument("--out", type=Path)
    tr = commands.add_parser("translate")
    tr.add_argument("work", type=Path)
    tr.add_argument("model", type=Path)
    tr.add_argument("--out", type=Path, required=True)
    tr.add_argument("--speed-sample", type=Path)
    args = parser.parse_args(argv)
    if args.command == "sentencepiece":
        summary = train_sentencepiece(args.work, args.vocab_size)
        if args.out:
            args.out.write_text(json.dumps(summary), encoding="utf-8")
    else:
        translate(args.work, args.model, args.out, args.speed_sample)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", str(peer_config.THREADS))
    sys.exit(main())
