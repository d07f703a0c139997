"""ServingError: code names, numbers, HTTP mapping."""

import pickle

import grpc
import pytest

from keras_attention_client.wire.errors import (
    CODE_FOR_HTTP_STATUS,
    HTTP_STATUS_FOR_CODE,
    STATUS_CODES,
    ServingError,
    code_name,
)


def test_codes_match_grpc():
    for code in grpc.StatusCode:
        assert STATUS_CODES[code.name] == code.value[0]


@pytest.mark.parametrize("code", [5, "NOT_FOUND", "not_found", "StatusCode.NOT_FOUND"])
def test_code_spellings(code):
    assert code_name(code) == "NOT_FOUND"


@pytest.mark.parametrize("code", ["NOPE", 99, True, None])
def test_bad_codes(code):
    with pytest.raises((ValueError, TypeError), match="Received"):
        ServingError(code, "x")


def test_fields_str_and_pickle():
    error = ServingError("UNAVAILABLE", "down", http_status=503)
    assert (error.code, error.message, error.http_status, error.code_number) == (
        "UNAVAILABLE",
        "down",
        503,
        14,
    )
    assert error.retryable and not ServingError("NOT_FOUND").retryable
    assert str(error) == "UNAVAILABLE: down"
    clone = pickle.loads(pickle.dumps(error))
    assert (clone.code, clone.message, clone.http_status) == ("UNAVAILABLE", "down", 503)


def test_http_tables_are_tf_servings():
    assert HTTP_STATUS_FOR_CODE["INVALID_ARGUMENT"] == 400
    assert HTTP_STATUS_FOR_CODE["FAILED_PRECONDITION"] == 400
    assert HTTP_STATUS_FOR_CODE["NOT_FOUND"] == 404
    assert HTTP_STATUS_FOR_CODE["DEADLINE_EXCEEDED"] == 504
    assert set(HTTP_STATUS_FOR_CODE) == set(STATUS_CODES)
    for status, code in CODE_FOR_HTTP_STATUS.items():
        if status not in (408, 413, 502):
            assert HTTP_STATUS_FOR_CODE[code] == status
