"""The client's command line: `keras-attention-client translate --server HOST:PORT TEXT...`.

The same flags as `keras-attention translate --server` (which wires
`add_client_arguments` and `remote_translations` into its own parser), on a
machine with only the `keras-attention-client` distribution installed:

    keras-attention-client translate --server localhost:8500 --model-name translator "Go."
    echo "I am cold." | keras-attention-client translate --server http://localhost:8501 --format json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TextIO

from keras_attention_client.translation_contract import BEAM_SEARCH, DEFAULT_SIGNATURE


def add_client_arguments(
    parser: argparse.ArgumentParser, *, include_batch_size: bool = True
) -> None:
    """Adds the remote-translation flags (`--server`, `--model-name`, `--signature`, ...).

    Args:
        parser: the (sub)parser.
        include_batch_size: add `--batch-size` (pass False when the parser
            already has one; `client_from_args` reads `args.batch_size`).
    """
    group = parser.add_argument_group("remote model server")
    group.add_argument(
        "--server",
        default=None,
        help="host:port of a gRPC endpoint (e.g. localhost:8500), or http(s)://host:port "
        "for the REST API (e.g. http://localhost:8501).",
    )
    group.add_argument(
        "--model-name",
        "--model_name",
        dest="model_name",
        default=None,
        help="Served model name: the server's --model_name (default: 'default', "
        "TF Serving's own default).",
    )
    group.add_argument(
        "--signature",
        "--signature-name",
        dest="signature_name",
        default=None,
        help="Signature: serving_default (greedy) or beam_search (default: serving_default, "
        "or beam_search with --beam > 1).",
    )
    version = group.add_mutually_exclusive_group()
    version.add_argument(
        "--model-version",
        dest="model_version",
        type=int,
        default=None,
        help="Pin a model version (default: latest).",
    )
    version.add_argument(
        "--version-label",
        dest="version_label",
        default=None,
        help="Pin a version label from the server's model config.",
    )
    group.add_argument(
        "--timeout", type=float, default=30.0, help="Seconds per request (default: %(default)s)."
    )
    if include_batch_size:
        group.add_argument(
            "--batch-size",
            dest="batch_size",
            type=int,
            default=32,
            help="Sentences per request (default: %(default)s).",
        )
    group.add_argument(
        "--max-retries",
        dest="max_retries",
        type=int,
        default=3,
        help="Retries when the server is unavailable (default: %(default)s).",
    )
    group.add_argument("--tls", action="store_true", help="Use TLS with the system's roots.")
    group.add_argument(
        "--root-certificates",
        dest="root_certificates",
        default=None,
        help="PEM file of the CA to trust (TLS).",
    )
    group.add_argument(
        "--client-key", dest="client_key", default=None, help="PEM client key (mutual TLS)."
    )
    group.add_argument(
        "--client-certificate",
        dest="client_certificate",
        default=None,
        help="PEM client certificate chain (mutual TLS).",
    )
    group.add_argument(
        "--ssl-target-name-override",
        dest="ssl_target_name_override",
        default=None,
        help="Host name to verify in the server certificate.",
    )
    group.add_argument(
        "--format",
        dest="output_format",
        choices=["text", "json"],
        default="text",
        help="text: one translation per line; json: one object per line with score, tokens "
        "and attention.",
    )


def client_from_args(args: argparse.Namespace):
    """The `TranslationClient` or `RestTranslationClient` the parsed flags describe.

    Flags the parser lacks take their defaults, so a parser that added only
    some of `add_client_arguments`' flags works too. `--beam N` (N > 1) selects
    the `beam_search` signature unless `--signature` is given.
    """
    server = getattr(args, "server", None)
    if not server:
        raise ValueError("--server HOST:PORT (or http://HOST:PORT) is required")
    signature = getattr(args, "signature_name", None)
    if not signature:
        beam = getattr(args, "beam", 1) or 1
        signature = BEAM_SEARCH if beam > 1 else DEFAULT_SIGNATURE
    common = dict(
        model_name=getattr(args, "model_name", None) or "default",
        signature_name=signature,
        timeout=getattr(args, "timeout", 30.0),
        version=getattr(args, "model_version", None),
        version_label=getattr(args, "version_label", None),
        batch_size=getattr(args, "batch_size", 32),
        max_retries=getattr(args, "max_retries", 3),
    )
    root_certificates = getattr(args, "root_certificates", None)
    if server.startswith(("http://", "https://")):
        from keras_attention_client.rest_translation_client import RestTranslationClient

        return RestTranslationClient(server, cafile=root_certificates, **common)
    from keras_attention_client.translation_client import TranslationClient

    return TranslationClient(
        server,
        tls=getattr(args, "tls", False),
        root_certificates=root_certificates,
        private_key=getattr(args, "client_key", None),
        certificate_chain=getattr(args, "client_certificate", None),
        ssl_target_name_override=getattr(args, "ssl_target_name_override", None),
        **common,
    )


def remote_translations(args: argparse.Namespace, texts: Sequence[str]) -> list:
    """Translates `texts` on the server the flags name; returns `Translation`s.

    Raises:
        ValueError: bad flags (e.g. no `--server`).
        ServingError: the server's error.
    """
    from keras_attention_client.serving_error import ServingError

    try:
        with client_from_args(args) as client:
            return client.translate(list(texts))
    except ServingError as error:
        hint = model_name_hint(error, getattr(args, "model_name", None))
        if hint is None:
            raise
        raise ServingError(
            error.code, f"{error.message}. {hint}", http_status=error.http_status
        ) from error


def model_name_hint(error, model_name: str | None) -> str | None:
    """What to do about a `NOT_FOUND` for the model name, or `None` for other errors.

    TF Serving's API cannot list the models a server holds, so the hint
    names where the name comes from: the server's `--model_name` (TF
    Serving's default is `default`, used when `--model-name` is not given)
    or a `name:` of its `--model_config_file`.
    """
    # "Latest(name)" / "any versions": no version was pinned, so the name is unknown.
    if error.code != "NOT_FOUND" or not (
        "Latest(" in error.message or "any versions of model" in error.message
    ):
        return None
    given = model_name or "default"
    told = "" if model_name else " (TF Serving's default name; --model-name was not given)"
    return (
        f"The server serves no model named {given!r}{told}: pass --model-name NAME with the "
        "name the server was started with (its --model_name, or a name: in its "
        "--model_config_file)"
    )


def run_remote_translate(
    args: argparse.Namespace,
    texts: Sequence[str] | None = None,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Translates `texts` (or stdin's lines, if none) on a remote server; prints results.

    Returns:
        0 on success, 1 if the server answered an error (printed to stderr as
        `error: CODE: message`), 2 for bad arguments.
    """
    from keras_attention_client.serving_error import ServingError

    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    if not texts:
        texts = [line.rstrip("\n") for line in sys.stdin]
    try:
        translations = remote_translations(args, texts)
    except (ValueError, TypeError, OSError) as error:
        print(f"error: {error}", file=stderr)
        return 2
    except ServingError as error:
        print(f"error: {error}", file=stderr)
        return 1
    for source, translation in zip(texts, translations, strict=True):
        if getattr(args, "output_format", "text") == "json":
            record = {"source": source, **translation.to_dict()}
            print(json.dumps(record, ensure_ascii=False), file=stdout)
        else:
            print(translation.text, file=stdout)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The parser of `keras-attention-client`."""
    parser = argparse.ArgumentParser(
        prog="keras-attention-client",
        description="Translate with a model served by TensorFlow Serving (or python -m keras_attention.serving), "
        "over gRPC or REST, without TensorFlow.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    translate = commands.add_parser(
        "translate",
        help="translate TEXT arguments, else the lines of --file, else the lines of stdin",
        description="Translate TEXT arguments, else the lines of --file, else the lines of "
        "stdin; one translation per line on stdout (exit 1 on a server error).",
    )
    translate.add_argument("texts", metavar="TEXT", nargs="*", help="sentences to translate")
    translate.add_argument("--file", help="read sentences from this file, one per line")
    translate.add_argument(
        "--beam",
        type=int,
        default=1,
        help="beam width; > 1 selects the beam_search signature (the export fixes the width)",
    )
    translate.add_argument(
        "--batch-size",
        dest="batch_size",
        type=int,
        default=64,
        help="sentences per request (default: %(default)s)",
    )
    add_client_arguments(translate, include_batch_size=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """`keras-attention-client translate --server HOST:PORT [flags] TEXT...`."""
    args = build_parser().parse_args(argv)
    texts = list(args.texts)
    if not texts and args.file:
        try:
            with open(args.file, encoding="utf-8") as file:
                texts = [line.rstrip("\n") for line in file]
        except OSError as error:
            print(f"error: cannot read --file: {error}", file=sys.stderr)
            return 2
    return run_remote_translate(args, texts)
