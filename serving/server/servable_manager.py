"""Which model versions are loaded and served: TF Serving's ServerCore, in Python."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import tensorflow as tf
from tensorflow_serving.apis import get_model_status_pb2, model_pb2
from tensorflow_serving.config import model_server_config_pb2

from keras_attention.saved_model_session import SavedModelSession, read_warmup_requests
from keras_attention.serving.server import predict
from keras_attention_client.wire.errors import STATUS_CODES, ServingError, code_name
from keras_attention_client.wire.protos import model_listing_pb2

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class VersionState:
    """One version's `ModelVersionStatus.State` name (`"AVAILABLE"`, ...) and its last error."""

    state: str
    error_code: str = "OK"
    error_message: str = ""

    def fill(self, version: int, status: Any) -> None:
        """Fills a `tensorflow.serving.ModelVersionStatus` (of any descriptor pool)."""
        status.version = version
        status.state = get_model_status_pb2.ModelVersionStatus.State.Value(self.state)
        status.status.error_code = STATUS_CODES[self.error_code]
        status.status.error_message = self.error_message


class ServableManager:
    """Loads, serves, polls for and unloads the versions of the configured models.

    TF Serving's FileSystemStoragePathSource and AspiredVersionsManager with the
    AvailabilityPreservingPolicy, at start-up and every `file_system_poll_wait_seconds`:

    1. The integer-named children of a model's `base_path` are its versions;
       `model_version_policy` picks the aspired ones (`latest`, default 1; `all`;
       `specific`).
    2. Aspired versions are loaded (warmup replayed) and become AVAILABLE; a
       failed one is END with its error, retried after `load_retry_interval` s
       (at most `max_num_load_retries` times) or at once when its files change.
    3. Unaspired versions are unloaded only while the model stays available, so a
       new version serves before the old one goes and a broken one never replaces
       a working one; a Session closes when its running requests end.

    Args:
        config: a `ModelServerConfig` with a `model_config_list`.
        file_system_poll_wait_seconds: polling period; 0: only at start-up.
        enable_model_warmup: replay `assets.extra/tf_serving_warmup_requests`.
        max_num_load_retries: retries of a failed load.
        load_retry_interval: seconds between retries of a failed load.
        allow_version_labels_for_unavailable_models: else a label on a version
            that is not AVAILABLE is refused (FAILED_PRECONDITION).
        session_config: `tf.compat.v1.ConfigProto` of every Session.

    Example:

    ```python
    manager = ServableManager(read_model_server_config("/config/models.config"))
    manager.start()
    with manager.servable(model_pb2.ModelSpec(name="translator")) as session:
        ...
    manager.stop()
    ```
    """

    def __init__(
        self,
        config: model_server_config_pb2.ModelServerConfig,
        *,
        file_system_poll_wait_seconds: float = 1.0,
        enable_model_warmup: bool = True,
        max_num_load_retries: int = 5,
        load_retry_interval: float = 60.0,
        allow_version_labels_for_unavailable_models: bool = False,
        session_config: Any | None = None,
    ):
        _validate_config(config)
        self._config = config
        self.file_system_poll_wait_seconds = file_system_poll_wait_seconds
        self.enable_model_warmup = enable_model_warmup
        self.max_num_load_retries = max_num_load_retries
        self.load_retry_interval = load_retry_interval
        self.allow_labels = allow_version_labels_for_unavailable_models
        self.session_config = session_config
        self._labels: dict[str, dict[str, int]] = {}
        # Routing table, replaced (never mutated) under _state_lock: name -> version -> session.
        self._serving: dict[str, dict[int, SavedModelSession]] = {}
        self._states: dict[str, dict[int, VersionState]] = {}
        # (name, version) -> (attempts, time of the last, fingerprint of the files) of failed loads.
        self._failures: dict[tuple[str, int], tuple[int, float, tuple]] = {}
        self._state_lock, self._poll_lock = threading.Lock(), threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll_loop, daemon=True)

    def start(self) -> None:
        """Loads the initial versions, checks the labels (`FAILED_PRECONDITION`), starts polling."""
        self.poll_once()
        self._set_labels(self._config)
        if self.file_system_poll_wait_seconds > 0:
            self._thread.start()

    def stop(self) -> None:
        """Stops polling and unloads everything (Sessions close as requests finish)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        with self._poll_lock:
            for name in list(self._serving):
                self._unload_unaspired(name, aspired=set())

    def _poll_loop(self) -> None:
        while not self._stop.wait(self.file_system_poll_wait_seconds):
            try:
                self.poll_once()
            except Exception:  # noqa: BLE001 - the poller must survive anything
                logger.exception("File system poll failed")

    def model_names(self) -> list[str]:
        """The configured model names."""
        return [model.name for model in self._config.model_config_list.config]

    def reload_config(self, config: model_server_config_pb2.ModelServerConfig) -> None:
        """Replaces the model list, policies and labels (HandleReloadConfigRequest); blocks.

        Raises:
            ServingError: `INVALID_ARGUMENT` for an invalid config,
                `FAILED_PRECONDITION` for a label on an unavailable version.
        """
        if config.WhichOneof("config") != "model_config_list":
            raise ServingError(
                "INVALID_ARGUMENT",
                "ServerModelConfig type not supported by HandleReloadConfigRequest. "
                "Only ModelConfigList is currently supported",
            )
        _validate_config(config)
        with self._poll_lock:
            self._config = config
        self.poll_once()
        self._set_labels(config)

    def _set_labels(self, config: model_server_config_pb2.ModelServerConfig) -> None:
        labels: dict[str, dict[str, int]] = {}
        for model in config.model_config_list.config:
            for label, version in model.version_labels.items():
                if not self.allow_labels and version not in self._serving.get(model.name, {}):
                    raise ServingError(
                        "FAILED_PRECONDITION",
                        f"Request to assign label to version {version} of model {model.name}, "
                        "which is not currently available for inference",
                    )
                labels.setdefault(model.name, {})[label] = version
        self._labels = labels

    def poll_once(self) -> None:
        """One pass of steps 1-3 for every configured model (and removed ones)."""
        with self._poll_lock:
            configured = {model.name: model for model in self._config.model_config_list.config}
            for name, model in configured.items():
                versions = None if self._stop.is_set() else self._list_versions(model)
                if versions is None:
                    continue
                aspired = _aspired_versions(model, versions)
                for version in sorted(aspired, reverse=True):
                    if self._should_load(name, version, versions[version]):
                        self._load(name, version, versions[version])
                self._unload_unaspired(name, set(aspired))
            for name in set(self._serving) - set(configured):
                self._unload_unaspired(name, aspired=set())

    def _list_versions(self, model: Any) -> dict[int, str] | None:
        base = model.base_path
        try:
            children = sorted(child.rstrip("/") for child in tf.io.gfile.listdir(base))
        except (tf.errors.OpError, OSError) as error:
            logger.error("Could not find base path %s for servable %s: %s", base, model.name, error)
            return None
        versions = {  # "007" and "7" are one version: the later name wins
            int(child): os.path.join(base, child)
            for child in children
            if child.isdigit() and tf.io.gfile.isdir(os.path.join(base, child))
        }
        if not versions:
            logger.warning("No versions of servable %s found under base path %s", model.name, base)
        return versions

    def _should_load(self, name: str, version: int, path: str) -> bool:
        session = self._serving.get(name, {}).get(version)
        attempts, last, fingerprint = self._failures.get((name, version), (0, 0.0, None))
        return (session is None or session.path != path) and (
            fingerprint is None
            or _fingerprint(path) != fingerprint
            or attempts <= self.max_num_load_retries
            and time.monotonic() - last >= self.load_retry_interval
        )

    def _load(self, name: str, version: int, path: str) -> None:
        self._set_state(name, version, VersionState("LOADING"))
        logger.info("Loading servable {name: %s version: %d} from %s", name, version, path)
        fingerprint, start, session = _fingerprint(path), time.perf_counter(), None
        try:
            session = SavedModelSession(path, self.session_config, name=name, version=version)
            for log in read_warmup_requests(path) if self.enable_model_warmup else ():
                kind = log.WhichOneof("log_type")
                if kind != "predict_log":  # our exports write Predict records only
                    raise ServingError("UNIMPLEMENTED", f"Unsupported log_type for warmup: {kind}")
                predict.run_predict(session, log.predict_log.request)
        except Exception as error:  # noqa: BLE001 - any load failure is reported, not raised
            if session is not None:
                session.retire()
            code, message = _load_error(error, path)
            attempts, _, previous = self._failures.get((name, version), (0, 0.0, None))
            attempts = attempts + 1 if previous == fingerprint else 1
            self._failures[(name, version)] = (attempts, time.monotonic(), fingerprint)
            self._set_state(name, version, VersionState("END", code, message))
            logger.error(
                "Loading servable {name: %s version: %d} failed: %s", name, version, message
            )
            return
        self._failures.pop((name, version), None)
        previous = self._set_state(name, version, VersionState("AVAILABLE"), True, session)
        if previous is not None:
            previous.retire()
        seconds = time.perf_counter() - start
        logger.info("Loaded servable {name: %s version: %d} in %.2f s", name, version, seconds)

    def _unload_unaspired(self, name: str, aspired: set[int]) -> None:
        # AvailabilityPreservingPolicy, applied until it asks for nothing more.
        while True:
            loaded = self._serving.get(name, {})
            unaspired = sorted(v for v in loaded if v not in aspired)
            if not unaspired or (aspired and not aspired & set(loaded) and len(unaspired) == 1):
                return
            version = unaspired[0]
            self._set_state(name, version, VersionState("UNLOADING"), route=True)
            logger.info("Unloading servable {name: %s version: %d}", name, version)
            loaded[version].retire()
            self._set_state(name, version, VersionState("END"))

    def _set_state(
        self, name: str, version: int, state: VersionState, route: bool = False, session=None
    ) -> SavedModelSession | None:
        """Records a state; with `route`, routes to `session` (None: none) and returns the old."""
        with self._state_lock:
            self._states.setdefault(name, {})[version] = state
            if not route:
                return None
            versions = dict(self._serving.get(name, {}))
            previous = versions.pop(version, None)
            if session is not None:
                versions[version] = session
            self._serving = {k: v for k, v in {**self._serving, name: versions}.items() if v}
            return previous

    @contextlib.contextmanager
    def servable(self, model_spec: model_pb2.ModelSpec) -> Iterator[SavedModelSession]:
        """Holds the version `model_spec` names (default: the latest) for a request.

        Raises:
            ServingError: `INVALID_ARGUMENT` without a name or for an unknown label,
                `NOT_FOUND` ("Servable not found for request: Latest(name)").
        """
        name, choice = model_spec.name, model_spec.WhichOneof("version_choice")
        if not name:
            raise ServingError("INVALID_ARGUMENT", "ModelSpec has no name specified.")
        version = model_spec.version.value if choice == "version" else None
        if choice == "version_label":
            version = self._labels.get(name, {}).get(model_spec.version_label)
            if version is None:
                message = f"Unrecognized servable version label: {model_spec.version_label}"
                raise ServingError("INVALID_ARGUMENT", message)
        for _ in range(100):  # a session retired between lookup and acquire: look again
            versions = self._serving.get(name, {})
            session = versions.get(max(versions, default=0) if version is None else version)
            if session is None:
                request = f"Latest({name})" if version is None else f"Specific({name}, {version})"
                raise ServingError("NOT_FOUND", f"Servable not found for request: {request}")
            if session.acquire():
                break
        else:
            raise ServingError("UNAVAILABLE", f"Servable {name} is being reloaded; retry")
        try:
            yield session
        finally:
            session.release()

    def version_states(self, name: str) -> dict[int, VersionState]:
        """Every version of `name` the manager has seen, with its state, by version."""
        with self._state_lock:
            return dict(sorted(self._states.get(name, {}).items()))

    def available_versions(self, name: str) -> list[int]:
        """The versions of `name` currently serving, ascending."""
        return sorted(self._serving.get(name, {}))

    def model_status(self, model_spec: model_pb2.ModelSpec) -> Any:
        """TF Serving's GetModelStatus: every version's state, or the one `model_spec` names.

        A label is not resolved (every version), as in TF Serving; `NOT_FOUND` if none.
        """
        name, states = model_spec.name, self.version_states(model_spec.name)
        if model_spec.HasField("version"):
            version = model_spec.version.value
            if version not in states:
                raise ServingError("NOT_FOUND", f"Could not find version {version} of model {name}")
            states = {version: states[version]}
        elif not states:
            raise ServingError("NOT_FOUND", f"Could not find any versions of model {name}")
        response = get_model_status_pb2.GetModelStatusResponse()
        for version, state in states.items():
            state.fill(version, response.model_version_status.add())
        return response

    def list_models(self) -> Any:
        """Every configured model by name, as `keras_attention.ListModelsResponse`.

        Each with GetModelStatus's versions and the signatures of the version a
        request without a version reaches (none while none is available).
        """
        response = model_listing_pb2.ListModelsResponse()
        for name in sorted(self.model_names()):
            model = response.models.add(name=name)
            for version, state in self.version_states(name).items():
                state.fill(version, model.versions.add())
            if serving := self._serving.get(name):
                model.signature_names.extend(sorted(serving[max(serving)].signature_defs))
        return response


def _validate_config(config: model_server_config_pb2.ModelServerConfig) -> None:
    if config.WhichOneof("config") == "custom_model_config":
        message = "ModelServer does not yet support custom model config."
        raise ServingError("INVALID_ARGUMENT", message)
    names = [model.name for model in config.model_config_list.config]
    for model in config.model_config_list.config:
        name, platform = model.name, model.model_platform
        for problem, message in [
            (not name, "A model config has an empty name."),
            (names.count(name) > 1, f"Illegal to list model {name} multiple times in config list"),
            (not model.base_path, f"Model {name} has an empty base_path."),
            (
                platform not in ("", "tensorflow"),
                f"Model {name} requests unsupported platform {platform}",
            ),
        ]:
            if problem:
                raise ServingError("INVALID_ARGUMENT", message)


def _aspired_versions(model: Any, versions: dict[int, str]) -> list[int]:
    policy = model.model_version_policy
    choice = policy.WhichOneof("policy_choice")
    if choice == "all":
        return sorted(versions)
    if choice == "specific":
        wanted = set(policy.specific.versions)
        for version in sorted(wanted - set(versions)):
            logger.warning("Specific version %d of servable %s not found", version, model.name)
        return sorted(wanted & set(versions))
    return sorted(versions)[-max(policy.latest.num_versions, 1) :]


def _fingerprint(path: str) -> tuple:
    """Cheap content fingerprint of a version directory (names, sizes, mtimes)."""
    entries = []
    for root, _dirs, files in os.walk(path):
        for file in files:
            with contextlib.suppress(OSError):
                stat = os.stat(os.path.join(root, file))
                entries.append((root, file, stat.st_size, stat.st_mtime_ns))
    return tuple(sorted(entries))


def _load_error(error: BaseException, path: str) -> tuple[str, str]:
    if isinstance(error, ServingError):
        return error.code, error.message
    if isinstance(error, tf.errors.OpError):
        return code_name(error.error_code), error.message
    message = str(error) or type(error).__name__
    if "does not exist" in message or "No such file" in message:
        return "NOT_FOUND", message
    if "parse" in message.lower():
        return "DATA_LOSS", message
    return "UNKNOWN", f"{type(error).__name__}: {message} (loading {path})"
