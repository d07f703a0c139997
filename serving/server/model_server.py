"""A local stand-in for `tensorflow_model_server`: same gRPC and REST APIs, same config files."""

from __future__ import annotations

import logging
import socket
import threading
from concurrent import futures

import grpc
import tensorflow as tf
from tensorflow_serving.apis import model_service_pb2_grpc, prediction_service_pb2_grpc
from tensorflow_serving.config import model_server_config_pb2

from keras_attention.serving.server import config_files
from keras_attention.serving.server.batching import Batcher, BatchingOptions
from keras_attention.serving.server.grpc_services import ModelService, PredictionService
from keras_attention.serving.server.rest_app import RestApi, RestServer
from keras_attention.serving.server.servable_manager import ServableManager
from keras_attention.serving.server.server_options import ServerOptions
from keras_attention_client.wire.errors import ServingError
from keras_attention_client.wire.protos import model_listing_pb2_grpc

logger = logging.getLogger(__name__)


class ModelServer:
    """Serves SavedModels over TF Serving's gRPC API (and REST API) from Python.

    For development and tests where `tensorflow_model_server` is not available:
    the same protocols, configuration files, status codes and messages, and each
    version run on the real server's path (its own Graph and Session). It also
    lists its models (`keras_attention.ModelListing`, `GET /v1/models`).

    `start()` loads the models (blocking, as TF Serving), then serves; `stop(grace)`
    refuses new requests, lets running ones finish for up to `grace` s, unloads.

    Args:
        options: the server's settings (`ServerOptions`, flag names of
            `tensorflow_model_server`).

    Example:

    ```python
    options = ServerOptions(port=0, model_name="translator", model_base_path="/tmp/export")
    with ModelServer(options) as server:
        client = TranslationClient(server.address, model_name="translator")
        print(client.translate(["Hello."])[0].text)
    ```
    """

    def __init__(self, options: ServerOptions):
        self.options = options
        if options.model_config_file:
            self.config = config_files.read_model_server_config(options.model_config_file)
        else:  # the one model --model_name / --model_base_path stand for
            self.config = model_server_config_pb2.ModelServerConfig()
            self.config.model_config_list.config.add(
                name=options.model_name, base_path=options.model_base_path
            )
        parameters = None
        if options.batching_parameters_file:
            parameters = config_files.read_batching_parameters(options.batching_parameters_file)
            if not options.enable_batching:
                logger.warning("--batching_parameters_file is ignored without --enable_batching")
        batching = BatchingOptions.from_proto(parameters) if options.enable_batching else None
        self.batcher = None if batching is None else Batcher(batching)
        intra = options.tensorflow_session_parallelism or options.tensorflow_intra_op_parallelism
        inter = options.tensorflow_session_parallelism or options.tensorflow_inter_op_parallelism
        self.manager = ServableManager(
            self.config,
            file_system_poll_wait_seconds=options.file_system_poll_wait_seconds,
            enable_model_warmup=options.enable_model_warmup,
            max_num_load_retries=options.max_num_load_retries,
            load_retry_interval=options.load_retry_interval_micros / 1e6,
            allow_version_labels_for_unavailable_models=(
                options.allow_version_labels_for_unavailable_models
            ),
            session_config=tf.compat.v1.ConfigProto(
                intra_op_parallelism_threads=intra, inter_op_parallelism_threads=inter
            ),
        )
        self._grpc_server: grpc.Server | None = None
        self._http_server: RestServer | None = None
        self._port: int | None = None
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()

    @property
    def port(self) -> int:
        """The bound gRPC port."""
        if self._port is None:
            raise RuntimeError("The server is not started.")
        return self._port

    @property
    def address(self) -> str:
        """`host:port` of the gRPC endpoint, for `TranslationClient`."""
        host = "127.0.0.1" if self.options.host in ("0.0.0.0", "::", "") else self.options.host
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"

    @property
    def rest_url(self) -> str | None:
        """`http://host:port` of the REST endpoint, for `RestTranslationClient`."""
        if self._http_server is None:
            return None
        return f"http://{self.address.rsplit(':', 1)[0]}:{self._http_server.port}"

    def available_versions(self) -> dict[str, list[int]]:
        """Each configured model's AVAILABLE versions, ascending (`[]`: not serving yet)."""
        return {name: self.manager.available_versions(name) for name in self.manager.model_names()}

    def start(self) -> None:
        """Loads the models, then starts serving (gRPC, REST, pollers)."""
        options = self.options
        host = f"[{options.host}]" if ":" in options.host else options.host
        try:
            self.manager.start()
            runner = None if self.batcher is None else self.batcher.run
            if self.batcher is not None:
                logger.info("Batching requests: %s", self.batcher.options)
            # --grpc_channel_arguments override the defaults (gRPC keeps the first of duplicates).
            arguments = {
                "grpc.max_receive_message_length": options.max_request_bytes,
                "grpc.max_send_message_length": -1,
                "grpc.so_reuseport": 0,
                **dict(options.grpc_arguments()),
            }
            server = self._grpc_server = grpc.server(
                futures.ThreadPoolExecutor(options.grpc_max_threads, "serving-grpc"),
                options=list(arguments.items()),
            )
            prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(
                PredictionService(self.manager, runner=runner), server
            )
            model_service = ModelService(self.manager)
            model_service_pb2_grpc.add_ModelServiceServicer_to_server(model_service, server)
            model_listing_pb2_grpc.add_ModelListingServicer_to_server(model_service, server)
            try:
                self._port = server.add_insecure_port(f"{host}:{options.port}")
                if options.grpc_socket_path:
                    server.add_insecure_port(f"unix:{options.grpc_socket_path}")
            except RuntimeError as error:
                raise OSError(f"Could not bind gRPC to {host}:{options.port}: {error}") from None
            if not self._port:
                raise OSError(f"Could not bind gRPC to {host}:{options.port}")
            if options.rest_api_port:
                api = RestApi(
                    self.manager, timeout_in_ms=options.rest_api_timeout_in_ms, runner=runner
                )
                routes = ()
                if options.ui:  # the page is its own package, loaded only for --ui
                    from keras_attention.serving.ui.translation_page import TranslationPage

                    routes = TranslationPage().routes()
                self._http_server = RestServer(
                    api,
                    options.host,
                    options.rest_api_port,
                    max_request_bytes=options.max_request_bytes,
                    routes=routes,
                )
        except BaseException:
            self._port = None
            self.stop(0)
            raise
        server.start()
        logger.info("Running gRPC ModelServer at %s:%d ...", options.host, self._port)
        if self._http_server is not None:
            self._http_server.start()
            logger.info("Exporting HTTP/REST API at %s ...", self.rest_url)
        if options.model_config_file and options.model_config_file_poll_wait_seconds > 0:
            threading.Thread(target=self._poll_config_file, daemon=True).start()

    def stop(self, grace: float | None = None) -> None:
        """Refuses new requests, waits up to `grace` s (default `options.shutdown_grace_seconds`)
        for running ones, unloads."""
        with self._stop_lock:
            if not self._stopped.is_set():
                grace = self.options.shutdown_grace_seconds if grace is None else grace
                logger.info("Stopping the model server (grace %.1f s)", grace)
                done = self._grpc_server.stop(grace) if self._grpc_server is not None else None
                if self._http_server is not None:
                    self._http_server.stop(grace)
                if done is not None:
                    done.wait()
                if self.batcher is not None:
                    self.batcher.stop()
                self.manager.stop()
                self._stopped.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Blocks until the server is stopped; returns whether it is."""
        return self._stopped.wait(timeout)

    def __enter__(self) -> ModelServer:
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def _poll_config_file(self) -> None:
        path = self.options.model_config_file
        while not self._stopped.wait(self.options.model_config_file_poll_wait_seconds):
            try:
                config = config_files.read_model_server_config(path)
                if config != self.config:
                    self.manager.reload_config(config)
                    self.config = config
                    logger.info("Reloaded model config from %s", path)
            except (OSError, ValueError, ServingError) as error:
                logger.error("Could not reload %s: %s", path, error)


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (for tests and examples)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]
