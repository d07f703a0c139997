"""The local model server's settings, named after `tensorflow_model_server`'s flags."""

from __future__ import annotations

import dataclasses
import os
from typing import Any


def _flag(default: Any, help_text: str) -> Any:
    return dataclasses.field(default=default, metadata={"help": help_text})


@dataclasses.dataclass
class ServerOptions:
    """Settings of `ModelServer`; each field is the `tensorflow_model_server` flag of its name.

    Each field's help (in its metadata) is the flag's help of `keras-attention serve`
    and `python -m keras_attention.serving`. `model_base_path` or `model_config_file`
    is required. Unlike TF Serving, `host` defaults to `127.0.0.1`; `ui` (the
    translation page at `/` of the REST port) is this server's own.
    """

    port: int = _flag(8500, "gRPC port (0: pick a free one).")
    grpc_socket_path: str = _flag("", "Also serve gRPC on this UNIX socket.")
    rest_api_port: int = _flag(0, "REST API port (0: no REST API).")
    host: str = _flag("127.0.0.1", "Interface to bind (0.0.0.0 for all, e.g. in a container).")
    model_name: str = _flag("default", "Name of the model (ignored with --model-config-file).")
    model_base_path: str = _flag("", "Directory of integer version subdirectories.")
    model_config_file: str = _flag(
        "", "ModelServerConfig text proto: several models, version policies, labels."
    )
    model_config_file_poll_wait_seconds: float = _flag(
        0.0, "Re-read --model-config-file this often and apply changes (0: once)."
    )
    file_system_poll_wait_seconds: float = _flag(
        1.0, "Look for new model versions this often (0: only at start-up)."
    )
    grpc_max_threads: int | None = _flag(
        None, "gRPC worker threads, i.e. concurrent requests (default: 4 per CPU)."
    )
    grpc_channel_arguments: str = _flag("", "Extra gRPC server arguments, 'key=value,...'.")
    max_request_bytes: int = _flag(
        64 * 1024 * 1024, "Largest request accepted (gRPC max receive message length, REST body)."
    )
    rest_api_timeout_in_ms: int = _flag(30000, "Timeout of REST requests (504 past it).")
    enable_model_warmup: bool = _flag(
        True, "Replay assets.extra/tf_serving_warmup_requests on load."
    )
    max_num_load_retries: int = _flag(5, "Retries of a version that fails to load.")
    load_retry_interval_micros: int = _flag(60_000_000, "Microseconds between load retries.")
    allow_version_labels_for_unavailable_models: bool = _flag(
        False, "Accept version labels on versions not loaded yet."
    )
    enable_batching: bool = _flag(
        False, "Merge concurrent Predict requests into batched Session runs."
    )
    batching_parameters_file: str = _flag(
        "", "BatchingParameters text proto for --enable-batching (max_batch_size, ...)."
    )
    tensorflow_session_parallelism: int = _flag(0, "Threads of both TF pools (0: auto).")
    tensorflow_intra_op_parallelism: int = _flag(0, "TF intra-op threads (0: auto).")
    tensorflow_inter_op_parallelism: int = _flag(0, "TF inter-op threads (0: auto).")
    shutdown_grace_seconds: float = _flag(30.0, "On SIGTERM, time for running requests to finish.")
    ui: bool = _flag(
        False,
        "Also serve the translation page at / on the REST port (not a TF Serving flag; "
        "needs --rest-api-port).",
    )

    def __post_init__(self):
        if self.grpc_max_threads is None:
            self.grpc_max_threads = 4 * (os.cpu_count() or 1)
        if not self.model_config_file and not self.model_base_path:
            raise ValueError(
                "Either model_config_file or model_base_path must be set. Received: "
                f"model_config_file={self.model_config_file!r}, "
                f"model_base_path={self.model_base_path!r}"
            )
        if self.ui and not self.rest_api_port:
            raise ValueError(
                "ui serves the page on the REST port: set rest_api_port. "
                f"Received: ui={self.ui}, rest_api_port={self.rest_api_port}"
            )
        limits = {"port": (0, 65535), "rest_api_port": (0, 65535), "grpc_max_threads": (1, None)}
        limits |= {"max_request_bytes": (1, None), "shutdown_grace_seconds": (0, None)}
        limits |= {name: (0, None) for name in vars(self) if name.endswith("poll_wait_seconds")}
        for name, (low, high) in limits.items():
            value = getattr(self, name)
            if value < low or (high is not None and value > high):
                bounds = f"in [{low}, {high}]" if high is not None else f">= {low}"
                raise ValueError(f"{name} must be {bounds}. Received: {name}={value}")

    def grpc_arguments(self) -> list[tuple[str, int | str]]:
        """`grpc_channel_arguments` parsed like TF Serving (ints where they parse)."""
        arguments: list[tuple[str, int | str]] = []
        for item in filter(None, (part.strip() for part in self.grpc_channel_arguments.split(","))):
            key, sep, value = (part.strip() for part in item.partition("="))
            if not sep or not key:
                raise ValueError(
                    "grpc_channel_arguments must be 'key=value,...'. "
                    f"Received: {self.grpc_channel_arguments!r}"
                )
            arguments.append((key, int(value) if value.lstrip("-").isdigit() else value))
        return arguments
