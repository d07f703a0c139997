"""Version handling: polling, policies, availability-preserving switches, broken versions, labels."""

import logging
import shutil
import threading
import time

import grpc
import numpy as np
import pytest
from helpers.serving import add_broken_version, add_version
from helpers.stand_in_export import write_warmup_requests
from tensorflow_serving.apis import (
    model_management_pb2,
    model_pb2,
    model_service_pb2_grpc,
)
from tensorflow_serving.config import model_server_config_pb2

from keras_attention.serving import ModelServer, ServerOptions
from keras_attention.serving.server.config_files import parse_text_proto
from keras_attention.serving.server.servable_manager import ServableManager, VersionState
from keras_attention_client import ServingError, TranslationClient

POLL = 0.2


def _config(text: str):
    return parse_text_proto(text, model_server_config_pb2.ModelServerConfig())


def _manager(base, extra: str = "", **kwargs) -> ServableManager:
    config = _config(f'model_config_list {{ config {{ name: "m" base_path: "{base}" {extra} }} }}')
    kwargs.setdefault("file_system_poll_wait_seconds", 0)
    return ServableManager(config, **kwargs)


def _wait_for(predicate, timeout: float = 20.0, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s")


def _states(client) -> dict[int, tuple[str, str]]:
    return {s.version: (s.state, s.error_code) for s in client.model_status()}


def test_new_version_during_load_without_failed_requests(exports, tmp_path):
    add_version(tmp_path, 1, exports["upper"])
    options = ServerOptions(
        port=0,
        model_name="translator",
        model_base_path=str(tmp_path),
        file_system_poll_wait_seconds=POLL,
    )
    errors: list[BaseException] = []
    seen: dict[int, list[str]] = {i: [] for i in range(4)}
    stop = threading.Event()

    with ModelServer(options) as server:

        def worker(index: int) -> None:
            with TranslationClient(server.address, model_name="translator", max_retries=0) as c:
                while not stop.is_set():
                    try:
                        seen[index].append(c.translate(["a b"])[0].text)
                    except BaseException as error:  # noqa: BLE001 - asserted below
                        errors.append(error)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        _wait_for(lambda: all(seen.values()))
        added = time.monotonic()
        add_version(tmp_path, 2, exports["lower"])
        _wait_for(lambda: all("b a" in texts for texts in seen.values()))
        switched = time.monotonic() - added
        time.sleep(3 * POLL)
        stop.set()
        for thread in threads:
            thread.join()
        with TranslationClient(server.address, model_name="translator") as client:
            states = _states(client)

    assert errors == []
    assert switched < 15, switched
    for texts in seen.values():
        assert set(texts) == {"B A", "b a"}
        first_new = texts.index("b a")
        # Once a client got the new version, it never gets the old one again.
        assert set(texts[first_new:]) == {"b a"}
    assert states == {1: ("END", "OK"), 2: ("AVAILABLE", "OK")}


def test_broken_version_is_reported_and_never_replaces_a_working_one(exports, tmp_path):
    add_version(tmp_path, 1, exports["upper"])
    options = ServerOptions(
        port=0,
        model_name="translator",
        model_base_path=str(tmp_path),
        file_system_poll_wait_seconds=POLL,
    )
    with ModelServer(options) as server:
        client = TranslationClient(server.address, model_name="translator")
        add_broken_version(tmp_path, 2)
        _wait_for(lambda: _states(client).get(2, ("",))[0] == "END")
        (status_2,) = client.model_status(version=2)
        assert (status_2.state, status_2.error_code) == ("END", "DATA_LOSS")
        assert "saved_model.pb" in status_2.error_message
        assert client.translate(["a b"])[0].text == "B A"
        assert client.model_status(version=1)[0].available
        pinned = TranslationClient(server.address, model_name="translator", version=2)
        with pytest.raises(ServingError, match=r"Specific\(translator, 2\)") as caught:
            pinned.translate(["a"])
        assert caught.value.code == "NOT_FOUND"
        # A good newer version still takes over, and the old one is then unloaded.
        add_version(tmp_path, 3, exports["lower"])
        _wait_for(lambda: client.translate(["a b"])[0].text == "b a")
        _wait_for(lambda: _states(client)[1] == ("END", "OK"))
        assert _states(client) == {
            1: ("END", "OK"),
            2: ("END", "DATA_LOSS"),
            3: ("AVAILABLE", "OK"),
        }
        client.close()
        pinned.close()


def test_a_version_rewritten_after_failing_is_retried(exports, tmp_path):
    add_version(tmp_path, 1, exports["upper"])
    manager = _manager(tmp_path, load_retry_interval=3600)
    manager.start()
    add_broken_version(tmp_path, 2)
    manager.poll_once()
    assert manager.version_states("m")[2].error_code == "DATA_LOSS"
    manager.poll_once()  # unchanged and the retry interval has not passed: not retried
    assert manager.available_versions("m") == [1]
    shutil.rmtree(tmp_path / "2")
    shutil.copytree(exports["lower"], tmp_path / "2")  # e.g. a copy that finished
    manager.poll_once()
    assert manager.available_versions("m") == [2]
    assert manager.version_states("m")[2] == VersionState("AVAILABLE")
    manager.stop()


@pytest.fixture(scope="module")
def three_versions(exports, tmp_path_factory):
    base = tmp_path_factory.mktemp("three")
    for version in (1, 2, 3):
        add_version(base, version, exports["upper"])
    (base / "tmp-4").mkdir()
    (base / ".5").mkdir()
    (base / "6").write_text("a file, not a directory")
    return base


@pytest.mark.parametrize(
    "policy, expected",
    [
        ("", [3]),
        ("model_version_policy { latest { num_versions: 2 } }", [2, 3]),
        ("model_version_policy { all {} }", [1, 2, 3]),
        ("model_version_policy { specific { versions: 1 versions: 3 } }", [1, 3]),
        ("model_version_policy { specific { versions: 7 } }", []),
    ],
    ids=["default-latest", "latest-2", "all", "specific", "specific-missing"],
)
def test_version_policies(three_versions, policy, expected):
    manager = _manager(three_versions, policy)
    manager.start()
    try:
        assert manager.available_versions("m") == expected
        assert sorted(manager.version_states("m")) == expected
        for version in expected:
            spec = model_pb2.ModelSpec(name="m")
            spec.version.value = version
            with manager.servable(spec) as bundle:
                assert bundle.version == version
        if expected:
            with manager.servable(model_pb2.ModelSpec(name="m")) as bundle:
                assert bundle.version == max(expected)
    finally:
        manager.stop()


class _FakeBundle:
    def __init__(self, version):
        self.version = version
        self.retired = False

    def retire(self):
        self.retired = True


@pytest.mark.parametrize(
    "aspired, loaded, kept",
    [
        ({2}, {1}, {1}),  # the new version is not available yet: keep serving the old one
        ({2}, {1, 2}, {2}),  # the new version is available: unload the old one
        (set(), {1, 2}, set()),  # the model was removed: unload everything
        ({3}, {1, 2}, {2}),  # two unaspired versions: the lowest goes, one stays available
        ({1, 2}, {1, 2}, {1, 2}),
    ],
)
def test_availability_preserving_unload_rule(tmp_path, aspired, loaded, kept):
    manager = _manager(tmp_path)
    bundles = {v: _FakeBundle(v) for v in loaded}
    manager._serving = {"m": dict(bundles)}
    manager._unload_unaspired("m", aspired)
    assert set(manager._serving.get("m", {})) == kept
    assert {v for v, b in bundles.items() if b.retired} == loaded - kept
    for version in loaded - kept:
        assert manager.version_states("m")[version].state == "END"


def test_unloading_waits_for_requests_holding_the_version(exports, tmp_path):
    add_version(tmp_path, 1, exports["upper"])
    manager = _manager(tmp_path)
    manager.start()
    inputs = {"text": np.array([b"a b"], dtype=object)}
    with manager.servable(model_pb2.ModelSpec(name="m")) as session:
        add_version(tmp_path, 2, exports["lower"])
        manager.poll_once()  # version 2 loads, version 1 is unloaded while we hold it
        assert manager.available_versions("m") == [2]
        outputs = session.run("serving_default", inputs, ["translation"])
        assert outputs["translation"].tolist() == [b"B A"]
    with pytest.raises(RuntimeError, match="closed Session"):
        session.run("serving_default", inputs, ["translation"])
    manager.stop()


def test_missing_base_path_then_created(exports, tmp_path, caplog):
    base = tmp_path / "later"
    manager = _manager(base)
    with caplog.at_level(logging.ERROR, logger="keras_attention.serving.server.servable_manager"):
        manager.start()
    assert "Could not find base path" in caplog.text
    with pytest.raises(ServingError, match=r"Servable not found for request: Latest\(m\)"):
        manager.servable(model_pb2.ModelSpec(name="m")).__enter__()
    add_version(base, 1, exports["upper"])
    manager.poll_once()
    assert manager.available_versions("m") == [1]
    manager.stop()


def test_warmup_requests_are_replayed_and_a_bad_one_fails_the_load(exports, tmp_path):
    good = add_version(tmp_path, 1, exports["upper"])
    write_warmup_requests(good, ["warm up", "the cat"])
    manager = _manager(tmp_path)
    manager.start()
    assert manager.available_versions("m") == [1]
    manager.stop()

    bad_base = tmp_path / "bad"
    bad = add_version(bad_base, 1, exports["upper"])
    write_warmup_requests(bad, ["x"])
    from tensorflow_serving.apis import prediction_log_pb2

    log = prediction_log_pb2.PredictionLog()
    log.predict_log.request.model_spec.signature_name = "nope"
    import tensorflow as tf

    with tf.io.TFRecordWriter(str(bad / "assets.extra" / "tf_serving_warmup_requests")) as w:
        w.write(log.SerializeToString())
    manager = _manager(bad_base)
    manager.start()
    state = manager.version_states("m")[1]
    assert (state.state, state.error_code) == ("END", "FAILED_PRECONDITION")
    assert 'Serving signature key "nope" not found.' in state.error_message
    manager.stop()
    # Warmup can be switched off (TF Serving's --enable_model_warmup=false).
    manager = _manager(bad_base, enable_model_warmup=False)
    manager.start()
    assert manager.available_versions("m") == [1]
    manager.stop()


LABELS = (
    "model_version_policy { specific { versions: 1 versions: 2 } } "
    'version_labels { key: "stable" value: 1 } version_labels { key: "canary" value: 2 }'
)


def test_version_labels(exports, tmp_path):
    add_version(tmp_path, 1, exports["upper"])
    add_version(tmp_path, 2, exports["lower"])
    manager = _manager(tmp_path, LABELS)
    manager.start()
    for label, version in (("stable", 1), ("canary", 2)):
        with manager.servable(model_pb2.ModelSpec(name="m", version_label=label)) as bundle:
            assert bundle.version == version
    with pytest.raises(ServingError, match="Unrecognized servable version label: beta"):
        manager.servable(model_pb2.ModelSpec(name="m", version_label="beta")).__enter__()
    # GetModelStatus does not resolve a label: every version's state, as TF Serving answers.
    status = manager.model_status(model_pb2.ModelSpec(name="m", version_label="stable"))
    assert [s.version for s in status.model_version_status] == [1, 2]
    manager.stop()


def test_label_on_an_unavailable_version_is_refused_unless_allowed(exports, tmp_path):
    add_version(tmp_path, 1, exports["upper"])
    extra = 'version_labels { key: "canary" value: 2 }'
    with pytest.raises(ServingError, match="Request to assign label to version 2 of model m") as e:
        _manager(tmp_path, extra).start()
    assert e.value.code == "FAILED_PRECONDITION"
    manager = _manager(tmp_path, extra, allow_version_labels_for_unavailable_models=True)
    manager.start()
    with pytest.raises(ServingError, match=r"Specific\(m, 2\)"):
        manager.servable(model_pb2.ModelSpec(name="m", version_label="canary")).__enter__()
    manager.stop()


@pytest.mark.parametrize(
    "text, message",
    [
        (
            'model_config_list { config { name: "a" base_path: "/x" } config { name: "a" '
            'base_path: "/y" } }',
            "Illegal to list model a multiple times",
        ),
        (
            'model_config_list { config { name: "a" base_path: "/x" model_platform: "onnx" } }',
            "requests unsupported platform onnx",
        ),
        ('model_config_list { config { base_path: "/x" } }', "empty name"),
    ],
)
def test_invalid_configs(text, message):
    with pytest.raises(ServingError, match=message):
        ServableManager(_config(text))


def test_reload_config_over_grpc(exports, translator_base, tmp_path):
    slow_base = tmp_path / "slow"
    add_version(slow_base, 1, exports["slow"])
    options = ServerOptions(
        port=0,
        model_name="translator",
        model_base_path=str(translator_base),
        file_system_poll_wait_seconds=0,
    )
    with ModelServer(options) as server:
        channel = grpc.insecure_channel(server.address)
        stub = model_service_pb2_grpc.ModelServiceStub(channel)
        request = model_management_pb2.ReloadConfigRequest()
        request.config.CopyFrom(
            _config(f'model_config_list {{ config {{ name: "slow" base_path: "{slow_base}" }} }}')
        )
        response = stub.HandleReloadConfigRequest(request, timeout=60)
        assert response.status.error_code == 0
        with TranslationClient(server.address, model_name="slow") as slow:
            assert slow.predict({"iterations": np.array([2], np.int64)})["count"].tolist() == [2]
        with TranslationClient(server.address, model_name="translator") as removed:
            with pytest.raises(ServingError) as caught:
                removed.translate(["a"])
            assert caught.value.code == "NOT_FOUND"
            assert [s.state for s in removed.model_status()] == ["END"]
        bad = model_management_pb2.ReloadConfigRequest()
        bad.config.custom_model_config.Pack(model_pb2.ModelSpec())
        with pytest.raises(grpc.RpcError) as failure:
            stub.HandleReloadConfigRequest(bad, timeout=60)
        assert failure.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "Only ModelConfigList is currently supported" in failure.value.details()
        channel.close()


def test_model_config_file_is_polled(exports, translator_base, tmp_path):
    slow_base = tmp_path / "slow"
    add_version(slow_base, 1, exports["slow"])
    config = tmp_path / "models.config"
    config.write_text(
        f'model_config_list {{ config {{ name: "t" base_path: "{translator_base}" }} }}'
    )
    options = ServerOptions(
        port=0,
        model_config_file=str(config),
        model_config_file_poll_wait_seconds=POLL,
        file_system_poll_wait_seconds=0,
    )
    with ModelServer(options) as server:
        config.write_text(
            f'model_config_list {{ config {{ name: "t" base_path: "{translator_base}" }}\n'
            f'  config {{ name: "s" base_path: "{slow_base}" }} }}'
        )
        with TranslationClient(server.address, model_name="s", max_retries=0) as client:
            _wait_for(lambda: any(s.available for s in _safe_status(client)))
        with TranslationClient(server.address, model_name="t") as client:
            assert client.translate(["a b"])[0].text == "B A"


def _safe_status(client):
    try:
        return client.model_status()
    except ServingError:
        return []


def test_get_model_status_errors(server):
    channel = grpc.insecure_channel(server.address)
    stub = model_service_pb2_grpc.ModelServiceStub(channel)
    from tensorflow_serving.apis import get_model_status_pb2

    cases = [
        (get_model_status_pb2.GetModelStatusRequest(), "INVALID_ARGUMENT", "Missing ModelSpec"),
        (
            get_model_status_pb2.GetModelStatusRequest(model_spec=model_pb2.ModelSpec(name="x")),
            "NOT_FOUND",
            "Could not find any versions of model x",
        ),
    ]
    versioned = model_pb2.ModelSpec(name="translator")
    versioned.version.value = 9
    cases.append(
        (
            get_model_status_pb2.GetModelStatusRequest(model_spec=versioned),
            "NOT_FOUND",
            "Could not find version 9 of model translator",
        )
    )
    for request, code, message in cases:
        with pytest.raises(grpc.RpcError) as caught:
            stub.GetModelStatus(request, timeout=10)
        assert (caught.value.code(), caught.value.details()) == (grpc.StatusCode[code], message)
    channel.close()
