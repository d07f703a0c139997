"""Train -> export -> serve -> call: the whole path, on a tiny trained model.

The real exporter writes the SavedModel; our local server loads it the way
TF Serving does (Session + SignatureDef) and answers over a real gRPC socket
and REST; the clients' translations equal in-process decoding.
"""

import numpy as np
import pytest

from keras_attention.cli import main
from keras_attention.export import TranslatorExporter
from keras_attention.inference.trained_run import load_translator
from keras_attention.serving import ModelServer, ServerOptions
from keras_attention.serving.server.model_server import free_port
from keras_attention_client import RestTranslationClient, ServingError, TranslationClient

TEXTS = ["1 2 3", "9 8 7 6 5", "", "4 4 4 4 4 4 4", "0"]


@pytest.fixture(scope="module")
def served(trained_digits_run, tmp_path_factory):
    base = tmp_path_factory.mktemp("exports") / "digits"
    TranslatorExporter.from_run(trained_digits_run, beam_width=3).export(base)
    options = ServerOptions(
        port=0,
        rest_api_port=free_port(),
        model_name="digits",
        model_base_path=str(base),
        file_system_poll_wait_seconds=0,
    )
    with ModelServer(options) as server:
        yield server


@pytest.mark.parametrize("signature, beam_width", [("serving_default", 1), ("beam_search", 3)])
def test_grpc_client_equals_in_process_decoding(served, trained_digits_run, signature, beam_width):
    expected = load_translator(trained_digits_run).translate_all(TEXTS, beam_width=beam_width)
    with TranslationClient(served.address, model_name="digits", signature_name=signature) as client:
        got = client.translate(TEXTS)
    for want, have in zip(expected, got, strict=True):
        assert have.text == want.text
        assert list(have.tokens) == want.tokens
        assert list(have.source_tokens) == want.source_tokens
        np.testing.assert_allclose(have.score, want.score, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(have.attention, want.attention, rtol=1e-5, atol=1e-6)
    assert got[0].text.split()[0] == "un"
    assert got[2].text == "" and got[2].score == 0.0


def test_rest_client_equals_grpc(served):
    with TranslationClient(served.address, model_name="digits") as grpc_client:
        expected = [t.text for t in grpc_client.translate(TEXTS)]
    rest = RestTranslationClient(served.rest_url, model_name="digits")
    assert [t.text for t in rest.translate(TEXTS)] == expected


def test_unknown_model_is_not_found(served):
    with TranslationClient(served.address, model_name="nope", max_retries=0) as client:
        with pytest.raises(ServingError) as error:
            client.translate(["1 2"])
    assert error.value.code == "NOT_FOUND"


def test_cli_translate_against_the_server(served, trained_digits_run, capsys):
    argv = ["translate", "--server", served.address, "--model-name", "digits", "5 6 7", "8"]
    assert main(argv) == 0
    remote = capsys.readouterr().out.splitlines()
    assert main(["translate", str(trained_digits_run), "5 6 7", "8"]) == 0
    assert remote == capsys.readouterr().out.splitlines()
    assert main(["translate", "--server", served.address, "--model-name", "nope", "1"]) == 1
    assert "NOT_FOUND" in capsys.readouterr().err
