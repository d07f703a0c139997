"""The local model server end to end: a real server on a free port, real gRPC over a socket."""

import shutil
import subprocess
import threading
import urllib.error
import urllib.request
from concurrent import futures

import grpc
import numpy as np
import pytest
from helpers.serving import (
    TEXTS,
    add_version,
    arrived,
    gate_inputs,
    session_outputs,
    wait_for,
)
from helpers.stand_in_export import reference_outputs
from tensorflow_serving.apis import prediction_service_pb2_grpc

from keras_attention.serving import ModelServer, ServerOptions
from keras_attention.serving.server.grpc_services import PredictionService
from keras_attention_client import (
    RestTranslationClient,
    ServingError,
    Translation,
    TranslationClient,
)


@pytest.mark.parametrize("signature", ["serving_default", "beam_search"])
@pytest.mark.parametrize("batch_size", [len(TEXTS), 2])
def test_client_output_equals_the_session_path(server, translator_base, signature, batch_size):
    client = TranslationClient(server.address, model_name="translator", signature_name=signature)
    with client:
        translations = client.translate(TEXTS, batch_size=batch_size)
    # Same batches through TF Serving's path directly (Graph + Session on the signature's
    # tensor names): bit-identical. (Across different batch compositions, float reductions
    # over different padding may differ in the last bit.)
    expected = []
    for start in range(0, len(TEXTS), batch_size):
        chunk = TEXTS[start : start + batch_size]
        expected += Translation.from_outputs(
            session_outputs(translator_base / "1", signature, chunk)
        )
    assert translations == expected
    # And the stand-in computes what its NumPy reference says it does.
    reference = Translation.from_outputs(reference_outputs(TEXTS, signature=signature))
    for got, want in zip(translations, reference, strict=True):
        assert (got.text, got.tokens, got.source_tokens) == (
            want.text,
            want.tokens,
            want.source_tokens,
        )
        assert got.score == pytest.approx(want.score)
        np.testing.assert_allclose(got.attention, want.attention, rtol=1e-6, atol=1e-7)


def test_predict_returns_every_output_as_arrays(server, translator_base):
    with TranslationClient(server.address, model_name="translator") as client:
        outputs = client.predict({"text": TEXTS[:2]})
    expected = session_outputs(translator_base / "1", "serving_default", TEXTS[:2])
    assert set(outputs) == set(expected)
    for alias, value in expected.items():
        assert outputs[alias].dtype == value.dtype, alias
        np.testing.assert_array_equal(outputs[alias], value)


def test_eight_concurrent_clients_fifty_requests_each(server):
    expected = {
        text: t.text
        for text, t in zip(TEXTS, Translation.from_outputs(reference_outputs(TEXTS)), strict=True)
    }
    errors: list[BaseException] = []
    mismatches: list[tuple[str, str]] = []

    def worker(index: int) -> None:
        try:
            with TranslationClient(server.address, model_name="translator") as client:
                for step in range(50):
                    text = TEXTS[(index + step) % len(TEXTS)]
                    (translation,) = client.translate([text])
                    if translation.text != expected[text]:
                        mismatches.append((text, translation.text))
        except BaseException as error:  # noqa: BLE001 - collected and asserted below
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert mismatches == []


def test_all_configured_models_are_served(server):
    with TranslationClient(server.address, model_name="slow") as client:
        assert client.predict({"iterations": np.array([4], np.int64)})["count"].tolist() == [4]
        assert [s.state for s in client.model_status()] == ["AVAILABLE"]
    with TranslationClient(server.address, model_name="translator") as client:
        assert client.model_status()[0].available
        assert set(client.model_metadata().signatures) >= {"serving_default", "beam_search"}


def test_stop_lets_running_requests_finish(exports, tmp_path):
    base, gate = tmp_path / "base", tmp_path / "gate"
    gate.mkdir()
    add_version(base, 1, exports["gate"])
    model_server = ModelServer(
        ServerOptions(
            port=0,
            model_name="gate",
            model_base_path=str(base),
            file_system_poll_wait_seconds=0,
            tensorflow_inter_op_parallelism=4,  # a held request spins on one
        )
    )
    model_server.start()
    client = TranslationClient(model_server.address, model_name="gate", max_retries=0)
    results: list = []

    def held_request():
        try:
            results.append(client.predict(gate_inputs(gate, "held"), timeout=120))
        except ServingError as error:
            results.append(error)

    thread = threading.Thread(target=held_request)
    thread.start()
    wait_for(lambda: arrived(gate) == 1)  # running inside the Session
    stopper = threading.Thread(target=model_server.stop, kwargs={"grace": 120})
    stopper.start()
    # stop() is waiting for the request: new ones are refused meanwhile.
    wait_for(lambda: _refuses(client))
    assert results == [] and not model_server.wait(0)
    (gate / "release").touch()
    thread.join(120)
    stopper.join(120)
    assert model_server.wait(0)
    assert len(results) == 1 and not isinstance(results[0], ServingError), results
    assert results[0]["tag"].tolist() == [b"held"]
    client.close()


def _refuses(client) -> bool:
    try:
        client.model_status(timeout=5)
    except ServingError as error:
        return error.code == "UNAVAILABLE"
    return False


def test_binding_a_busy_port_fails_clearly(server, translator_base):
    options = ServerOptions(port=server.port, model_name="m", model_base_path=str(translator_base))
    with pytest.raises(OSError, match="Could not bind"):
        ModelServer(options).start()


def test_options_are_validated():
    with pytest.raises(ValueError, match="model_base_path"):
        ServerOptions()
    with pytest.raises(ValueError, match="rest_api_port=70000"):
        ServerOptions(model_base_path="/x", rest_api_port=70000)
    with pytest.raises(ValueError, match="grpc_channel_arguments"):
        ServerOptions(model_base_path="/x", grpc_channel_arguments="nokey").grpc_arguments()
    assert ServerOptions(
        model_base_path="/x", grpc_channel_arguments="grpc.a=1, grpc.b=text"
    ).grpc_arguments() == [("grpc.a", 1), ("grpc.b", "text")]


def test_request_size_is_bounded(translator_base):
    options = ServerOptions(
        port=0,
        model_name="translator",
        model_base_path=str(translator_base),
        file_system_poll_wait_seconds=0,
        max_request_bytes=2048,
    )
    with ModelServer(options) as model_server:
        with TranslationClient(model_server.address, model_name="translator") as client:
            assert client.translate(["a b"])[0].text == "B A"
            with pytest.raises(ServingError) as caught:
                client.translate(["word " * 1000])
    assert caught.value.code == "RESOURCE_EXHAUSTED"


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_client_tls_with_a_private_ca(server, tmp_path):
    key, cert = tmp_path / "server.key", tmp_path / "server.crt"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    # Our server has no TLS (TF Serving's --ssl_config_file); the client's TLS is checked
    # against a gRPC server with TLS serving our PredictionService.
    tls_server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(
        PredictionService(server.manager), tls_server
    )
    credentials = grpc.ssl_server_credentials([(key.read_bytes(), cert.read_bytes())])
    port = tls_server.add_secure_port("127.0.0.1:0", credentials)
    tls_server.start()
    try:
        with TranslationClient(
            f"127.0.0.1:{port}", model_name="translator", root_certificates=str(cert)
        ) as client:
            assert client.translate(["a b"])[0].text == "B A"
        with TranslationClient(
            f"127.0.0.1:{port}", model_name="translator", max_retries=0, timeout=5
        ) as plaintext:
            with pytest.raises(ServingError) as caught:
                plaintext.translate(["a b"])
    finally:
        tls_server.stop(0)
    assert caught.value.code == "UNAVAILABLE"


def test_models_are_listed_over_grpc_and_rest(server):
    """The listing against GetModelStatus and GetModelMetadata, which report the same."""
    with TranslationClient(server.address, model_name="translator") as client:
        listed = {model.name: model for model in client.list_models()}
        assert sorted(listed) == ["gate", "slow", "translator"]
        translator = listed["translator"]
        assert translator.versions == tuple(client.model_status())
        assert set(translator.signature_names) == set(client.model_metadata().signatures) - {
            "__saved_model_init_op"
        }
        assert translator.available_versions == (1,)
    if server.rest_url is not None and _lists_over_rest(server):
        with RestTranslationClient(server.rest_url, model_name="translator") as rest:
            assert rest.list_models() == list(listed.values())


def _lists_over_rest(server) -> bool:
    try:
        urllib.request.urlopen(server.rest_url + "/v1/models", timeout=10)
    except urllib.error.HTTPError:
        return False  # the REST layer without GET /v1/models
    return True


def test_the_only_model_is_the_default_name(translator_base, server):
    options = ServerOptions(
        port=0,
        model_name="fra-eng",
        model_base_path=str(translator_base),
        file_system_poll_wait_seconds=0,
    )
    with ModelServer(options) as model_server:
        with TranslationClient(model_server.address) as client:
            assert client.default_model_name() == "fra-eng"
    with TranslationClient(server.address) as client:
        with pytest.raises(ValueError, match=r"serves 3 models \(gate, slow, translator\)"):
            client.default_model_name()


def test_a_server_that_cannot_list_means_tf_servings_default_name(server):
    """TF Serving has no ModelListing: UNIMPLEMENTED, and the client falls back to "default"."""
    tf_serving_like = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(
        PredictionService(server.manager), tf_serving_like
    )
    port = tf_serving_like.add_insecure_port("127.0.0.1:0")
    tf_serving_like.start()
    try:
        with TranslationClient(f"127.0.0.1:{port}", max_retries=0) as client:
            with pytest.raises(ServingError) as caught:
                client.list_models()
            assert caught.value.code == "UNIMPLEMENTED"
            assert client.default_model_name() == "default"
    finally:
        tf_serving_like.stop(0)


def test_grpc_channel_arguments_reach_the_server(translator_base):
    options = ServerOptions(
        port=0,
        model_name="translator",
        model_base_path=str(translator_base),
        file_system_poll_wait_seconds=0,
        grpc_channel_arguments="grpc.max_receive_message_length=1024",
    )
    with ModelServer(options) as model_server:
        channel_client = TranslationClient(model_server.address, model_name="translator")
        with pytest.raises(ServingError) as caught:
            channel_client.translate(["word " * 400])
        channel_client.close()
    assert caught.value.code == "RESOURCE_EXHAUSTED"
    assert grpc.StatusCode.RESOURCE_EXHAUSTED.name == caught.value.code


def test_concurrent_requests_run_in_parallel(server, tmp_path):
    """Two requests are inside the server's Session at the same time (the gate holds both)."""
    client = TranslationClient(server.address, model_name="gate", timeout=120)
    results = []
    threads = [
        threading.Thread(
            target=lambda tag=tag: results.append(client.predict(gate_inputs(tmp_path, tag)))
        )
        for tag in ("a", "b")
    ]
    for thread in threads:
        thread.start()
    wait_for(lambda: arrived(tmp_path) == 2)  # both running before either may finish
    (tmp_path / "release").touch()
    for thread in threads:
        thread.join(120)
    client.close()
    assert sorted(r["tag"].tolist()[0] for r in results) == [b"a", b"b"]
