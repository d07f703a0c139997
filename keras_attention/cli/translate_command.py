"""The handler of `keras-attention translate`: a trained run, or a TF Serving endpoint."""

from __future__ import annotations

import argparse
import json
import sys

from keras_attention.cli.run_commands import warn_if_partial


def read_texts(args: argparse.Namespace) -> list[str]:
    """Texts from the command line, else from --file, else from stdin (one per line)."""
    texts = list(args.texts)
    if args.server and args.run_dir:
        # With --server there is no RUN_DIR: the first positional is a sentence.
        texts.insert(0, args.run_dir)
    if texts:
        return texts
    if args.file:
        with open(args.file, encoding="utf-8") as f:
            return [line.rstrip("\n") for line in f]
    if sys.stdin.isatty():
        print(
            "keras-attention translate: reading sentences from stdin, one per line "
            "(end with Ctrl-D; or pass TEXT arguments or --file)",
            file=sys.stderr,
        )
    return [line.rstrip("\n") for line in sys.stdin]


def translate_remotely(args: argparse.Namespace, texts: list[str]) -> list:
    """`Translation`s from a TF Serving endpoint (a list of them per text with `--n-best`
    above 1), as `translate_all` returns them."""
    from keras_attention_client.cli import remote_translations

    return remote_translations(args, texts)


def run_translate(args: argparse.Namespace) -> int:
    if not args.server and not args.run_dir:
        raise ValueError("translate needs RUN_DIR (a trained run) or --server HOST:PORT")
    from keras_attention_client.decoding_flags import decoding_options
    from keras_attention_client.translation_lines import (
        confidence_line,
        next_words_text,
        steering_arguments,
    )

    options = decoding_options(args)  # checks the flags before any text is read
    texts = read_texts(args)
    if args.server:
        from keras_attention_client.wire.errors import ServingError

        try:
            results = translate_remotely(args, texts)
        except ServingError as error:
            print(f"keras-attention translate: server error: {error}", file=sys.stderr)
            return 1
    else:
        from keras_attention.inference.trained_run import load_translator

        warn_if_partial(args.run_dir, "translate")
        translator = load_translator(
            args.run_dir,
            max_output_length=args.max_output_length,
            replace_unknown=args.replace_unknown,
        )
        results = translator.translate_all(
            texts,
            options,
            **steering_arguments(args, texts),
            batch_size=args.batch_size,
            progress=len(texts) > args.batch_size and sys.stderr.isatty(),
        )
    for index, (text, result) in enumerate(zip(texts, results, strict=True)):
        listed = isinstance(result, list)
        if args.output_format == "json":
            if listed:
                record = {"source": text, "n_best": [r.to_dict() for r in result]}
            else:
                record = {"source": text, **result.to_dict()}
            print(json.dumps(record, ensure_ascii=False))
        else:
            for one in result if listed else [result]:
                if args.confidence:
                    line = confidence_line(
                        one.text, one.confidence, one.tokens, one.token_probabilities
                    )
                else:
                    line = one.text
                if args.next_words:
                    line += "\t" + next_words_text(one.next_words)
                print(line)
        if args.show_attention:
            show_attention(args, index, result[0] if listed else result)
    return 0


def decoding_name(args: argparse.Namespace) -> str:
    """Which decoding `translate` used, for plot titles."""
    from keras_attention_client.decoding_flags import decoding_options, remote_decoding_options

    options = decoding_options(args)
    if options.sample:
        top_k = f", top-k {options.top_k}" if options.top_k is not None else ""
        top_p = f", top-p {options.top_p:g}" if options.top_p is not None else ""
        name = f"random sampling, temperature {options.value('temperature'):g}{top_k}{top_p}"
    else:
        width = options.value("beam_width")
        name = f"beam search, width {width}" if width > 1 else "greedy decoding"
    if args.server:
        from keras_attention_client.decoding_request import decoding_request
        from keras_attention_client.wire.contract import DEFAULT_SIGNATURE

        # The client's own routing rule (`client_from_args` sets the signature).
        signature, _ = decoding_request(
            args.signature_name or DEFAULT_SIGNATURE,
            remote_decoding_options(args),
            explicit_signature=False,
        )
        return f"{name}, {signature} signature"
    return name


def show_attention(args: argparse.Namespace, index: int, result) -> None:
    """The attention of `result` (a `Translation`): a heatmap file, or a text table."""
    from keras_attention.plotting import format_alignment, plot_attention

    if args.attention_dir:
        from pathlib import Path

        path = Path(args.attention_dir) / f"attention_{index:04d}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        plot_attention(
            result.attention,
            result.source_tokens,
            result.tokens,
            path,
            title=result.text,
            decoding=decoding_name(args),
        )
        print(f"  attention heatmap: {path}", file=sys.stderr)
    else:
        print(format_alignment(result.attention, result.source_tokens, result.tokens))
