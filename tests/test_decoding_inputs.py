"""Decoding inputs of an export, proven on TF Serving's paths and through the clients.

`tests/export/golden/export_before_decoding_inputs.tar.gz` holds a tiny
trained run (`run/`) and `base/1`, the export of that run written by the
exporter before decoding inputs existed (commit 68138b0, beam width 3,
length penalty 0.6). The new export of the same run is made here, both are
served by one local server, and today's requests (text only) must get the
same bytes from both; the new inputs are checked on the Session path, the C
API path (`check-export --native`) and the server, and the clients and
command lines must equal local decoding with the same flags.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import numpy as np
import pytest
from helpers.export_testing import SENTENCES

from keras_attention_client import RestTranslationClient, ServingError, TranslationClient

GOLDEN = Path(__file__).parent / "export" / "golden" / "export_before_decoding_inputs.tar.gz"
TEXTS = [*SENTENCES, "", "the cat"]
TARGETS = ["je vois le chat .", "nous aimons une grande pomme rouge .", "elle mange", "le chien"]


@pytest.fixture(scope="module")
def golden(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("golden")
    with tarfile.open(GOLDEN) as archive:
        archive.extractall(root, filter="data")
    return root


@pytest.fixture(scope="module")
def new_export(golden):
    from keras_attention.export import TranslatorExporter

    exporter = TranslatorExporter.from_run(golden / "run", beam_width=3, length_penalty=0.6)
    return exporter.export(golden / "after")


@pytest.fixture(scope="module")
def server(golden, new_export, tmp_path_factory):
    from keras_attention.serving import ModelServer, ServerOptions
    from keras_attention.serving.server.model_server import free_port

    config = tmp_path_factory.mktemp("config") / "models.config"
    config.write_text(
        "model_config_list {\n"
        f'  config {{ name: "before" base_path: "{golden / "base"}" model_platform: "tensorflow" }}\n'
        f'  config {{ name: "after" base_path: "{golden / "after"}" model_platform: "tensorflow" }}\n'
        "}\n"
    )
    options = ServerOptions(
        port=0,
        rest_api_port=free_port(),
        model_config_file=str(config),
        file_system_poll_wait_seconds=0,
    )
    with ModelServer(options) as model_server:
        yield model_server


@pytest.fixture(scope="module")
def translator(golden):
    from keras_attention.training.trainer import load_translator

    return load_translator(golden / "run")


def raw_bytes(value: np.ndarray) -> tuple:
    value = np.asarray(value)
    content = value.tolist() if value.dtype == object else value.tobytes()
    return value.dtype.str, value.shape, content


SEARCH_DEFAULTS = {
    "serving_default": {
        "beam_width": 1,
        "n_best": 1,
        "length_penalty": 0.6,
        "max_output_length": 10,
    },
    "beam_search": {"beam_width": 3, "n_best": 1, "length_penalty": 0.6, "max_output_length": 10},
    "score_translation": {},
}


@pytest.mark.parametrize("signature", ["serving_default", "beam_search", "score_translation"])
def test_todays_requests_get_the_bytes_of_the_export_before(server, signature):
    """gRPC: a text-only request gets the defaults, and the bytes of the export before.

    REST: TF Serving's JSON parser wants every named input in `inputs`
    (tensorflow_serving/util/json_tensor.cc), so a REST request to the new
    export gives the decoding inputs (here the defaults) and gets the same
    bytes; a text-only one is refused as TF Serving refuses it.
    """
    inputs = {"text": np.array(TEXTS[:4], object)}
    if signature == "score_translation":
        inputs["translation"] = np.array(TARGETS, object)
    with TranslationClient(server.address, model_name="before") as client:
        want = client.predict(inputs, signature_name=signature)
    with TranslationClient(server.address, model_name="after") as client:
        over_grpc = client.predict(inputs, signature_name=signature)
    rest = RestTranslationClient(server.rest_url, model_name="after")
    given = {
        k: np.asarray(v, np.float32 if k == "length_penalty" else np.int32)
        for k, v in SEARCH_DEFAULTS[signature].items()
    }
    over_rest = rest.predict({**inputs, **given}, signature_name=signature)
    for got in (over_grpc, over_rest):
        assert sorted(got) == sorted(want)
        for alias, value in want.items():
            if got is over_rest and value.dtype != object:
                # JSON has no dtypes: the same values, as float32 / int32 again.
                assert raw_bytes(np.asarray(got[alias], value.dtype)) == raw_bytes(value)
            else:
                assert raw_bytes(got[alias]) == raw_bytes(value), alias
    if given:
        with pytest.raises(ServingError, match="Missing named input"):
            RestTranslationClient(server.rest_url, model_name="after", max_retries=0).predict(
                inputs, signature_name=signature
            )


def test_todays_requests_on_the_session_path_get_the_same_bytes(golden, new_export):
    from keras_attention.export import ServingSession

    texts = np.array(TEXTS, object)
    with ServingSession(golden / "base" / "1") as old, ServingSession(new_export.path) as new:
        for signature in ("serving_default", "beam_search"):
            want = old.run(signature, {"text": texts})
            got = new.run(signature, {"text": texts})
            for alias, value in want.items():
                assert raw_bytes(got[alias]) == raw_bytes(value), (signature, alias)
            empty = new.run(signature, {"text": np.array([], object)})
            assert empty["translation"].shape == (0,) and empty["attention"].shape == (0, 0, 0)


def test_signature_defs_hold_the_defaults(new_export):
    import tensorflow as tf

    from keras_attention.export.saved_model_proto import read_saved_model, serve_meta_graph

    signatures = serve_meta_graph(read_saved_model(new_export.path)).signature_def
    defaults = {
        name: {
            alias: tf.make_ndarray(proto).item()
            for alias, proto in signatures[name].defaults.items()
        }
        for name in ("serving_default", "beam_search", "sample")
    }
    limit = 10  # the run's max_output_length
    assert defaults["serving_default"] == pytest.approx(
        {"beam_width": 1, "n_best": 1, "length_penalty": 0.6, "max_output_length": limit}
    )
    assert defaults["beam_search"]["beam_width"] == 3
    assert defaults["sample"] == pytest.approx(
        {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "seed": -1, "max_output_length": limit}
    )
    manifest = new_export.manifest.decoding
    assert manifest["beam_search"]["inputs"]["beam_width"] == {"default": 3, "range": "[1, 16]"}
    assert manifest["beam_search"]["max_beam_width"] == 16


def test_defaults_equal_the_same_values_given(new_export, server):
    """A request without the inputs equals one giving the defaults, on the Session and gRPC."""
    from keras_attention.export import ServingSession

    texts = np.array(TEXTS, object)
    given = {
        "beam_width": np.int32(3),
        "n_best": np.int32(1),
        "length_penalty": np.float32(0.6),
        "max_output_length": np.int32(10),
    }
    with ServingSession(new_export.path) as session:
        omitted = session.run("beam_search", {"text": texts})
        explicit = session.run("beam_search", {"text": texts, **given})
    with TranslationClient(server.address, model_name="after") as client:
        over_grpc = client.predict({"text": texts, **given}, signature_name="beam_search")
    for alias, value in omitted.items():
        assert raw_bytes(explicit[alias]) == raw_bytes(value)
        assert raw_bytes(over_grpc[alias]) == raw_bytes(value)


@pytest.mark.slow
def test_check_export_native_fills_the_defaults_and_runs_every_input(new_export):
    from keras_attention.export import ExportChecker

    report = ExportChecker(native=True).check(new_export.path)
    assert report.ok, report.errors
    # 11 warmup records (3 per translating signature, 2 for score_translation), their
    # missing inputs filled from the defaults, plus one request with every input given per
    # translating signature.
    assert len(report.warmup) == 11
    assert report.native["requests"] == 11 + 3
    assert report.native["max_float_difference"] <= 1e-5


@pytest.mark.parametrize(
    "signature, inputs, message",
    [
        ("beam_search", {"beam_width": np.int32(17)}, "`beam_width` must be in [1, 16]"),
        ("beam_search", {"beam_width": np.int32(0)}, "`beam_width` must be in [1, 16]"),
        (
            "serving_default",
            {"n_best": np.int32(2)},
            "`n_best` must be in [1, beam_width]",
        ),
        ("beam_search", {"length_penalty": np.float32(-1)}, "`length_penalty` must be a finite"),
        (
            "beam_search",
            {"max_output_length": np.int32(11)},
            "`max_output_length` must be in [1, 10]",
        ),
        ("sample", {"temperature": np.float32(0)}, "`temperature` must be a finite number > 0"),
        ("sample", {"top_k": np.int32(-1)}, "`top_k` must be >= 0"),
        ("sample", {"top_p": np.float32(1.5)}, "`top_p` must be in (0, 1]"),
        ("sample", {"seed": np.int32(-2)}, "`seed` must be >= -1"),
    ],
)
def test_out_of_range_inputs_are_invalid_argument_naming_the_range(
    server, signature, inputs, message
):
    request = {"text": np.array(TEXTS[:2], object), **inputs}
    with TranslationClient(server.address, model_name="after", max_retries=0) as client:
        with pytest.raises(ServingError) as error:
            client.predict(request, signature_name=signature)
    assert error.value.code == "INVALID_ARGUMENT"
    assert message in error.value.message
    rest = RestTranslationClient(server.rest_url, model_name="after", max_retries=0)
    # REST requests give every input (TF Serving's JSON parser wants them all).
    defaults = rest.model_metadata().signatures[signature].defaults
    with pytest.raises(ServingError) as error:
        rest.predict({**defaults, **request}, signature_name=signature)
    assert error.value.http_status == 400 and message in error.value.message


def test_n_best_outputs_have_an_n_best_axis_over_rest(server):
    """A REST body with scalar inputs (columnar format), answered with [batch, n_best, ...]."""
    rest = RestTranslationClient(server.rest_url, model_name="after")
    body = {"text": TEXTS[:3], "beam_width": 4, "n_best": 3, "length_penalty": 0.6}
    outputs = rest.predict({**body, "max_output_length": 10}, signature_name="beam_search")
    assert np.asarray(outputs["translation"]).shape == (3, 3)
    assert np.asarray(outputs["score"]).shape == (3, 3)
    tokens, attention = np.asarray(outputs["tokens"]), np.asarray(outputs["attention"])
    assert tokens.shape[:2] == (3, 3) and attention.shape[:2] == (3, 3)
    assert np.asarray(outputs["source_tokens"]).shape[0] == 3
    scores = np.asarray(outputs["score"])
    assert np.all(np.isfinite(scores))


OPTIONS = [
    {"beam_width": 5},
    {"beam_width": 4, "n_best": 3},
    {"beam_width": 3, "length_penalty": 0.0, "max_output_length": 6},
    {"max_output_length": 3},
    {"sample": True, "seed": 5, "temperature": 0.8, "top_k": 5, "top_p": 0.9},
    {"sample": True, "seed": 11},
]


def assert_same_translation(remote, local: dict):
    assert remote.text == local["translation"]
    assert list(remote.tokens) == local["tokens"]
    assert remote.length == local["length"]
    np.testing.assert_allclose(remote.score, local["score"], rtol=0, atol=1e-4)


def local_results(translator, options: dict, batch_size: int):
    from keras_attention.translator import Translator

    options = dict(options)
    steps = options.pop("max_output_length", None)
    if steps is not None:
        translator = Translator(
            translator.model,
            translator.source_vectorizer,
            translator.target_vectorizer,
            max_output_length=steps,
        )
    return translator.translate_all(TEXTS, batch_size=batch_size, **options)


@pytest.mark.parametrize(
    "options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items())
)
@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_clients_equal_local_translate_with_the_same_options(
    server, translator, options, transport
):
    local = local_results(translator, options, batch_size=4)
    if transport == "grpc":
        with TranslationClient(server.address, model_name="after", batch_size=4) as client:
            remote = client.translate(TEXTS, **options)
    else:
        client = RestTranslationClient(server.rest_url, model_name="after", batch_size=4)
        remote = client.translate(TEXTS, **options)
    for have, want in zip(remote, local, strict=True):
        if isinstance(want, list):
            assert isinstance(have, list) and len(have) == len(want) == options["n_best"]
            for one, reference in zip(have, want, strict=True):
                assert_same_translation(one, reference)
        else:
            assert_same_translation(have, want)


@pytest.mark.parametrize(
    "flags",
    [
        ["--beam-width", "5", "--n-best", "2", "--length-penalty", "1.0"],
        ["--max-output-length", "4"],
        ["--sample", "--seed", "3", "--temperature", "0.7", "--top-k", "4", "--top-p", "0.8"],
    ],
)
def test_command_lines_equal_local_translate(server, golden, flags, capsys):
    from keras_attention.cli import main as local_main
    from keras_attention_client.cli import main as client_main

    common = ["--format", "json", "--batch-size", "3", *flags, *TEXTS]
    assert local_main(["translate", str(golden / "run"), *common]) == 0
    local = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    remote_flags = ["--server", server.address, "--model-name", "after", *common]
    assert client_main(["translate", *remote_flags]) == 0
    client = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert local_main(["translate", *remote_flags]) == 0
    through_server = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(local) == len(client) == len(through_server) == len(TEXTS)
    for want, have, also in zip(local, client, through_server, strict=True):
        wants = want.get("n_best", [want])
        haves = have.get("n_best", [have])
        alsos = also.get("n_best", [also])
        assert len(wants) == len(haves) == len(alsos)
        for w, h, a in zip(wants, haves, alsos, strict=True):
            assert h["text"] == w["translation"] == a["translation"]
            assert h["tokens"] == w["tokens"] == a["tokens"]
            assert abs(h["score"] - w["score"]) <= 1e-4 and abs(a["score"] - w["score"]) <= 1e-4


def test_decoding_options_against_an_export_without_them_name_its_version(server):
    with TranslationClient(server.address, model_name="before", max_retries=0) as client:
        with pytest.raises(ServingError) as error:
            client.translate(TEXTS[:2], beam_width=5)
        assert error.value.code == "INVALID_ARGUMENT"
        assert "'before' version 1" in error.value.message
        assert "'beam_width'" in error.value.message and "exported before" in error.value.message
        # Without decoding options the same export still answers.
        assert len(client.translate(TEXTS[:2], signature_name="beam_search")) == 2
    rest = RestTranslationClient(server.rest_url, model_name="before", max_retries=0)
    with pytest.raises(ServingError, match="version 1"):
        rest.translate(TEXTS[:2], sample=True, seed=1)


def test_bad_client_arguments_fail_before_any_request(server):
    with TranslationClient(server.address, model_name="after") as client:
        with pytest.raises(ValueError, match="cannot be combined with beam search"):
            client.translate(TEXTS, sample=True, beam_width=4)
        with pytest.raises(ValueError, match="top_k only go with sample=True"):
            client.translate(TEXTS, top_k=3)
        with pytest.raises(TypeError, match="beam_width must be an int"):
            client.translate(TEXTS, beam_width=2.5)
