"""`keras-attention translate --server` without `--model-name`: the server's only model, else a hint.

Our server lists its models (`ModelListing`): the name defaults to its only
one, and several are named in the error. TF Serving cannot list them: the
name defaults to TF Serving's own default, `default`, and a NOT_FOUND says
what to do. The TF Serving stand-in here serves our PredictionService and
ModelService on a gRPC server without the listing service.
"""

from concurrent import futures

import grpc
import pytest
from tensorflow_serving.apis import model_service_pb2_grpc, prediction_service_pb2_grpc

from keras_attention.cli import main
from keras_attention.serving import ModelServer, ServerOptions
from keras_attention.serving.server.grpc_services import ModelService, PredictionService


@pytest.fixture(scope="module")
def tf_serving_like(server):
    """The shared server's models behind TF Serving's two services only (no ModelListing)."""
    grpc_server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(
        PredictionService(server.manager), grpc_server
    )
    model_service_pb2_grpc.add_ModelServiceServicer_to_server(
        ModelService(server.manager), grpc_server
    )
    port = grpc_server.add_insecure_port("127.0.0.1:0")
    grpc_server.start()
    yield f"127.0.0.1:{port}"
    grpc_server.stop(0)


def test_a_server_that_cannot_list_gets_the_default_name_and_a_hint(tf_serving_like, capsys):
    argv = ["translate", "--server", tf_serving_like, "--max-retries", "0", "a b"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "NOT_FOUND: Servable not found for request: Latest(default)" in err
    assert "no model named 'default' (TF Serving's default name; --model-name was not given)" in err
    assert "--model_name" in err and "--model_config_file" in err

    assert main([*argv, "--model-name", "translator"]) == 0
    assert capsys.readouterr().out.splitlines() == ["B A"]


def test_several_models_are_named(server, capsys):
    assert main(["translate", "--server", server.address, "a b"]) == 2
    err = capsys.readouterr().err
    assert "serves 3 models (gate, slow, translator): name one with --model-name" in err


@pytest.mark.parametrize("rest", [False, True], ids=["grpc", "rest"])
def test_the_only_model_needs_no_name(translator_base, rest, capsys):
    from keras_attention.serving.server.model_server import free_port

    options = ServerOptions(
        port=0,
        rest_api_port=free_port() if rest else 0,
        model_name="fra-eng",
        model_base_path=str(translator_base),
        file_system_poll_wait_seconds=0,
    )
    with ModelServer(options) as model_server:
        if rest and not _lists_over_rest(model_server):
            pytest.skip("the REST layer has no GET /v1/models yet")
        address = model_server.rest_url if rest else model_server.address
        assert main(["translate", "--server", address, "a b"]) == 0
    assert capsys.readouterr().out.splitlines() == ["B A"]


def _lists_over_rest(model_server) -> bool:
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(model_server.rest_url + "/v1/models", timeout=10)
    except urllib.error.HTTPError:
        return False
    return True


def test_other_errors_get_no_model_name_hint(server, capsys):
    argv = ["translate", "--server", server.address, "--model-name", "translator"]
    assert main([*argv, "--model-version", "99", "--max-retries", "0", "a"]) == 1
    err = capsys.readouterr().err
    assert "Specific(translator, 99)" in err and "--model-name NAME" not in err
