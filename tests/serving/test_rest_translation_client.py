"""RestTranslationClient: same results as gRPC, TF Serving's error mapping, retries, deadlines."""

import logging
import time

import numpy as np
import pytest
from helpers.serving import TEXTS

from keras_attention.serving.server.model_server import free_port
from keras_attention_client import RestTranslationClient, ServingError, TranslationClient


@pytest.mark.parametrize("signature", ["serving_default", "beam_search"])
def test_rest_and_grpc_answer_the_same_translations(server, signature):
    with RestTranslationClient(
        server.rest_url, model_name="translator", signature_name=signature
    ) as rest:
        over_rest = rest.translate(TEXTS)
    with TranslationClient(
        server.address, model_name="translator", signature_name=signature
    ) as grpc_client:
        over_grpc = grpc_client.translate(TEXTS)
    # Floats travel as the shortest decimal that reads back to the same float32: exact.
    assert over_rest == over_grpc


def test_predict_converts_strings_to_bytes(server):
    with RestTranslationClient(server.rest_url, model_name="translator") as client:
        outputs = client.predict({"text": ["a b"]}, output_filter=["translation", "tokens"])
        assert set(outputs) == {"translation", "tokens"}
        assert outputs["translation"].tolist() == [b"B A"]
        assert outputs["tokens"].tolist() == [[b"B", b"A"]]
        binary = client.predict({"text": [b"\xffcat"]})
        assert binary["source_tokens"].shape == (1, 1)
    with RestTranslationClient(server.rest_url, model_name="slow") as slow:
        single = slow.predict({"iterations": [7]}, output_filter=["count"])
        assert single["count"].tolist() == [7]


def test_errors_carry_code_message_and_http_status(server):
    with RestTranslationClient(server.rest_url, model_name="nope") as client:
        with pytest.raises(ServingError) as caught:
            client.translate(["a"])
    assert (caught.value.code, caught.value.http_status) == ("NOT_FOUND", 404)
    assert caught.value.message == "Servable not found for request: Latest(nope)"
    with RestTranslationClient(
        server.rest_url, model_name="translator", signature_name="x"
    ) as client:
        with pytest.raises(ServingError) as caught:
            client.translate(["a"])
    assert (caught.value.code, caught.value.http_status) == ("INVALID_ARGUMENT", 400)
    assert caught.value.message == 'Serving signature name: "x" not found in signature def'


def test_status_metadata_version_and_label_urls(server):
    with RestTranslationClient(server.rest_url, model_name="translator", version=1) as client:
        (status,) = client.model_status()
        assert (status.version, status.state, status.error_code) == (1, "AVAILABLE", "OK")
        metadata = client.model_metadata()
        assert metadata.version == 1
        assert metadata.signatures["beam_search"].outputs["tokens"].shape == (None, None)
        assert client.translate(["x y"])[0].text == "Y X"
    with RestTranslationClient(
        server.rest_url, model_name="translator", version_label="stable"
    ) as client:
        with pytest.raises(ServingError, match="Unrecognized servable version label: stable"):
            client.translate(["a"])


def test_connection_refused_is_unavailable_and_retried(caplog):
    client = RestTranslationClient(
        f"http://127.0.0.1:{free_port()}", model_name="m", max_retries=2, initial_backoff=0.05
    )
    with caplog.at_level(logging.INFO, logger="keras_attention_client.retries"):
        with pytest.raises(ServingError) as caught:
            client.translate(["a"])
    assert caught.value.code == "UNAVAILABLE"
    assert sum("retrying in" in r.getMessage() for r in caplog.records) == 2


def test_connection_refused_until_the_deadline_names_the_address():
    url = f"http://127.0.0.1:{free_port()}"
    client = RestTranslationClient(url, model_name="m", timeout=1.5)
    start = time.monotonic()
    with pytest.raises(ServingError) as caught:
        client.translate(["a"])
    elapsed = time.monotonic() - start
    assert caught.value.code == "UNAVAILABLE"
    assert caught.value.message.startswith(f"No model server answered at {url} within 1.5 s")
    assert "Connection refused" in caught.value.message
    assert 1.3 <= elapsed < 3  # retried until just before the deadline


def test_client_timeout_is_deadline_exceeded(server):
    client = RestTranslationClient(server.rest_url, model_name="slow", timeout=0.2, max_retries=0)
    start = time.monotonic()
    with pytest.raises(ServingError) as caught:
        client.predict({"iterations": np.array([10**8])})
    assert caught.value.code == "DEADLINE_EXCEEDED"
    assert time.monotonic() - start < 5


def test_base_url_forms():
    assert RestTranslationClient("localhost:8501").base_url == "http://localhost:8501"
    assert RestTranslationClient("https://h:1/").base_url == "https://h:1"
    with pytest.raises(ValueError, match="base_url"):
        RestTranslationClient("ftp://h")
