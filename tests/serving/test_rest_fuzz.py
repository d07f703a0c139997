"""Property-based fuzzing of the REST API against its OpenAPI document (schemathesis).

A bounded run: a fixed number of generated requests (valid and invalid against
the document, half of them naming the served model), each checked for no 5xx,
a documented status and content type, and a body matching the document's
schema; then the server must still answer a normal request.
"""

import json
import time
import urllib.request

import pytest

from keras_attention.serving import ModelServer, ServerOptions
from keras_attention.serving.server.model_server import free_port

MAX_EXAMPLES = 150
TIME_CAP_S = 60.0  # past it, the remaining examples are not sent (a loaded machine)
MIN_SENT = 10  # requests sent at the least, however slow the machine


@pytest.fixture(scope="module")
def translator_server(translator_base):
    options = ServerOptions(
        port=0,
        rest_api_port=free_port(),
        model_name="translator",
        model_base_path=str(translator_base),
        file_system_poll_wait_seconds=0,
        rest_api_timeout_in_ms=5000,
    )
    with ModelServer(options) as server:
        yield server


def test_fuzz_openapi_operations(translator_server):
    import requests
    import schemathesis
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from schemathesis import GenerationMode
    from schemathesis.checks import (
        content_type_conformance,
        not_a_server_error,
        response_schema_conformance,
        status_code_conformance,
    )

    url = translator_server.rest_url
    with urllib.request.urlopen(url + "/v1/openapi.json", timeout=30) as reply:
        schema = schemathesis.openapi.from_dict(json.loads(reply.read()))
    served = {"model_name": "translator", "version": 1}
    cases = st.one_of(
        schema.as_strategy(),
        schema.as_strategy(path_parameters=served),
        schema.as_strategy(GenerationMode.NEGATIVE),
        schema.as_strategy(GenerationMode.NEGATIVE, path_parameters=served),
    )
    checks = [
        not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_schema_conformance,
    ]
    statuses: dict[int, int] = {}
    request_seconds: list[float] = []
    session = requests.Session()
    session.trust_env = False  # straight to the local server: no proxy from the environment
    started = time.monotonic()

    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=cases)
    def fuzz(case):
        if len(request_seconds) >= MIN_SENT and time.monotonic() - started > TIME_CAP_S:
            return
        sent = time.monotonic()
        response = case.call(base_url=url, session=session, timeout=30)
        request_seconds.append(time.monotonic() - sent)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        case.validate_response(response, checks=checks)

    fuzz()
    report = (
        f"{len(request_seconds)} requests in {time.monotonic() - started:.1f} s "
        f"({sum(request_seconds):.1f} s waiting for replies, the slowest "
        f"{max(request_seconds):.2f} s): {statuses}"
    )
    print(report)
    # The model was reached (7 of the 150 derandomized cases on an idle machine; 2 of the
    # first 10), and most requests were refused as they should be.
    assert statuses.get(200, 0) >= 1, report
    errors = sum(count for status, count in statuses.items() if status >= 400)
    assert errors >= len(request_seconds) / 2, report
    request = urllib.request.Request(
        url + "/v1/models/translator:predict",
        data=json.dumps({"instances": ["the cat"]}).encode(),
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        assert json.loads(reply.read())["predictions"][0]["translation"] == "CAT THE"
