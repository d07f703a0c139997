"""The local model server's settings, named after `tensorflow_model_server`'s flags."""

from __future__ import annotations

import dataclasses
import os


@dataclasses.dataclass
class ServerOptions:
    """Settings of `ModelServer`; field names are `tensorflow_model_server`'s flags.

    Attributes:
        port: gRPC port (0: any free port, see `ModelServer.port`).
        grpc_socket_path: also listen on this UNIX socket (`""`: no).
        rest_api_port: REST port (0: no REST API, as TF Serving).
        host: interface to bind. Defaults to `127.0.0.1` (TF Serving binds
            every interface; pass `0.0.0.0` for that, e.g. in a container).
        model_name: the model served with `model_base_path`.
        model_base_path: directory holding integer version directories.
        model_config_file: a `ModelServerConfig` text proto (several models,
            version policies, labels); overrides `model_name`/`model_base_path`.
        model_config_file_poll_wait_seconds: re-read `model_config_file` this
            often and apply changes (0: read once).
        file_system_poll_wait_seconds: look for new versions this often
            (0: only at start-up).
        grpc_max_threads: gRPC worker threads (concurrent requests).
        grpc_channel_arguments: extra gRPC server arguments, `"k=v,k2=v2"`.
        max_request_bytes: largest accepted request (gRPC
            `max_receive_message_length`, REST body size).
        rest_api_num_threads: unused (one thread per REST connection); kept
            for flag compatibility.
        rest_api_timeout_in_ms: Session timeout for REST requests (504 past it).
        enable_model_warmup: replay `assets.extra/tf_serving_warmup_requests`.
        max_num_load_retries: retries of a failed version load.
        load_retry_interval_micros: microseconds between load retries.
        allow_version_labels_for_unavailable_models: accept labels on versions
            that are not loaded yet.
        monitoring_config_file: a `MonitoringConfig` text proto; enables the
            Prometheus page on the REST port.
        ssl_config_file: an `SSLConfig` text proto (PEM key/cert, client CA)
            for TLS on the gRPC port.
        enable_batching: merge concurrent Predict requests for the same
            model version and signature into one Session run
            (`keras_attention.serving.server.batching`).
        batching_parameters_file: a `BatchingParameters` text proto
            (`max_batch_size`, `batch_timeout_micros`, `max_enqueued_batches`,
            `num_batch_threads`, `allowed_batch_sizes`); TF Serving's
            defaults without it.
        tensorflow_session_parallelism: both thread pools' size (0: auto).
        tensorflow_intra_op_parallelism: intra-op threads (0: auto).
        tensorflow_inter_op_parallelism: inter-op threads (0: auto).
        enable_signature_method_name_check: check SignatureDef method names in
            Classify / Regress / MultiInference.
        shutdown_grace_seconds: on stop/SIGTERM, how long running requests
            may take to finish.
    """

    port: int = 8500
    grpc_socket_path: str = ""
    rest_api_port: int = 0
    host: str = "127.0.0.1"
    model_name: str = "default"
    model_base_path: str = ""
    model_config_file: str = ""
    model_config_file_poll_wait_seconds: float = 0.0
    file_system_poll_wait_seconds: float = 1.0
    grpc_max_threads: int = dataclasses.field(default_factory=lambda: 4 * (os.cpu_count() or 1))
    grpc_channel_arguments: str = ""
    max_request_bytes: int = 64 * 1024 * 1024
    rest_api_num_threads: int = 0
    rest_api_timeout_in_ms: int = 30000
    enable_model_warmup: bool = True
    max_num_load_retries: int = 5
    load_retry_interval_micros: int = 60_000_000
    allow_version_labels_for_unavailable_models: bool = False
    monitoring_config_file: str = ""
    ssl_config_file: str = ""
    enable_batching: bool = False
    batching_parameters_file: str = ""
    tensorflow_session_parallelism: int = 0
    tensorflow_intra_op_parallelism: int = 0
    tensorflow_inter_op_parallelism: int = 0
    enable_signature_method_name_check: bool = False
    shutdown_grace_seconds: float = 30.0

    def __post_init__(self):
        if not self.model_config_file and not self.model_base_path:
            raise ValueError(
                "Either model_config_file or model_base_path must be set. Received: "
                f"model_config_file={self.model_config_file!r}, "
                f"model_base_path={self.model_base_path!r}"
            )
        for name in ("port", "rest_api_port"):
            value = getattr(self, name)
            if not 0 <= value <= 65535:
                raise ValueError(f"{name} must be in [0, 65535]. Received: {name}={value}")
        if self.grpc_max_threads < 1:
            raise ValueError(
                f"grpc_max_threads must be >= 1. Received: grpc_max_threads={self.grpc_max_threads}"
            )
        if self.max_request_bytes < 1:
            raise ValueError(
                f"max_request_bytes must be >= 1. Received: max_request_bytes={self.max_request_bytes}"
            )
        for name in (
            "file_system_poll_wait_seconds",
            "model_config_file_poll_wait_seconds",
            "shutdown_grace_seconds",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0. Received: {name}={getattr(self, name)}")

    def grpc_arguments(self) -> list[tuple[str, int | str]]:
        """`grpc_channel_arguments` parsed like TF Serving (ints where they parse)."""
        arguments: list[tuple[str, int | str]] = []
        for item in filter(None, (part.strip() for part in self.grpc_channel_arguments.split(","))):
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise ValueError(
                    "grpc_channel_arguments must be 'key=value,...'. "
                    f"Received: {self.grpc_channel_arguments!r}"
                )
            try:
                arguments.append((key.strip(), int(value)))
            except ValueError:
                arguments.append((key.strip(), value.strip()))
        return arguments
