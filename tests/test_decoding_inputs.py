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
import re
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
    from keras_attention.inference.trained_run import load_translator

    return load_translator(golden / "run")


def raw_bytes(value: np.ndarray) -> tuple:
    value = np.asarray(value)
    content = value.tolist() if value.dtype == object else value.tobytes()
    return value.dtype.str, value.shape, content


@pytest.fixture(scope="module")
def batching_server(golden, new_export, tmp_path_factory):
    """The same two exports behind `--enable_batching` (scalar inputs refused)."""
    from keras_attention.serving import ModelServer, ServerOptions
    from keras_attention.serving.server.model_server import free_port

    config = tmp_path_factory.mktemp("batching") / "models.config"
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
        enable_batching=True,
    )
    with ModelServer(options) as model_server:
        yield model_server


def post_instances(rest_url: str, model: str, signature: str, instances: list) -> dict:
    """A raw REST body in the row format, as curl and the docs send it."""
    import urllib.request

    body = {"instances": instances}
    if signature != "serving_default":
        body["signature_name"] = signature
    request = urllib.request.Request(
        f"{rest_url}/v1/models/{model}:predict",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def assert_same_outputs(got: dict, want: dict, over_rest: bool) -> None:
    """The outputs of the export before, byte for byte; the confidence outputs are new."""
    assert set(want) <= set(got) and set(got) - set(want) <= {"token_scores", "confidence"}
    for alias, value in want.items():
        if over_rest and value.dtype != object:
            # JSON has no dtypes: the same values, as float32 / int32 again.
            assert raw_bytes(np.asarray(got[alias], value.dtype)) == raw_bytes(value), alias
        else:
            assert raw_bytes(got[alias]) == raw_bytes(value), alias


@pytest.mark.parametrize("batching", [False, True], ids=["plain", "batching"])
@pytest.mark.parametrize("signature", ["serving_default", "beam_search", "score_translation"])
def test_todays_requests_get_the_bytes_of_the_export_before(request, batching, signature):
    """Text-only requests over gRPC and REST (a server with batching too) get the bytes of
    the export before: `serving_default` and `beam_search` take `text` only, as before."""
    server = request.getfixturevalue("batching_server" if batching else "server")
    inputs = {"text": np.array(TEXTS[:4], object)}
    if signature == "score_translation":
        inputs["translation"] = np.array(TARGETS, object)
    with TranslationClient(server.address, model_name="before") as client:
        want = client.predict(inputs, signature_name=signature)
    with TranslationClient(server.address, model_name="after") as client:
        assert_same_outputs(client.predict(inputs, signature_name=signature), want, False)
    rest = RestTranslationClient(server.rest_url, model_name="after")
    assert_same_outputs(rest.predict(inputs, signature_name=signature), want, True)
    if signature != "score_translation":
        # The row format of curl and the docs: `{"instances": ["..."]}`.
        rows = post_instances(server.rest_url, "after", signature, TEXTS[:4])["predictions"]
        assert [row["translation"].encode() for row in rows] == want["translation"].tolist()
        assert [row["length"] for row in rows] == want["length"].tolist()
        # The new outputs: each row's token scores sum to its score.
        for row, score in zip(rows, want["score"], strict=True):
            assert sum(row["token_scores"]) == pytest.approx(float(score), abs=1e-4)
            assert 0 < row["confidence"] <= 1


def test_a_batching_server_refuses_the_scalar_inputs_and_says_so(batching_server):
    with TranslationClient(batching_server.address, model_name="after", max_retries=0) as client:
        for signature in ("search", "sample"):
            with pytest.raises(ServingError) as error:
                client.predict({"text": np.array(TEXTS[:2], object)}, signature_name=signature)
            assert error.value.code == "INVALID_ARGUMENT"
            assert "0th-dimension" in error.value.message


def test_todays_requests_on_the_session_path_get_the_same_bytes(golden, new_export):
    from keras_attention.export import SavedModelSession

    texts = np.array(TEXTS, object)
    with SavedModelSession(golden / "base" / "1") as old, SavedModelSession(new_export.path) as new:
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
    for name in ("serving_default", "beam_search"):
        assert list(signatures[name].inputs) == ["text"] and not signatures[name].defaults
    defaults = {
        name: {
            alias: tf.make_ndarray(proto).item()
            for alias, proto in signatures[name].defaults.items()
            if alias not in ("prefix", "constraints")
        }
        for name in ("search", "sample")
    }
    # The steering inputs: no prefix ([], not a row per text) and no next words.
    assert tf.make_ndarray(signatures["search"].defaults["prefix"]).shape == (0,)
    assert tf.make_ndarray(signatures["search"].defaults["constraints"]).shape == (0,)
    assert defaults["search"].pop("next_words") == 0
    limit = 10  # the run's max_output_length
    assert defaults["search"] == pytest.approx(
        {"beam_width": 1, "n_best": 1, "length_penalty": 0.6, "max_output_length": limit}
    )
    assert defaults["sample"] == pytest.approx(
        {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "seed": -1, "max_output_length": limit}
    )
    manifest = new_export.manifest.decoding
    assert manifest["search"]["inputs"]["beam_width"] == {"default": 1, "range": "[1, 16]"}
    assert manifest["search"]["max_beam_width"] == 16
    assert "inputs" not in manifest["beam_search"] and manifest["beam_search"]["beam_width"] == 3


def test_search_equals_the_text_only_signatures(new_export, server):
    """`search` with its defaults is `serving_default`; with the export's beam width and
    length penalty it is `beam_search`, on the Session and over gRPC."""
    from keras_attention.export import SavedModelSession

    texts = np.array(TEXTS, object)
    beam = {
        "beam_width": np.int32(3),
        "n_best": np.int32(1),
        "length_penalty": np.float32(0.6),
        "max_output_length": np.int32(10),
    }
    with SavedModelSession(new_export.path) as session:
        greedy = session.run("serving_default", {"text": texts})
        beam_search = session.run("beam_search", {"text": texts})
        pairs = [
            (session.run("search", {"text": texts}), greedy),
            (session.run("search", {"text": texts, **beam}), beam_search),
        ]
    with TranslationClient(server.address, model_name="after") as client:
        pairs.append(
            (client.predict({"text": texts, **beam}, signature_name="search"), beam_search)
        )
    for got, want in pairs:
        for alias, value in want.items():
            assert raw_bytes(got[alias]) == raw_bytes(value), alias


PREFIXES = ["je", "", "elle", "le", "ils", "", "", "", "", "le chat"]


def test_a_prefix_and_next_words_through_the_export_equal_the_library(
    new_export, server, translator
):
    """`search` with `prefix` and `next_words` on the Session path, over gRPC and over REST
    (both clients) gives the local `Translator`'s translations and next words."""
    import tensorflow as tf

    from keras_attention.export import SavedModelSession

    assert len(PREFIXES) == len(TEXTS)
    local = translator.translate(
        tf.constant(TEXTS),
        translator.strategy(beam_width=3, length_penalty=0.6),
        prefixes=tf.constant(PREFIXES),
        next_words=3,
    )
    want_texts = [t.decode() for t in local["translation"].numpy()]
    want_words = [[w.decode() for w in row] for row in local["next_words"].numpy()]
    for text, prefix in zip(want_texts, PREFIXES, strict=True):
        assert text.lower().startswith(prefix)
    inputs = {
        "text": np.array(TEXTS, object),
        "prefix": np.array(PREFIXES, object),
        "next_words": np.int32(3),
        "beam_width": np.int32(3),
    }
    with SavedModelSession(new_export.path) as session:
        outputs = session.run("search", inputs)
        # Without the steering inputs: the outputs of before, no next words.
        plain = session.run("search", {"text": np.array(TEXTS, object)})
        greedy = session.run("serving_default", {"text": np.array(TEXTS, object)})
    assert [t.decode() for t in outputs["translation"]] == want_texts
    assert [[w.decode() for w in row] for row in outputs["next_words"]] == want_words
    np.testing.assert_allclose(outputs["next_word_scores"], local["next_word_scores"], atol=1e-5)
    assert plain["next_words"].shape == (len(TEXTS), 0)
    assert raw_bytes(plain["translation"]) == raw_bytes(greedy["translation"])
    with TranslationClient(server.address, model_name="after") as client:
        grpc = client.translate(TEXTS, beam_width=3, prefixes=PREFIXES, next_words=3)
    rest = RestTranslationClient(server.rest_url, model_name="after").translate(
        TEXTS, beam_width=3, prefixes=PREFIXES, next_words=3
    )
    for results in (grpc, rest):
        assert [r.text for r in results] == want_texts
        assert [[w for w, _ in r.next_words] for r in results] == want_words
    # A prefix for some texts only is refused, naming the input.
    with TranslationClient(server.address, model_name="after", max_retries=0) as client:
        with pytest.raises(ServingError, match="prefix"):
            client.predict(
                {"text": np.array(TEXTS, object), "prefix": np.array(PREFIXES[:2], object)},
                signature_name="search",
            )


CONSTRAINTS = [["chat"], [], ["rouge", "pomme"], [], [], [], [], [], [], ["le"]]


def test_constraints_through_the_export_equal_the_library(new_export, server, translator):
    """`search` with `constraints` on the Session path, over gRPC and over REST (both
    clients): the local `Translator`'s translations, every phrase in them, and the
    sentences without phrases as without the input."""
    import tensorflow as tf

    from keras_attention.export import SavedModelSession

    assert len(CONSTRAINTS) == len(TEXTS)
    width = max(len(row) for row in CONSTRAINTS)
    local = translator.translate(
        tf.constant(TEXTS),
        translator.strategy(beam_width=3, length_penalty=0.6),
        constraints=tf.constant([row + [""] * (width - len(row)) for row in CONSTRAINTS]),
    )
    want = [t.decode() for t in local["translation"].numpy()]
    for text, phrases in zip(want, CONSTRAINTS, strict=True):
        assert all(phrase in text for phrase in phrases), (text, phrases)
    beam = {"beam_width": np.int32(3), "length_penalty": np.float32(0.6)}
    joined = np.array(["\t".join(row) for row in CONSTRAINTS], object)
    with SavedModelSession(new_export.path) as session:
        outputs = session.run(
            "search", {"text": np.array(TEXTS, object), "constraints": joined, **beam}
        )
        plain = session.run("search", {"text": np.array(TEXTS, object), **beam})
    assert [t.decode() for t in outputs["translation"]] == want
    np.testing.assert_allclose(outputs["score"], local["score"].numpy(), atol=1e-4)
    for row, phrases in enumerate(CONSTRAINTS):
        if not phrases:
            assert outputs["translation"][row] == plain["translation"][row]
            assert outputs["score"][row] == plain["score"][row]
    with TranslationClient(server.address, model_name="after") as client:
        grpc = client.translate(TEXTS, beam_width=3, constraints=CONSTRAINTS)
        with pytest.raises(ServingError, match="zorglub"):
            client.translate(TEXTS[:1], beam_width=3, constraints=[["zorglub"]])
    rest = RestTranslationClient(server.rest_url, model_name="after").translate(
        TEXTS, beam_width=3, constraints=CONSTRAINTS
    )
    for results in (grpc, rest):
        assert [r.text for r in results] == want


STEERED_PREFIXES = ["", "", "elle", "le", "", "", "", "", "", ""]


def test_steered_beam_search_equals_the_library_on_every_path(
    new_export, server, batching_server, translator
):
    """`steered_beam_search` (each row its prefix and constraints, `""` for none): the local
    `Translator`'s beam search with them, on the Session path, through both clients and as
    REST rows through a batching server; the rows with neither are `beam_search`'s."""
    import tensorflow as tf

    from keras_attention.export import SavedModelSession

    width = max(len(row) for row in CONSTRAINTS)
    local = translator.translate(
        tf.constant(TEXTS),
        translator.strategy(beam_width=3, length_penalty=0.6),
        prefixes=tf.constant(STEERED_PREFIXES),
        constraints=tf.constant([row + [""] * (width - len(row)) for row in CONSTRAINTS]),
    )
    want = [t.decode() for t in local["translation"].numpy()]
    joined = ["\t".join(row) for row in CONSTRAINTS]
    inputs = {
        "text": np.array(TEXTS, object),
        "prefix": np.array(STEERED_PREFIXES, object),
        "constraints": np.array(joined, object),
    }
    none = np.array([""] * len(TEXTS), object)
    with SavedModelSession(new_export.path) as session:
        outputs = session.run("steered_beam_search", inputs)
        beam = session.run("beam_search", {"text": inputs["text"]})
        unsteered = session.run(
            "steered_beam_search", {"text": inputs["text"], "prefix": none, "constraints": none}
        )
    assert [t.decode() for t in outputs["translation"]] == want
    np.testing.assert_allclose(outputs["score"], local["score"].numpy(), atol=1e-4)
    assert sorted(outputs) == sorted(beam)
    for row, (prefix, phrases) in enumerate(zip(STEERED_PREFIXES, CONSTRAINTS, strict=True)):
        assert want[row].lower().startswith(prefix)
        assert all(phrase in want[row] for phrase in phrases), (want[row], phrases)
        if not prefix and not phrases:
            assert outputs["translation"][row] == beam["translation"][row]
            np.testing.assert_allclose(outputs["score"][row], beam["score"][row], atol=1e-5)
    for alias, value in beam.items():  # no prefix, no constraint: beam_search's outputs
        assert raw_bytes(unsteered[alias]) == raw_bytes(value), alias
    steering = {"prefixes": STEERED_PREFIXES, "constraints": CONSTRAINTS}
    for address in (server.address, batching_server.address):
        with TranslationClient(address, model_name="after") as client:
            grpc = client.translate(TEXTS, signature_name="steered_beam_search", **steering)
            assert [r.text for r in grpc] == want
    rest = RestTranslationClient(server.rest_url, model_name="after")
    assert [
        r.text for r in rest.translate(TEXTS, **steering, signature_name="steered_beam_search")
    ] == want
    # TF Serving's REST row format, each row its own inputs, through a batching server.
    rows = [
        {"text": text, "prefix": prefix, "constraints": phrases}
        for text, prefix, phrases in zip(TEXTS, STEERED_PREFIXES, joined, strict=True)
    ]
    answer = post_instances(batching_server.rest_url, "after", "steered_beam_search", rows)
    assert [row["translation"] for row in answer["predictions"]] == want


@pytest.mark.parametrize(
    "phrase, message",
    [
        ("zorglub", "no translation can contain it. Received:] [zorglub]"),
        (" ".join(["le"] * 10), "(at most 9, max_output_length - 1)"),
    ],
)
def test_steered_beam_search_refuses_a_constraint_as_search_does(server, phrase, message):
    with TranslationClient(server.address, model_name="after", max_retries=0) as client:
        answers = []
        for signature, extra in [
            ("search", {"beam_width": np.int32(3)}),
            ("steered_beam_search", {"prefix": np.array(["", ""], object)}),
        ]:
            inputs = {"text": np.array(TEXTS[:2], object), **extra}
            inputs["constraints"] = np.array(["", phrase], object)
            with pytest.raises(ServingError) as error:
                client.predict(inputs, signature_name=signature)
            assert error.value.code == "INVALID_ARGUMENT"
            assert message in error.value.message
            answers.append(error.value.message.split("[[")[0])
        assert answers[0] == answers[1]
        with pytest.raises(ValueError, match="steered_beam_search decodes at the export's"):
            client.translate(TEXTS, signature_name="steered_beam_search", beam_width=3)


def test_constraint_and_glossary_flags_remote_and_local(server, golden, capsys, tmp_path):
    """`--constraint P --glossary FILE`: the same lines from the run and from the served
    export (both command lines); a glossary entry applies where its source term occurs."""
    from keras_attention.cli import main as local_main
    from keras_attention_client.cli import main as client_main

    glossary = tmp_path / "glossary.tsv"
    glossary.write_text("# source<TAB>target\ndog\tchien\nRED APPLE\trouge\n", encoding="utf-8")
    flags = ["--constraint", "le", "--glossary", str(glossary), "--beam-width", "3"]
    texts = ["I see the cat .", "the dog", "we love a big red apple ."]
    assert local_main(["translate", str(golden / "run"), *flags, *texts]) == 0
    local = capsys.readouterr().out.splitlines()
    remote_flags = ["--server", server.address, "--model-name", "after", *flags, *texts]
    assert client_main(["translate", *remote_flags]) == 0
    remote = capsys.readouterr().out.splitlines()
    assert local == remote and len(local) == len(texts)
    for line, wanted in zip(local, [["le"], ["le", "chien"], ["le", "rouge"]], strict=True):
        assert all(word in re.findall(r"\w+", line) for word in wanted), (line, wanted)
    glossary.write_text("dog chien\n", encoding="utf-8")
    assert local_main(["translate", str(golden / "run"), *flags, *texts]) == 2
    assert "glossary.tsv:1: a glossary line must be SOURCE<TAB>TARGET" in capsys.readouterr().err


def test_confidence_prefix_and_next_words_flags_remote_and_local(server, golden, capsys):
    """`--confidence --prefix P --next-words K`: the same lines from the run and from the
    served export (both command lines)."""
    from keras_attention.cli import main as local_main
    from keras_attention_client.cli import main as client_main

    flags = ["--confidence", "--prefix", "je", "--next-words", "2", "--beam-width", "3"]
    texts = ["I see the cat .", "the dog"]
    assert local_main(["translate", str(golden / "run"), *flags, *texts]) == 0
    local = capsys.readouterr().out.splitlines()
    remote_flags = ["--server", server.address, "--model-name", "after", *flags, *texts]
    assert client_main(["translate", *remote_flags]) == 0
    remote = capsys.readouterr().out.splitlines()
    assert len(local) == len(remote) == len(texts)
    for mine, theirs in zip(local, remote, strict=True):
        confidence, translation, tokens, words = mine.split("\t")
        assert 0 < float(confidence) <= 1
        assert translation.lower().startswith("je") and tokens.startswith("je:1.00")
        assert len(words.split(" ")) == 2
        other = theirs.split("\t")
        assert other[1:3] == [translation, tokens]
        assert abs(float(other[0]) - float(confidence)) <= 2e-3
        assert [w.split(":")[0] for w in other[3].split(" ")] == [
            w.split(":")[0] for w in words.split(" ")
        ]


@pytest.mark.slow
def test_check_export_native_fills_the_defaults_and_runs_every_input(new_export):
    from keras_attention.export import ExportChecker

    report = ExportChecker(native=True).check(new_export.path)
    assert report.ok, report.errors
    # 16 warmup records (2 each for serving_default, beam_search and score_translation, 4
    # for search, one of them with constraints, 3 for sample and for steered_beam_search,
    # one of them with prefixes and constraints), their missing inputs filled from the
    # defaults, plus one request with every input given for search and for sample.
    assert len(report.warmup) == 16
    assert [e["signature"] for e in report.warmup].count("steered_beam_search") == 3
    assert report.native["requests"] == 16 + 2
    assert report.native["max_float_difference"] <= 1e-5


@pytest.mark.parametrize(
    "signature, inputs, message",
    [
        ("search", {"beam_width": np.int32(17)}, "`beam_width` must be in [1, 16]"),
        ("search", {"beam_width": np.int32(0)}, "`beam_width` must be in [1, 16]"),
        (
            "search",
            {"n_best": np.int32(2)},
            "`n_best` must be in [1, beam_width]",
        ),
        ("search", {"length_penalty": np.float32(-1)}, "`length_penalty` must be a finite"),
        (
            "search",
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
    # REST fills no defaults: every input, the steering ones too (`[]`: no prefix).
    body.update({"prefix": np.array([], object), "next_words": np.int32(0)})
    body["constraints"] = np.array([], object)
    outputs = rest.predict({**body, "max_output_length": 10}, signature_name="search")
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


def assert_same_translation(remote, local):
    assert remote.text == local.text
    assert list(remote.tokens) == local.tokens
    assert remote.length == local.length
    np.testing.assert_allclose(remote.score, local.score, rtol=0, atol=1e-4)


def local_results(translator, options: dict, batch_size: int):
    from keras_attention.inference.translator import Translator

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


def _client_cases():
    """Every option set over both transports; one gRPC n-best case stays fast."""
    for transport in ("grpc", "rest"):
        for index, options in enumerate(OPTIONS):
            fast = transport == "grpc" and index == 1
            name = ",".join(f"{k}={v}" for k, v in options.items())
            yield pytest.param(
                options, transport, id=f"{transport}-{name}", marks=() if fast else pytest.mark.slow
            )


@pytest.mark.parametrize("options, transport", list(_client_cases()))
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


@pytest.mark.slow
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
            assert set(h) == set(w) == set(a), "one JSON shape on every command line"
            assert h["text"] == w["text"] == a["text"]
            assert h["tokens"] == w["tokens"] == a["tokens"]
            assert abs(h["score"] - w["score"]) <= 1e-4 and abs(a["score"] - w["score"]) <= 1e-4


def test_decoding_options_against_an_export_without_them_name_its_version(server):
    with TranslationClient(server.address, model_name="before", max_retries=0) as client:
        with pytest.raises(ServingError) as error:
            client.translate(TEXTS[:2], beam_width=5)
        assert error.value.code == "INVALID_ARGUMENT"
        assert "'before' version 1" in error.value.message
        assert "'search'" in error.value.message and "exported before" in error.value.message
        # Without decoding options the same export still answers.
        assert len(client.translate(TEXTS[:2], signature_name="beam_search")) == 2
    rest = RestTranslationClient(server.rest_url, model_name="before", max_retries=0)
    with pytest.raises(ServingError, match="version 1"):
        rest.translate(TEXTS[:2], sample=True, seed=1)
    with pytest.raises(ServingError, match="has no 'search' signature"):
        rest.translate(TEXTS[:2], n_best=1)


@pytest.mark.parametrize(
    "flags, signature, inputs",
    [
        ([], "serving_default", {}),
        (["--beam", "3"], "search", {"beam_width": 3}),
        (["--signature", "beam_search"], "beam_search", {}),
        (["--beam-width", "3"], "search", {"beam_width": 3}),
        (["--beam-width", "1"], "search", {"beam_width": 1}),
        (["--beam", "3", "--n-best", "2"], "search", {"beam_width": 3, "n_best": 2}),
        (["--signature", "beam_search", "--length-penalty", "1"], "search", {"length_penalty": 1}),
        (["--max-output-length", "4"], "search", {"max_output_length": 4}),
        (["--sample", "--seed", "2"], "sample", {"seed": 2}),
    ],
)
def test_command_line_flags_choose_the_signature(flags, signature, inputs):
    """Without a decoding option a request goes where it went before decoding inputs
    existed, `text` only; any option goes to `search`, `--sample` to `sample`."""
    from keras_attention_client.cli import build_parser, client_from_args
    from keras_attention_client.decoding_flags import remote_decoding_options
    from keras_attention_client.decoding_request import decoding_request

    command = ["translate", "--server", "localhost:1", "--model-name", "m", *flags, "hi"]
    args = build_parser().parse_args(command)
    with client_from_args(args) as client:
        chosen = client.signature_name
    got_signature, got_inputs = decoding_request(
        chosen, remote_decoding_options(args), explicit_signature=False
    )
    assert got_signature == signature
    assert {k: v.item() for k, v in got_inputs.items()} == pytest.approx(inputs)


def test_bad_client_arguments_fail_before_any_request(server):
    with TranslationClient(server.address, model_name="after") as client:
        with pytest.raises(ValueError, match="cannot be combined with beam search"):
            client.translate(TEXTS, sample=True, beam_width=4)
        with pytest.raises(ValueError, match="top_k only go with sample=True"):
            client.translate(TEXTS, top_k=3)
        with pytest.raises(TypeError, match="beam_width must be an int"):
            client.translate(TEXTS, beam_width=2.5)
