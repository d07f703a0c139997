"""TranslationClient: batching, deadlines, waiting for the server, status and metadata.

The retry rules themselves are tested on a scripted transport in test_client_base.py.
"""

import logging
import threading
import time

import numpy as np
import pytest
from helpers.serving import TEXTS

from keras_attention.serving import ModelServer, ServerOptions
from keras_attention.serving.server.model_server import free_port
from keras_attention_client import ServingError, TranslationClient, retries

RETRY_LOGGER = retries.logger.name


def _retries(caplog) -> int:
    return sum("retrying in" in r.getMessage() for r in caplog.records if r.name == RETRY_LOGGER)


def test_long_lists_are_split_into_batches(server):
    sent = []
    with TranslationClient(server.address, model_name="translator", batch_size=2) as client:
        predict = client._prediction.Predict

        def counting(request, **kwargs):
            sent.append(len(request.inputs["text"].string_val))
            return predict(request, **kwargs)

        client._prediction.Predict = counting
        translations = client.translate(TEXTS)
    assert sent == [2, 2, 1]
    assert [t.source_tokens for t in translations] == [text.split() for text in TEXTS]
    with TranslationClient(server.address, model_name="translator") as client:
        assert client.translate([]) == []


def test_waits_until_the_server_starts(translator_base):
    port = free_port()
    model_server = ModelServer(
        ServerOptions(
            port=port,
            model_name="translator",
            model_base_path=str(translator_base),
            file_system_poll_wait_seconds=0,
        )
    )
    client = TranslationClient(f"127.0.0.1:{port}", model_name="translator", timeout=60)
    timer = threading.Timer(1.0, model_server.start)
    start = time.monotonic()
    timer.start()
    try:
        (translation,) = client.translate(["a b"])
    finally:
        timer.join()
        elapsed = time.monotonic() - start
        model_server.stop(grace=1)
        client.close()
    assert translation.text == "B A"
    assert elapsed >= 1.0


def test_nothing_listening_fails_at_the_deadline_naming_the_address():
    address = f"127.0.0.1:{free_port()}"
    client = TranslationClient(address, model_name="translator", timeout=1.5)
    start = time.monotonic()
    with pytest.raises(ServingError) as caught:
        client.translate(["a"])
    elapsed = time.monotonic() - start
    client.close()
    assert caught.value.code == "UNAVAILABLE"
    assert caught.value.message.startswith(f"No model server answered at {address} within 1.5 s")
    assert "Connection refused" in caught.value.message or "connect" in caught.value.message
    assert 1.4 <= elapsed < 5


def test_other_errors_are_not_retried(server, caplog):
    client = TranslationClient(server.address, model_name="nope")
    start = time.monotonic()
    with caplog.at_level(logging.INFO, logger=RETRY_LOGGER):
        with pytest.raises(ServingError) as caught:
            client.translate(["a"])
    assert (caught.value.code, caught.value.message) == (
        "NOT_FOUND",
        "Servable not found for request: Latest(nope)",
    )
    assert _retries(caplog) == 0, "the server reports no version of 'nope' loading"
    assert time.monotonic() - start < 5
    client.close()


def test_deadline_exceeded(server, caplog):
    client = TranslationClient(server.address, model_name="slow", timeout=0.2)
    start = time.monotonic()
    with caplog.at_level(logging.INFO, logger=RETRY_LOGGER):
        with pytest.raises(ServingError) as caught:
            client.predict({"iterations": np.array([10**8], np.int64)})
    assert caught.value.code == "DEADLINE_EXCEEDED"
    assert time.monotonic() - start < 5
    assert _retries(caplog) == 0
    # A per-call timeout overrides the client's.
    outputs = client.predict({"iterations": np.array([1000], np.int64)}, timeout=30)
    assert outputs["count"].tolist() == [1000]
    client.close()


def test_signature_and_version_pinning(server):
    with TranslationClient(
        server.address, model_name="translator", signature_name="beam_search", version=1
    ) as client:
        (beam,) = client.translate(["a b"])
        (greedy,) = client.translate(["a b"], signature_name="serving_default")
    assert beam.score == pytest.approx(greedy.score - 0.125)
    with TranslationClient(server.address, model_name="translator", version=4) as client:
        with pytest.raises(ServingError, match=r"Specific\(translator, 4\)"):
            client.translate(["a"])


def test_status_metadata_and_waiting(server):
    with TranslationClient(server.address, model_name="translator") as client:
        (status,) = client.model_status()
        assert (status.version, status.state, status.error_code) == (1, "AVAILABLE", "OK")
        assert client.model_status(version=1) == [status]
        assert client.wait_until_available(timeout=5) == [status]
        metadata = client.model_metadata()
        assert (metadata.name, metadata.version) == ("translator", 1)
        signature = metadata.signatures["serving_default"]
        assert signature.inputs["text"].dtype == "DT_STRING"
        assert signature.inputs["text"].shape == (None,)
        assert signature.outputs["attention"].shape == (None, None, None)
    with TranslationClient(server.address, model_name="nope") as missing:
        with pytest.raises(ServingError) as caught:
            missing.wait_until_available(timeout=0.5, poll_interval=0.1)
    assert caught.value.code == "DEADLINE_EXCEEDED"


def test_malformed_responses_surface_as_serving_error(server):
    with TranslationClient(server.address, model_name="slow") as client:
        with pytest.raises(ServingError) as caught:
            client.translate(["a"], signature_name="serving_default")
    # The slow model has no `text` input: the server says so.
    assert caught.value.code == "INVALID_ARGUMENT"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(model_name=""), "model_name"),
        (dict(timeout=0), "timeout"),
        (dict(version=1, version_label="a"), "version"),
        (dict(batch_size=0), "batch_size"),
        (dict(max_retries=-1), "max_retries"),
        (dict(backoff_multiplier=0.5), "backoff_multiplier"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TranslationClient("localhost:1", **kwargs)


def test_bad_targets_and_texts():
    with pytest.raises(ValueError, match="RestTranslationClient"):
        TranslationClient("http://localhost:8501")
    with TranslationClient("localhost:1") as client:
        with pytest.raises(TypeError, match="single string"):
            client.translate("hello")
        with pytest.raises(TypeError, match="str"):
            client.translate([b"bytes"])
