"""A local stand-in for `tensorflow_model_server`: same gRPC and REST APIs, same config files."""

from __future__ import annotations

import logging
import socket
import threading
from concurrent import futures

import grpc
import tensorflow as tf
from tensorflow_serving.apis import model_service_pb2_grpc, prediction_service_pb2_grpc

from keras_attention.serving.server import config_files
from keras_attention.serving.server.batching import Batcher, BatchingOptions
from keras_attention.serving.server.model_service import ModelService
from keras_attention.serving.server.prediction_service import PredictionService
from keras_attention.serving.server.rest_app import RestApi, RestServer
from keras_attention.serving.server.servable_manager import ServableManager
from keras_attention.serving.server.server_options import ServerOptions
from keras_attention.serving.server.translation_page import TranslationPage
from keras_attention_client.wire.errors import ServingError
from keras_attention_client.wire.protos import model_listing_pb2_grpc

logger = logging.getLogger(__name__)


class ModelServer:
    """Serves SavedModels over TF Serving's gRPC API (and REST API) from Python.

    For development and tests where `tensorflow_model_server` is not
    available: it speaks the same protocols (`PredictionService`,
    `ModelService`, `/v1/models/...`), reads the same configuration files,
    answers the same status codes and messages, and runs each version on the
    real server's path (its own Graph + Session, SignatureDef tensor names).
    It also lists its models (`keras_attention.ModelListing/ListModels`,
    `GET /v1/models`), which TF Serving cannot.

    Lifecycle:

    1. `start()` loads the configured models (blocking, as TF Serving waits
       for the initial versions), then binds gRPC (and REST) and starts the
       file-system poller.
    2. Requests run concurrently on `grpc_max_threads` worker threads.
    3. `stop(grace)` refuses new requests, lets running ones finish for up to
       `grace` seconds, then unloads the models. `python -m keras_attention.serving` calls it
       on SIGTERM / SIGINT.

    Args:
        options: the server's settings (`ServerOptions`, flag names of
            `tensorflow_model_server`).

    Example:

    ```python
    options = ServerOptions(port=0, model_name="translator", model_base_path="/tmp/export")
    with ModelServer(options) as server:
        client = TranslationClient(f"127.0.0.1:{server.port}", model_name="translator")
        print(client.translate(["Hello."])[0].text)
    ```
    """

    def __init__(self, options: ServerOptions):
        self.options = options
        self.config = self._read_model_config()
        self._config_text = self._config_file_text()
        self.batcher: Batcher | None = None
        self._batching_options = self._read_batching_options()
        self.manager = ServableManager(
            self.config,
            file_system_poll_wait_seconds=options.file_system_poll_wait_seconds,
            enable_model_warmup=options.enable_model_warmup,
            max_num_load_retries=options.max_num_load_retries,
            load_retry_interval=options.load_retry_interval_micros / 1e6,
            allow_version_labels_for_unavailable_models=(
                options.allow_version_labels_for_unavailable_models
            ),
            session_config=self._session_config(),
        )
        self._grpc_server: grpc.Server | None = None
        self._http_server: RestServer | None = None
        self._port: int | None = None
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()
        self._config_thread: threading.Thread | None = None

    # Properties -------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound gRPC port."""
        if self._port is None:
            raise RuntimeError("The server is not started.")
        return self._port

    @property
    def rest_port(self) -> int | None:
        """The bound REST port (`None` without REST)."""
        return None if self._http_server is None else self._http_server.port

    @property
    def address(self) -> str:
        """`host:port` of the gRPC endpoint, for `TranslationClient`."""
        host = self.options.host
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"

    @property
    def rest_url(self) -> str | None:
        """`http://host:port` of the REST endpoint, for `RestTranslationClient`."""
        if self.rest_port is None:
            return None
        host = self.address.rsplit(":", 1)[0]
        return f"http://{host}:{self.rest_port}"

    def available_versions(self) -> dict[str, list[int]]:
        """Each configured model's AVAILABLE versions, ascending (`[]`: not serving yet)."""
        manager = self.manager
        return {name: manager.available_versions(name) for name in manager.model_names()}

    # Lifecycle --------------------------------------------------------------------------------

    def start(self) -> None:
        """Loads the models, then starts serving (gRPC, REST, pollers)."""
        options = self.options
        try:
            self.manager.start()
        except BaseException:
            self.manager.stop()
            raise
        if self._batching_options is not None:
            self.batcher = Batcher(self._batching_options)
            logger.info("Batching requests: %s", self._batching_options)
        runner = None if self.batcher is None else self.batcher.run
        # --grpc_channel_arguments override the defaults (gRPC keeps the first of duplicates).
        server_options = {
            "grpc.max_receive_message_length": options.max_request_bytes,
            "grpc.max_send_message_length": -1,
            "grpc.so_reuseport": 0,
        }
        server_options.update(options.grpc_arguments())
        server = grpc.server(
            futures.ThreadPoolExecutor(
                max_workers=options.grpc_max_threads, thread_name_prefix="serving-grpc"
            ),
            options=list(server_options.items()),
        )
        prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(
            PredictionService(self.manager, runner=runner), server
        )
        model_service = ModelService(self.manager)
        model_service_pb2_grpc.add_ModelServiceServicer_to_server(model_service, server)
        model_listing_pb2_grpc.add_ModelListingServicer_to_server(model_service, server)
        host = f"[{options.host}]" if ":" in options.host else options.host
        try:
            port = server.add_insecure_port(f"{host}:{options.port}")
            if options.grpc_socket_path:
                server.add_insecure_port(f"unix:{options.grpc_socket_path}")
        except RuntimeError as error:
            self._stop_loaded()
            raise OSError(f"Could not bind gRPC to {host}:{options.port}: {error}") from error
        if port == 0:
            self._stop_loaded()
            raise OSError(f"Could not bind gRPC to {host}:{options.port}")
        server.start()
        self._grpc_server = server
        self._port = port
        logger.info("Running gRPC ModelServer at %s:%d ...", options.host, port)
        if options.rest_api_port:
            self._start_rest(runner)
        if options.model_config_file and options.model_config_file_poll_wait_seconds > 0:
            self._config_thread = threading.Thread(
                target=self._poll_config_file, name="serving-config-poll", daemon=True
            )
            self._config_thread.start()

    def stop(self, grace: float | None = None) -> None:
        """Refuses new requests, waits up to `grace` s for running ones, unloads.

        Args:
            grace: seconds running requests may take (default
                `options.shutdown_grace_seconds`).
        """
        with self._stop_lock:
            if self._stopped.is_set():
                return
            grace = self.options.shutdown_grace_seconds if grace is None else grace
            logger.info("Stopping the model server (grace %.1f s)", grace)
            done = None
            if self._grpc_server is not None:
                done = self._grpc_server.stop(grace)
            if self._http_server is not None:
                self._http_server.stop(grace)
            if done is not None:
                done.wait()
            if self.batcher is not None:
                self.batcher.stop()
            self.manager.stop()
            self._stopped.set()

    def _start_rest(self, runner) -> None:
        """Serves the REST API (`/v1/models/...`) on `rest_api_port`, with the gRPC API's runner."""
        options = self.options
        api = RestApi(self.manager, timeout_in_ms=options.rest_api_timeout_in_ms, runner=runner)
        try:
            self._http_server = RestServer(
                api,
                options.host,
                options.rest_api_port,
                max_request_bytes=options.max_request_bytes,
                routes=TranslationPage().routes() if options.ui else (),
            )
        except OSError:
            self.stop(0)
            raise
        self._http_server.start()
        logger.info("Exporting HTTP/REST API at %s:%d ...", options.host, self._http_server.port)

    def _stop_loaded(self) -> None:
        if self.batcher is not None:
            self.batcher.stop()
        self.manager.stop()

    def wait(self, timeout: float | None = None) -> bool:
        """Blocks until the server is stopped; returns whether it is."""
        return self._stopped.wait(timeout)

    def __enter__(self) -> ModelServer:
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    # Configuration ----------------------------------------------------------------------------

    def _read_model_config(self):
        options = self.options
        if options.model_config_file:
            return config_files.read_model_server_config(options.model_config_file)
        return config_files.single_model_config(options.model_name, options.model_base_path)

    def _config_file_text(self) -> str | None:
        if not self.options.model_config_file:
            return None
        with open(self.options.model_config_file, encoding="utf-8") as file:
            return file.read()

    def _poll_config_file(self) -> None:
        wait = self.options.model_config_file_poll_wait_seconds
        while not self._stopped.wait(wait):
            try:
                text = self._config_file_text()
                if text == self._config_text:
                    continue
                config = config_files.parse_text_proto(
                    text,
                    type(self.config)(),
                    source=self.options.model_config_file,
                )
                self.manager.reload_config(config)
                self.config, self._config_text = config, text
                logger.info("Reloaded model config from %s", self.options.model_config_file)
            except (OSError, ValueError, ServingError) as error:
                logger.error("Could not reload %s: %s", self.options.model_config_file, error)

    def _read_batching_options(self) -> BatchingOptions | None:
        options = self.options
        parameters = None
        if options.batching_parameters_file:
            parameters = config_files.read_batching_parameters(options.batching_parameters_file)
        if not options.enable_batching:
            if parameters is not None:
                logger.warning("--batching_parameters_file is ignored without --enable_batching")
            return None
        return BatchingOptions.from_proto(parameters)

    def _session_config(self):
        options = self.options
        intra = options.tensorflow_intra_op_parallelism
        inter = options.tensorflow_inter_op_parallelism
        if options.tensorflow_session_parallelism:
            intra = inter = options.tensorflow_session_parallelism
        if not intra and not inter:
            return None
        return tf.compat.v1.ConfigProto(
            intra_op_parallelism_threads=intra, inter_op_parallelism_threads=inter
        )


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (for tests and examples)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]
