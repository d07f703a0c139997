"""The local model server's command line (`tensorflow_model_server`'s flags).

`python -m keras_attention.serving` is `main`; `keras-attention serve` adds
`add_serve_arguments` to its parser, with `run_serve` as the handler.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import signal
import threading
from collections.abc import Sequence

logger = logging.getLogger(__name__)


def _parse_bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")
    return lowered in ("1", "true", "yes", "on")


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds `tensorflow_model_server`'s flags: one per `ServerOptions` field, with its help.

    Each flag is spelled with dashes (`--model-base-path`), as every command's, and also
    takes TF Serving's underscore spelling (`--model_base_path`). Booleans take
    `--flag`, `--flag=true` or `--flag=false`.
    """
    from keras_attention.serving.server.server_options import ServerOptions

    group = parser.add_argument_group("model server (tensorflow_model_server flags)")
    for field in dataclasses.fields(ServerOptions):
        # The dashed spelling first (as every other command's flags), TF Serving's as an alias.
        names = dict.fromkeys([f"--{field.name.replace('_', '-')}", f"--{field.name}"])
        help_text = field.metadata["help"]
        if field.type == "bool":
            kind = dict(type=_parse_bool, nargs="?", const=True, metavar="BOOL")
            help_text = f"{help_text} (default {str(field.default).lower()})"
        else:
            kind = dict(type={"int": int, "float": float}.get(field.type.split(" ")[0], str))
            if field.default not in (None, "") and "default" not in help_text:
                end = "." if help_text.endswith(".") else ""
                help_text = f"{help_text.removesuffix('.')} (default: {field.default}){end}"
        group.add_argument(*names, dest=field.name, default=field.default, help=help_text, **kind)
    group.add_argument(
        "--log-level",
        "--log_level",
        dest="log_level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="Logging level of the server (default: INFO).",
    )
    # The name the ready line starts with: `keras-attention serve`, `python -m ...`.
    parser.set_defaults(serve_command=parser.prog)


def options_from_args(args: argparse.Namespace):
    """The `ServerOptions` the parsed flags describe (raises ValueError if inconsistent)."""
    from keras_attention.serving.server.server_options import ServerOptions

    fields = dataclasses.fields(ServerOptions)
    return ServerOptions(**{field.name: getattr(args, field.name) for field in fields})


def run_serve(args: argparse.Namespace) -> int:
    """Runs the model server until SIGTERM / SIGINT; returns the exit status.

    On the signal, new requests are refused, running ones get
    `--shutdown_grace_seconds` to finish, the models are unloaded, and the
    function returns 0. A configuration or bind error returns 1.
    """
    if not logging.getLogger().handlers:
        layout = "%(asctime)s %(levelname)s %(name)s: %(message)s"
        logging.basicConfig(level=args.log_level, format=layout)
    logging.getLogger("keras_attention.serving").setLevel(args.log_level)
    try:
        from keras_attention.serving.server.model_server import ModelServer

        server = ModelServer(options_from_args(args))
        server.start()
    except Exception as error:  # noqa: BLE001 - report any start-up failure as exit status
        logger.error("Could not start the model server: %s", error)
        return 1
    stop, previous = threading.Event(), {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, lambda signum, frame: stop.set())
    line = serving_line(server, args.serve_command)
    if line is None:
        waiting = [name for name, versions in server.available_versions().items() if not versions]
        logger.warning("Serving no version of %s yet; waiting for one", ", ".join(waiting))
    try:
        while True:
            if line:  # once, on stdout: the line scripts wait for
                print(line, flush=True)
            if stop.wait(0.5) or server.wait(0):
                break
            line = serving_line(server, args.serve_command) if line is None else ""
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    logger.info("Model server stopped")
    return 0


def serving_line(server, command: str) -> str | None:
    """The line that says `server` serves, or `None` while a configured model has no version.

    E.g. `keras-attention serve: serving fra-eng (version 1) on gRPC
    127.0.0.1:8500, REST http://127.0.0.1:8501`: the endpoints as a client's
    `--server` takes them (and, with `--ui`, `, page http://127.0.0.1:8501/`).
    """
    versions = server.available_versions()
    if not all(versions.values()):
        return None
    models = ", ".join(
        f"{name} (version{'s' if len(numbers) > 1 else ''} {', '.join(map(str, numbers))})"
        for name, numbers in versions.items()
    )
    rest = f", REST {server.rest_url}" if server.rest_url else ""
    if rest and server.options.ui:
        rest += f", page {server.rest_url}/"
    return f"{command}: serving {models or 'no models'} on gRPC {server.address}{rest}"


def build_parser() -> argparse.ArgumentParser:
    """The parser of `python -m keras_attention.serving`."""
    parser = argparse.ArgumentParser(
        prog="python -m keras_attention.serving",
        description=(
            "A local TensorFlow Serving look-alike: serves SavedModels over TF Serving's gRPC "
            "and REST APIs, with tensorflow_model_server's flags and config files."
        ),
    )
    parser.add_argument(
        "--version",
        action="version",
        version=_version_line(),
        help="print the installed version and exit",
    )
    add_serve_arguments(parser)
    return parser


def _version_line() -> str:
    """What `--version` prints: the installed `keras-attention-seq2seq` distribution's version."""
    from importlib import metadata

    try:
        version = metadata.version("keras-attention-seq2seq")
    except metadata.PackageNotFoundError:
        version = "(not installed)"
    return f"keras-attention-seq2seq {version}"


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m keras_attention.serving [flags]`."""
    return run_serve(build_parser().parse_args(argv))
