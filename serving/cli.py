"""Command-line entry points: the local model server and the remote-translation client.

`python -m serving --model_name=translator --model_base_path=/models/translator`
runs the server with `tensorflow_model_server`'s flags. `keras-attention`
wires the same functions into its `serve` and `translate --server` subcommands:

```python
serve = subparsers.add_parser("serve", help="...")
serving.cli.add_serve_arguments(serve)
serve.set_defaults(handler=lambda args: serving.cli.run_serve(args))
```
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from typing import TextIO

logger = logging.getLogger(__name__)

# Flags of tensorflow_model_server we implement: (name, type, default, help).
_SERVE_FLAGS: list[tuple[str, type, object, str]] = [
    ("port", int, 8500, "gRPC port (0: pick a free one)."),
    ("grpc_socket_path", str, "", "Also serve gRPC on this UNIX socket."),
    ("rest_api_port", int, 0, "REST API port (0: no REST API)."),
    ("host", str, "127.0.0.1", "Interface to bind (0.0.0.0 for all, e.g. in a container)."),
    ("model_name", str, "default", "Name of the model (ignored with --model_config_file)."),
    ("model_base_path", str, "", "Directory of integer version subdirectories."),
    (
        "model_config_file",
        str,
        "",
        "ModelServerConfig text proto: several models, version policies, labels.",
    ),
    (
        "model_config_file_poll_wait_seconds",
        float,
        0.0,
        "Re-read --model_config_file this often (0: once).",
    ),
    (
        "file_system_poll_wait_seconds",
        float,
        1.0,
        "Look for new model versions this often (0: only at start-up).",
    ),
    ("grpc_max_threads", int, None, "gRPC worker threads (default 4 per CPU)."),
    ("grpc_channel_arguments", str, "", "Extra gRPC server arguments, 'key=value,...'."),
    (
        "max_request_bytes",
        int,
        64 * 1024 * 1024,
        "Largest request accepted (gRPC max receive message length, REST body).",
    ),
    ("rest_api_num_threads", int, 0, "Accepted for compatibility (a thread per connection)."),
    ("rest_api_timeout_in_ms", int, 30000, "Timeout of REST requests (504 past it)."),
    ("max_num_load_retries", int, 5, "Retries of a version that fails to load."),
    ("load_retry_interval_micros", int, 60_000_000, "Microseconds between load retries."),
    ("monitoring_config_file", str, "", "MonitoringConfig text proto (Prometheus page)."),
    ("ssl_config_file", str, "", "SSLConfig text proto: TLS for the gRPC port."),
    ("batching_parameters_file", str, "", "BatchingParameters text proto (validated)."),
    ("tensorflow_session_parallelism", int, 0, "Threads of both TF pools (0: auto)."),
    ("tensorflow_intra_op_parallelism", int, 0, "TF intra-op threads (0: auto)."),
    ("tensorflow_inter_op_parallelism", int, 0, "TF inter-op threads (0: auto)."),
    ("shutdown_grace_seconds", float, 30.0, "On SIGTERM, time for running requests to finish."),
]
_SERVE_BOOL_FLAGS: list[tuple[str, bool, str]] = [
    ("enable_model_warmup", True, "Replay assets.extra/tf_serving_warmup_requests on load."),
    (
        "allow_version_labels_for_unavailable_models",
        False,
        "Accept version labels on versions not loaded yet.",
    ),
    ("enable_batching", False, "Accepted for compatibility; requests are not batched."),
    (
        "enable_signature_method_name_check",
        False,
        "Check SignatureDef method names for Classify/Regress/MultiInference.",
    ),
]


def _parse_bool(value: str | bool) -> bool:
    if isinstance(value, bool):
        return value
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


def _option_strings(name: str) -> list[str]:
    dashed = name.replace("_", "-")
    return [f"--{name}"] if dashed == name else [f"--{name}", f"--{dashed}"]


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds `tensorflow_model_server`'s flags (`--port`, `--model_base_path`, ...).

    Each flag also has a dashed spelling (`--model-base-path`). Booleans take
    `--flag`, `--flag=true` or `--flag=false`.
    """
    group = parser.add_argument_group("model server (tensorflow_model_server flags)")
    for name, kind, default, help_text in _SERVE_FLAGS:
        group.add_argument(
            *_option_strings(name), dest=name, type=kind, default=default, help=help_text
        )
    for name, default, help_text in _SERVE_BOOL_FLAGS:
        group.add_argument(
            *_option_strings(name),
            dest=name,
            type=_parse_bool,
            nargs="?",
            const=True,
            default=default,
            metavar="BOOL",
            help=f"{help_text} (default {str(default).lower()})",
        )
    group.add_argument(
        "--log_level",
        "--log-level",
        dest="log_level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="Logging level of the server.",
    )


def options_from_args(args: argparse.Namespace):
    """The `ServerOptions` the parsed flags describe (raises ValueError if inconsistent)."""
    from serving.server_options import ServerOptions

    values = {name: getattr(args, name) for name, *_ in _SERVE_FLAGS}
    values.update({name: getattr(args, name) for name, *_ in _SERVE_BOOL_FLAGS})
    if values["grpc_max_threads"] is None:
        values.pop("grpc_max_threads")
    return ServerOptions(**values)


def run_serve(args: argparse.Namespace) -> int:
    """Runs the model server until SIGTERM / SIGINT; returns the exit status.

    On the signal, new requests are refused, running ones get
    `--shutdown_grace_seconds` to finish, the models are unloaded, and the
    function returns 0. A configuration or bind error returns 1.
    """
    _configure_logging(getattr(args, "log_level", "INFO"))
    try:
        from serving.model_server import ModelServer

        server = ModelServer(options_from_args(args))
        server.start()
    except Exception as error:  # noqa: BLE001 - report any start-up failure as exit status
        logger.error("Could not start the model server: %s", error)
        return 1
    stop = threading.Event()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, lambda signum, frame: stop.set())
    rest = f", REST at {server.rest_url}" if server.rest_url else ""
    logger.info("Model server ready: gRPC at %s%s", server.address, rest)
    try:
        while not stop.wait(0.5) and not server.wait(0):
            pass
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    logger.info("Model server stopped")
    return 0


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
        signature = "beam_search" if beam > 1 else "serving_default"
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
        from serving.rest_translation_client import RestTranslationClient

        return RestTranslationClient(server, cafile=root_certificates, **common)
    from serving.translation_client import TranslationClient

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
    from serving.serving_error import ServingError

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
    from serving.serving_error import ServingError

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
    """The parser of `python -m serving`."""
    parser = argparse.ArgumentParser(
        prog="python -m serving",
        description=(
            "A local TensorFlow Serving look-alike: serves SavedModels over TF Serving's gRPC "
            "and REST APIs, with tensorflow_model_server's flags and config files."
        ),
    )
    add_serve_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m serving [flags]`."""
    args = build_parser().parse_args(argv)
    return run_serve(args)


def _configure_logging(level: str) -> None:
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("serving").setLevel(level)
