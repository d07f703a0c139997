"""The clients' waiting rules on a scripted transport: what is retried, for how long, and the errors."""

import logging
import time

import numpy as np
import pytest

from keras_attention_client import RestTranslationClient, ServingError, TranslationClient, retries
from keras_attention_client.client_base import TranslationClientBase
from keras_attention_client.model_version_status import ModelVersionStatus
from keras_attention_client.no_answer import NoAnswer
from keras_attention_client.retry_policy import RetryPolicy
from keras_attention_client.wire.json_tensor import json_from_array
from keras_attention_client.wire.protos import predict_pb2
from keras_attention_client.wire.tensors import ndarray_to_tensor_proto

OUTPUTS = {
    "translation": np.array([b"B A"], dtype=object),
    "score": np.array([-1.0], np.float32),
    "length": np.array([2], np.int32),
    "tokens": np.array([[b"B", b"A"]], dtype=object),
    "source_tokens": np.array([[b"a", b"b"]], dtype=object),
    "attention": np.eye(2, dtype=np.float32)[None],
}


class ScriptedClient(TranslationClientBase):
    """Answers each Predict with the next entry of `script` (an error to raise, or OUTPUTS)."""

    def __init__(self, script, states=(), **kwargs):
        options = dict(
            model_name="m",
            signature_name="serving_default",
            timeout=5.0,
            version=None,
            version_label=None,
            batch_size=64,
            max_retries=None,
            initial_backoff=0.01,
            max_backoff=0.05,
            backoff_multiplier=2.0,
        )
        options.update(kwargs)
        super().__init__(**options)
        self.script = list(script)
        self.states = states
        self.calls = []
        self.status_calls = 0

    @property
    def endpoint(self):
        return "scripted:1"

    def _predict_once(self, inputs, signature_name, output_filter, timeout):
        self.calls.append(timeout)
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(step, ServingError):
            raise step
        return step

    def _status_once(self, version, timeout):
        self.status_calls += 1
        if not self.states:
            raise ServingError("NOT_FOUND", "Could not find any versions of model m")
        return [ModelVersionStatus(1, state) for state in self.states]


UNAVAILABLE = ServingError("UNAVAILABLE", "Servable m is being reloaded; retry")
REFUSED = NoAnswer("connection refused")
NOT_FOUND = ServingError("NOT_FOUND", "Servable not found for request: Latest(m)")
INVALID = ServingError("INVALID_ARGUMENT", "bad")


@pytest.mark.parametrize("error", [UNAVAILABLE, REFUSED], ids=["unavailable", "no-answer"])
def test_not_ready_answers_are_retried_until_one_succeeds(error, caplog):
    client = ScriptedClient([error, error, error, OUTPUTS])
    with caplog.at_level(logging.INFO, logger=retries.logger.name):
        (translation,) = client.translate(["a b"])
    assert translation.text == "B A"
    assert len(client.calls) == 4
    # One deadline for the request: each attempt gets what is left of it.
    assert client.calls == sorted(client.calls, reverse=True) and client.calls[0] <= 5.0
    assert sum("retrying in" in r.getMessage() for r in caplog.records) == 3


def test_a_model_still_loading_is_waited_for():
    client = ScriptedClient([NOT_FOUND, NOT_FOUND, OUTPUTS], states=["LOADING"])
    assert client.translate(["a b"])[0].text == "B A"
    assert client.status_calls == 2


def test_a_model_the_server_does_not_know_is_not_waited_for():
    client = ScriptedClient([NOT_FOUND, OUTPUTS])
    with pytest.raises(ServingError) as caught:
        client.translate(["a b"])
    assert caught.value is NOT_FOUND
    assert (len(client.calls), client.status_calls) == (1, 1)
    # A model that failed to load (END) is not waited for either.
    failed = ScriptedClient([NOT_FOUND, OUTPUTS], states=["END"])
    with pytest.raises(ServingError, match="Latest"):
        failed.translate(["a b"])


def test_other_errors_are_raised_at_once():
    client = ScriptedClient([INVALID, OUTPUTS])
    with pytest.raises(ServingError) as caught:
        client.translate(["a"])
    assert caught.value is INVALID and len(client.calls) == 1
    assert client.status_calls == 0


@pytest.mark.parametrize(
    "error, message",
    [
        (REFUSED, "No model server answered at scripted:1 within 0.5 s (connection refused)"),
        (UNAVAILABLE, "The model server at scripted:1 was still unavailable after 0.5 s"),
        (NOT_FOUND, "Model 'm' at scripted:1 was still loading after 0.5 s"),
    ],
)
def test_the_deadline_ends_the_wait_with_the_address_and_the_timeout(error, message):
    client = ScriptedClient([error], states=["LOADING"], timeout=0.5)
    start = time.monotonic()
    with pytest.raises(ServingError) as caught:
        client.translate(["a"])
    elapsed = time.monotonic() - start
    assert caught.value.code == "UNAVAILABLE"
    assert caught.value.message.startswith(message)
    assert 0.35 <= elapsed < 1.5
    assert len(client.calls) > 3


def test_max_retries_caps_the_retries():
    client = ScriptedClient([UNAVAILABLE], max_retries=2, initial_backoff=0.1, max_backoff=1.0)
    assert [client.backoff_delay(n) for n in range(5)] == [0.1, 0.2, 0.4, 0.8, 1.0]
    assert client.backoff_delay(10_000) == 1.0
    start = time.monotonic()
    with pytest.raises(ServingError) as caught:
        client.translate(["a"])
    assert caught.value is UNAVAILABLE
    assert len(client.calls) == 3
    assert time.monotonic() - start >= 0.15  # half of each delay at least (jitter)
    never = ScriptedClient([REFUSED, OUTPUTS], max_retries=0)
    with pytest.raises(ServingError, match="connection refused"):
        never.translate(["a"])


def test_no_timeout_means_no_deadline():
    client = ScriptedClient([REFUSED] * 5 + [OUTPUTS], timeout=None)
    assert client.translate(["a b"])[0].text == "B A"
    assert client.calls == [None] * 6


class _NoJitter:
    """An `rng` whose draws make each retry sleep its full backoff delay."""

    def random(self):
        return 1.0


def test_setting_a_retry_field_after_construction_changes_the_retries(monkeypatch):
    slept = []
    monkeypatch.setattr(retries.time, "sleep", slept.append)
    client = ScriptedClient([UNAVAILABLE] * 3 + [OUTPUTS])  # initial_backoff=0.01
    client._random = _NoJitter()
    client.initial_backoff = 0.02
    assert client.retry == RetryPolicy(None, 0.02, 0.05, 2.0)
    assert client.translate(["a b"])[0].text == "B A"
    # min(max_backoff, initial_backoff * multiplier**n): 0.02, 0.04, then 0.08 capped at 0.05.
    assert slept == pytest.approx([0.02, 0.04, 0.05])

    client = ScriptedClient([UNAVAILABLE])
    client.max_retries = 1
    with pytest.raises(ServingError):
        client.translate(["a"])
    assert len(client.calls) == 2
    with pytest.raises(ValueError, match="backoff_multiplier=0.5"):
        client.backoff_multiplier = 0.5
    assert client.retry == RetryPolicy(1, 0.01, 0.05, 2.0)


def _grpc_client_naming(named):
    client = TranslationClient("127.0.0.1:1", model_name="first")

    def predict(request, **kwargs):
        named.append(request.model_spec.name)
        response = predict_pb2.PredictResponse()
        for alias, values in OUTPUTS.items():
            ndarray_to_tensor_proto(values, out=response.outputs[alias])
        return response

    client._prediction.Predict = predict
    return client


def _rest_client_naming(named):
    client = RestTranslationClient("http://127.0.0.1:1", model_name="first")

    def request(method, url, body, timeout):
        named.append(url)
        return {"outputs": {alias: json_from_array(values) for alias, values in OUTPUTS.items()}}

    client._request = request
    return client


@pytest.mark.parametrize(
    "client_naming, expected",
    [
        (_grpc_client_naming, "second"),
        (_rest_client_naming, "http://127.0.0.1:1/v1/models/second:predict"),
    ],
    ids=["grpc", "rest"],
)
def test_setting_the_model_name_after_construction_changes_the_request(client_naming, expected):
    named = []
    with client_naming(named) as client:
        client.model_name = "second"
        assert client.translate(["a b"])[0].text == "B A"
    assert named == [expected]
    assert client.request.model_name == "second"
