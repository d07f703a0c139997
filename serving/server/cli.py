"""The local model server's command line: `tensorflow_model_server`'s flags.

`python -m keras_attention.serving --model_name=translator --model_base_path=/models/translator`
runs the server. `keras-attention serve` wires the same functions in:

```python
serve = subparsers.add_parser("serve", help="...")
keras_attention.serving.server.cli.add_serve_arguments(serve)
serve.set_defaults(handler=keras_attention.serving.server.cli.run_serve)
```
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from collections.abc import Sequence

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
    (
        "batching_parameters_file",
        str,
        "",
        "BatchingParameters text proto for --enable_batching (max_batch_size, ...).",
    ),
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
    (
        "enable_batching",
        False,
        "Merge concurrent Predict requests into batched Session runs.",
    ),
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
    # The name the ready line starts with: `keras-attention serve`, `python -m ...`.
    parser.set_defaults(serve_command=parser.prog)


def options_from_args(args: argparse.Namespace):
    """The `ServerOptions` the parsed flags describe (raises ValueError if inconsistent)."""
    from keras_attention.serving.server.server_options import ServerOptions

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
        from keras_attention.serving.server.model_server import ModelServer

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
    command = getattr(args, "serve_command", None) or "python -m keras_attention.serving"
    announced = _announce_when_serving(server, command, announced=False)
    if not announced:
        waiting = [name for name, versions in server.available_versions().items() if not versions]
        logger.warning("Serving no version of %s yet; waiting for one", ", ".join(waiting))
    try:
        while not stop.wait(0.5) and not server.wait(0):
            announced = _announce_when_serving(server, command, announced)
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
    `--server` takes them.
    """
    versions = server.available_versions()
    if not all(versions.values()):
        return None
    models = ", ".join(
        f"{name} (version{'s' if len(numbers) > 1 else ''} {', '.join(map(str, numbers))})"
        for name, numbers in versions.items()
    )
    rest = f", REST {server.rest_url}" if server.rest_url else ""
    return f"{command}: serving {models or 'no models'} on gRPC {server.address}{rest}"


def _announce_when_serving(server, command: str, announced: bool) -> bool:
    """Prints `serving_line` to stdout (flushed) once; returns whether it has been."""
    if announced:
        return True
    line = serving_line(server, command)
    if line is None:
        return False
    print(line, flush=True)
    return True


def build_parser() -> argparse.ArgumentParser:
    """The parser of `python -m keras_attention.serving`."""
    parser = argparse.ArgumentParser(
        prog="python -m keras_attention.serving",
        description=(
            "A local TensorFlow Serving look-alike: serves SavedModels over TF Serving's gRPC "
            "and REST APIs, with tensorflow_model_server's flags and config files."
        ),
    )
    add_serve_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m keras_attention.serving [flags]`."""
    args = build_parser().parse_args(argv)
    return run_serve(args)


def _configure_logging(level: str) -> None:
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("serving").setLevel(level)
