"""The client's command line: `keras-attention-client translate --server HOST:PORT TEXT...`.

The same flags as `keras-attention translate --server` (which wires
`add_translate_arguments` and `remote_translations` into its own parser), on
a machine with only the `keras-attention-client` distribution installed:

    keras-attention-client translate --server localhost:8500 --model-name translator "Go."
    echo "I am cold." | keras-attention-client translate --server http://localhost:8501 --format json
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from typing import TextIO

from keras_attention_client.decoding_flags import (
    REMOTE_BEAM_HELP,
    add_sampling_arguments,
    add_search_arguments,
    remote_decoding_options,
)
from keras_attention_client.defaults import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_MODEL_NAME,
    DEFAULT_TIMEOUT,
)
from keras_attention_client.intermixed_argument_parser import IntermixedArgumentParser
from keras_attention_client.request_options import RequestOptions
from keras_attention_client.retry_policy import RetryPolicy
from keras_attention_client.translation_lines import (
    confidence_line,
    next_words_text,
    steering_arguments,
)
from keras_attention_client.wire.contract import DEFAULT_SIGNATURE

DISTRIBUTION = "keras-attention-client"
"""The distribution that installs this package and the `keras-attention-client` command."""


def _version_line() -> str:
    """What `--version` prints: `keras-attention-client X.Y.Z` (the installed distribution's)."""
    from importlib import metadata

    try:
        version = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        version = "(not installed)"
    return f"{DISTRIBUTION} {version}"


def add_translate_arguments(
    parser: argparse.ArgumentParser, *, beam_help: str = REMOTE_BEAM_HELP
) -> None:
    """Adds the flags of every `translate` command: `keras-attention-client translate`'s.

    `keras-attention translate` adds the same (with its own `beam_help`)
    plus its local-only flags, so both commands take the same spellings with
    the same defaults: `--file`, the decoding flags (`add_search_arguments`,
    `add_sampling_arguments`), `--batch-size`, `--format` and
    `add_client_arguments`' server flags.
    Over the wire the decoding flags given are sent as the export's decoding
    inputs (`remote_decoding_options`).

    Args:
        parser: the (sub)parser.
        beam_help: the help text of `--beam-width`.
    """
    parser.add_argument("--file", help="read sentences from this file, one per line")
    add_search_arguments(parser, beam_help=beam_help)
    add_batch_size_argument(parser, "sentences per batch (per request with --server)")
    parser.add_argument(
        "--format",
        dest="output_format",
        choices=["text", "json"],
        default="text",
        help="text: one translation per line; json: one object per line with score, tokens, "
        "token probabilities, confidence and attention (default: text)",
    )
    parser.add_argument(
        "--confidence",
        action="store_true",
        help="text format: print each translation as CONFIDENCE<TAB>TRANSLATION<TAB>TOKEN:"
        "PROBABILITY ..., the confidence being the geometric mean of the token probabilities "
        "(low values mark translations to check)",
    )
    parser.add_argument(
        "--prefix",
        default=None,
        help="start every translation with this text (interactive translation: what the "
        "translator already typed); with --server, calls the search signature",
    )
    parser.add_argument(
        "--next-words",
        dest="next_words",
        type=int,
        default=0,
        help="also list the K most probable words after the prefix (after --prefix, or at "
        "the start), printed after a tab in the text format (default: 0, none)",
    )
    parser.add_argument(
        "--constraint",
        dest="constraints",
        action="append",
        default=None,
        metavar="PHRASE",
        help="a phrase every translation must contain (repeatable); beam search guarantees "
        "it (at --beam-width, 1 included); with --server, calls the search signature",
    )
    parser.add_argument(
        "--glossary",
        default=None,
        metavar="FILE.tsv",
        help="a glossary, one SOURCE<TAB>TARGET per line: a sentence in which SOURCE occurs "
        "(whole words, any case) must translate with TARGET (constraints, as --constraint)",
    )
    add_sampling_arguments(parser)
    add_client_arguments(parser)


def add_batch_size_argument(parser: argparse.ArgumentParser, help_text: str) -> None:
    """`--batch-size N` (default `DEFAULT_BATCH_SIZE`)."""
    parser.add_argument(
        "--batch-size",
        dest="batch_size",
        type=int,
        default=DEFAULT_BATCH_SIZE,
        help=f"{help_text} (default: {DEFAULT_BATCH_SIZE})",
    )


def add_client_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the flags that reach a model server (`--server`, `--model-name`, `--timeout`, ...).

    `client_from_args` and `remote_translations` read these and also
    `--beam-width` (`args.beam_width`), `--batch-size` and the decoding flags, so
    they need a namespace from a parser built with `add_translate_arguments`
    (which adds this group along with the others).
    """
    group = parser.add_argument_group("remote model server")
    group.add_argument(
        "--server",
        default=None,
        help="host:port of a gRPC endpoint (e.g. localhost:8500), or http(s)://host:port "
        "for the REST API (e.g. http://localhost:8501)",
    )
    group.add_argument(
        "--model-name",
        "--model_name",
        dest="model_name",
        default=None,
        help="served model name: the server's --model_name (default: the server's only model; "
        "'default', TF Serving's own default, from a server that cannot list its models)",
    )
    group.add_argument(
        "--signature-name",
        "--signature",
        dest="signature_name",
        default=None,
        help="signature of a request without decoding options: serving_default (greedy), "
        "beam_search (the width fixed at export) or steered_beam_search (beam_search with "
        "--prefix and --constraint per sentence, which a batching server can merge); "
        "decoding options call search, --sample calls sample (default: serving_default)",
    )
    version = group.add_mutually_exclusive_group()
    version.add_argument(
        "--model-version",
        dest="model_version",
        type=int,
        default=None,
        help="pin a model version (default: latest)",
    )
    version.add_argument(
        "--version-label",
        dest="version_label",
        default=None,
        help="pin a version label from the server's model config",
    )
    group.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help="seconds each request may take, waiting for the server to start and its model "
        f"to load included (default: {DEFAULT_TIMEOUT:g})",
    )
    group.add_argument(
        "--max-retries",
        dest="max_retries",
        type=int,
        default=None,
        help="most retries of a request while the server is not ready (default: as many as "
        "--timeout allows)",
    )
    group.add_argument("--tls", action="store_true", help="use TLS with the system's roots")
    group.add_argument(
        "--root-certificates",
        dest="root_certificates",
        default=None,
        help="PEM file of the CA to trust (TLS)",
    )
    group.add_argument(
        "--client-key", dest="client_key", default=None, help="PEM client key (mutual TLS)"
    )
    group.add_argument(
        "--client-certificate",
        dest="client_certificate",
        default=None,
        help="PEM client certificate chain (mutual TLS)",
    )
    group.add_argument(
        "--ssl-target-name-override",
        dest="ssl_target_name_override",
        default=None,
        help="host name to verify in the server certificate",
    )


def client_from_args(args: argparse.Namespace):
    """The `TranslationClient` or `RestTranslationClient` the parsed flags describe.

    `args` holds `add_translate_arguments`' flags. The client calls
    `--signature-name` (default `serving_default`); decoding options such as
    `--beam-width` send the request to `search` instead (see
    `remote_decoding_options`). Without `--model-name`, the server is asked
    for its only model (`default_model_name`: a `ValueError` naming them if
    it serves several).
    """
    if not args.server:
        raise ValueError("--server HOST:PORT (or http://HOST:PORT) is required")
    signature = args.signature_name or DEFAULT_SIGNATURE
    request = RequestOptions(
        model_name=args.model_name or DEFAULT_MODEL_NAME,
        signature_name=signature,
        timeout=args.timeout,
        version=args.model_version,
        version_label=args.version_label,
        batch_size=args.batch_size,
    )
    retry = RetryPolicy(max_retries=args.max_retries)
    if args.server.startswith(("http://", "https://")):
        from keras_attention_client.http_options import HttpOptions
        from keras_attention_client.rest_translation_client import RestTranslationClient

        http = HttpOptions(cafile=args.root_certificates)
        client = RestTranslationClient(args.server, request, retry, http)
    else:
        from keras_attention_client.channel_options import ChannelOptions
        from keras_attention_client.translation_client import TranslationClient

        channel = ChannelOptions(
            tls=args.tls,
            root_certificates=args.root_certificates,
            private_key=args.client_key,
            certificate_chain=args.client_certificate,
            ssl_target_name_override=args.ssl_target_name_override,
        )
        client = TranslationClient(args.server, request, retry, channel)
    if not args.model_name:  # the server's only model (TF Serving's default name if it cannot list)
        try:
            client.model_name = client.default_model_name()
        except BaseException:
            client.close()
            raise
    return client


def remote_translations(args: argparse.Namespace, texts: Sequence[str]) -> list:
    """Translates `texts` on the server the flags name; returns `Translation`s.

    With `--n-best N` (N > 1), one list of N `Translation`s per text.

    Raises:
        ValueError: bad flags (e.g. no `--server`).
        ServingError: the server's error.
    """
    from keras_attention_client.wire.errors import ServingError

    options = remote_decoding_options(args)
    try:
        with client_from_args(args) as client:
            return client.translate(list(texts), options, **steering_arguments(args, texts))
    except ServingError as error:
        hint = model_name_hint(error, args.model_name)
        if hint is None:
            raise
        raise ServingError(
            error.code, f"{error.message}. {hint}", http_status=error.http_status
        ) from error


def model_name_hint(error, model_name: str | None) -> str | None:
    """What to do about a `NOT_FOUND` for the model name, or `None` for other errors.

    TF Serving cannot list the models it serves, so the hint names where the
    name comes from: the server's `--model_name` (TF
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
    from keras_attention_client.wire.errors import ServingError

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
        listed = isinstance(translation, list)
        if args.output_format == "json":
            if listed:
                record = {"source": source, "n_best": [t.to_dict() for t in translation]}
            else:
                record = {"source": source, **translation.to_dict()}
            print(json.dumps(record, ensure_ascii=False), file=stdout)
        else:
            for one in translation if listed else [translation]:
                if args.confidence:
                    line = confidence_line(
                        one.text, one.confidence, one.tokens, one.token_probabilities
                    )
                else:
                    line = one.text
                if args.next_words:
                    line += "\t" + next_words_text(one.next_words)
                print(line, file=stdout)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The parser of `keras-attention-client`."""
    parser = argparse.ArgumentParser(
        prog="keras-attention-client",
        description="Translate with a model served by TensorFlow Serving (or python -m keras_attention.serving), "
        "over gRPC or REST, without TensorFlow.",
    )
    version = _version_line()
    parser.add_argument(
        "--version", action="version", version=version, help="print the installed version and exit"
    )
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=IntermixedArgumentParser
    )
    translate = commands.add_parser(
        "translate",
        help="translate TEXT arguments, else the lines of --file, else the lines of stdin",
        description="Translate TEXT arguments, else the lines of --file, else the lines of "
        "stdin; one translation per line on stdout (exit 1 on a server error).",
    )
    translate.add_argument("texts", metavar="TEXT", nargs="*", help="sentences to translate")
    translate.add_argument(
        "-v", "--verbose", action="store_true", help="log the retries while waiting for a server"
    )
    translate.add_argument(
        "--version", action="version", version=version, help="print the installed version and exit"
    )
    add_translate_arguments(translate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """`keras-attention-client translate --server HOST:PORT [flags] TEXT...`."""
    args = build_parser().parse_args(argv)
    if args.verbose:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    texts = list(args.texts)
    if not texts and args.file:
        try:
            with open(args.file, encoding="utf-8") as file:
                texts = [line.rstrip("\n") for line in file]
        except OSError as error:
            print(f"error: cannot read --file: {error}", file=sys.stderr)
            return 2
    return run_remote_translate(args, texts)
