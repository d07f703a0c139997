"""`keras-attention export --shortlist K`: the export, its manifest, check-export, bad sizes."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
import tensorflow as tf
from helpers.export_testing import SENTENCES

from keras_attention.cli import main

SMALL_BATCH = ["I see the cat .", "she eat", "the dog", "apple", "Hello, world!"]


# One export of the tiny run through the command line, checked on the Session path and
# the C API as `export` does by default: about 70 s on 2 cores.
@pytest.fixture(scope="module")
def shortlisted(run_dir, tmp_path_factory):
    base = tmp_path_factory.mktemp("shortlisted")
    argv = ["export", str(run_dir), "--export-dir", str(base), "--precision", "float32"]
    argv += ["--weights", "int8", "--beam-width", "3", "--shortlist", "1"]
    argv += ["--shortlist-frequent", "1"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue(), base / "1"


@pytest.mark.slow
def test_the_export_passes_check_export_on_both_paths(shortlisted):
    code, out, _ = shortlisted
    assert code == 0, out
    assert "check-export: OK" in out
    assert "the same outputs on TensorFlow's C API" in out
    assert "Vocabulary shortlist: 1 target tokens per source token (lmi, from " in out


@pytest.mark.slow
def test_the_manifest_records_the_shortlist(shortlisted, run_dir, translator):
    from keras_attention.export import ExportManifest
    from keras_attention.shortlist.vocabulary_shortlist import VocabularyShortlist

    manifest = ExportManifest.load(shortlisted[2])
    built = VocabularyShortlist.from_run(run_dir, k=1, frequent=1)
    sizes = (translator.source_vectorizer.vocabulary_size, 1)
    assert manifest.shortlist == {
        "k": 1,
        "frequent": 1,
        "measure": "lmi",
        "pairs": built.pairs,
        "special_ids": [0, 1, 2, 3],
        "table_shape": list(sizes),
        "table_bytes": sizes[0] * 4,
    }
    assert 250 < built.pairs <= 320  # the tiny run's training split, as training filtered it


def session_outputs(path, signature, texts):
    from keras_attention.export import SavedModelSession

    with SavedModelSession(path) as session:
        return session.run(signature, {"text": np.array(texts, dtype=object)})


@pytest.mark.slow
@pytest.mark.parametrize("signature", ("serving_default", "beam_search"))
def test_the_export_decodes_as_the_shortlisted_translator(
    shortlisted, run_dir, translator, signature
):
    """On TF Serving's Session path: what `Translator(shortlist=...)` gives in process
    with the same int8 weights, and only candidate ids."""
    from keras_attention.export.weight_storage import WeightStorage
    from keras_attention.shortlist.vocabulary_shortlist import VocabularyShortlist

    shortlist = VocabularyShortlist.from_run(run_dir, k=1, frequent=1)
    storage = WeightStorage(translator.model, "int8")
    local = translator.with_shortlist(shortlist, gather_weights=storage.gather)
    strategy = local.strategy(beam_width=3 if signature == "beam_search" else 1)
    expected = storage.wrap(local.translate)(tf.constant(SMALL_BATCH), strategy)
    outputs = session_outputs(shortlisted[2], signature, SMALL_BATCH)
    for key in ("translation", "tokens", "length"):
        np.testing.assert_array_equal(outputs[key], expected[key].numpy(), err_msg=key)
    np.testing.assert_allclose(outputs["score"], expected["score"].numpy(), atol=1e-5)
    source_ids, _ = translator.encode_source(tf.constant(SMALL_BATCH))
    vocabulary = translator.target_vectorizer.get_vocabulary()
    allowed = {vocabulary[i] for i in shortlist.candidates(source_ids).numpy()}
    assert {t.decode() for t in outputs["tokens"].ravel()} <= allowed


@pytest.fixture(scope="module")
def batching_server(shortlisted, tmp_path_factory):
    """The shortlisted export behind `--enable_batching`: batches of up to 64 rows that
    close when full (or after 5 s), one at a time, and 64 requests in flight."""
    from keras_attention.serving import ModelServer, ServerOptions

    parameters = tmp_path_factory.mktemp("batching") / "batching_parameters.txt"
    parameters.write_text(
        "max_batch_size { value: 64 } batch_timeout_micros { value: 5000000 }\n"
        "max_enqueued_batches { value: 100 } num_batch_threads { value: 1 }\n"
    )
    options = ServerOptions(
        port=0,
        model_name="shortlisted",
        model_base_path=str(shortlisted[2].parent),
        file_system_poll_wait_seconds=0,
        enable_batching=True,
        batching_parameters_file=str(parameters),
        grpc_max_threads=64,
    )
    with ModelServer(options) as server:
        yield server


# Target words of the tiny run; with a shortlist, a row's constraints join its candidates.
PHRASES = ["chat", "pomme", "le", "chien", "rouge", "nous", "maison", "petit"]


def steering_of(signature: str, index: int) -> dict[str, np.ndarray]:
    """`steered_beam_search`'s inputs for request `index`: its own constraint, and a prefix
    every fourth request; every fourth other request has neither."""
    if signature != "steered_beam_search":
        return {}
    kind = index % 4
    phrase = PHRASES[index % len(PHRASES)] if kind != 3 else ""
    prefix = ("je", "le", "nous")[index % 3] if kind == 1 else ""
    return {
        "prefix": np.array([prefix], dtype=object),
        "constraints": np.array([phrase], dtype=object),
    }


@pytest.mark.slow
@pytest.mark.parametrize("signature", ("serving_default", "beam_search", "steered_beam_search"))
def test_a_sentence_translates_alike_alone_and_through_server_side_batching(
    shortlisted, batching_server, signature
):
    """64 concurrent one-sentence requests over gRPC to our server with batching on: the
    server merges them into shared Session runs, where each row keeps to its own shortlist
    candidates (k=1 + 1 frequent: batch-mates would widen the search space), and each
    request gets what its sentence gets alone on TF Serving's Session path. For
    `steered_beam_search` each request carries its own constraint (some a prefix too,
    some neither), so constrained, prefixed and plain rows share a batch."""
    import threading

    from keras_attention.export import SavedModelSession
    from keras_attention_client import TranslationClient

    texts = ((SMALL_BATCH + SENTENCES) * 8)[:64]
    requests = [
        {"text": np.array([text], dtype=object), **steering_of(signature, index)}
        for index, text in enumerate(texts)
    ]
    alone = {}
    with SavedModelSession(shortlisted[2]) as session:
        for inputs in requests:
            key = str(sorted(inputs.items()))
            alone[key] = alone.get(key) or session.run(signature, inputs)
    batching_server.batcher.batch_sizes.clear()
    answers, failures, start = [None] * len(texts), [], threading.Barrier(len(texts))

    def request(index: int) -> None:
        try:
            with TranslationClient(batching_server.address, model_name="shortlisted") as client:
                start.wait(60)
                answers[index] = client.predict(requests[index], signature_name=signature)
        except Exception as error:  # noqa: BLE001 - reported below
            failures.append((index, error))

    threads = [threading.Thread(target=request, args=(i,)) for i in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not failures, failures[:3]
    sizes = list(batching_server.batcher.batch_sizes)
    assert sum(sizes) == len(texts) and max(sizes) > 1, sizes  # requests were merged
    for text, inputs, got in zip(texts, requests, answers, strict=True):
        want = alone[str(sorted(inputs.items()))]
        phrase, prefix = (inputs.get(k, [""])[0] for k in ("constraints", "prefix"))
        assert not phrase or phrase in [t.decode() for t in got["tokens"][0]], (text, phrase)
        assert got["translation"][0].decode().startswith(prefix), (text, prefix)
        length = int(want["length"][0])
        assert got["translation"].tolist() == want["translation"].tolist(), text
        assert got["length"].tolist() == want["length"].tolist(), text
        assert got["tokens"][0, :length].tolist() == want["tokens"][0, :length].tolist(), text
        np.testing.assert_allclose(got["score"], want["score"], atol=1e-5)
        np.testing.assert_allclose(got["confidence"], want["confidence"], atol=1e-5)


@pytest.mark.slow
def test_the_int8_columns_are_gathered_before_dequantizing(shortlisted):
    """A gather reads int8 values (the shortlist's columns of the stored kernel)."""
    from keras_attention.export.saved_model_proto import read_saved_model

    saved_model = read_saved_model(shortlisted[2])
    nodes = [
        node
        for graph in saved_model.meta_graphs
        for function in graph.graph_def.library.function
        for node in function.node_def
    ]
    int8_gathers = [
        node
        for node in nodes
        if node.op in ("ResourceGather", "GatherV2")
        and tf.dtypes.as_dtype(
            node.attr["dtype" if node.op == "ResourceGather" else "Tparams"].type
        )
        == tf.int8
    ]
    assert int8_gathers


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--shortlist", "0"], "argument --shortlist: must be an integer >= 1. Received: 0"),
        (["--shortlist", "-2"], "argument --shortlist: must be an integer >= 1. Received: -2"),
        (["--shortlist-frequent", "-1"], "must be an integer >= 0. Received: -1"),
    ],
)
def test_bad_shortlist_flags_are_usage_errors(flags, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "run", "--export-dir", "models", *flags])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_a_shortlist_larger_than_the_vocabulary_is_refused(run_dir, translator, tmp_path, capsys):
    size = translator.target_vectorizer.vocabulary_size
    argv = ["export", str(run_dir), "--export-dir", str(tmp_path), "--shortlist", str(size + 1)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert (
        f"error: The shortlist's `k` must be at most the target vocabulary size, {size}. "
        f"Received: k={size + 1}"
    ) in err
    assert not any(tmp_path.iterdir())


def test_a_shortlist_with_jit_compile_is_refused(run_dir, tmp_path, capsys):
    argv = ["export", str(run_dir), "--export-dir", str(tmp_path), "--shortlist", "2"]
    assert main([*argv, "--jit-compile"]) == 2
    assert "cannot be combined with `jit_compile`" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_the_exporter_takes_a_shortlist_object(translator):
    from keras_attention.export import TranslatorExporter

    with pytest.raises(TypeError, match=r"`shortlist` must be a VocabularyShortlist.*=3"):
        TranslatorExporter(translator, shortlist=3)


def test_the_exporter_takes_a_shortlisted_translators_shortlist(translator):
    """Its table is the export's, and the columns are read from the export's weights."""
    from keras_attention.export import TranslatorExporter
    from keras_attention.shortlist.vocabulary_shortlist import VocabularyShortlist

    size = translator.target_vectorizer.vocabulary_size
    table = np.ones((translator.source_vectorizer.vocabulary_size, 2), np.int32) * 5
    shortlist = VocabularyShortlist(table, [], size)
    exporter = TranslatorExporter(translator.with_shortlist(shortlist), weights="int8")
    assert exporter.shortlist is shortlist
    assert exporter.translator.shortlist is shortlist
    assert exporter.translator.gather_weights == exporter.weight_storage.gather


@pytest.mark.parametrize("weights", ["float32", "bfloat16", "int8"])
def test_stored_weights_are_gathered_with_or_without_a_shortlist(translator, weights):
    """The embedding lookups read the rows they take from the stored form; weights kept
    as trained are read as they are."""
    from keras_attention.export import TranslatorExporter

    exporter = TranslatorExporter(translator, weights=weights, shortlist=None)
    assert exporter.translator.shortlist is None
    expected = None if weights == "float32" else exporter.weight_storage.gather
    assert exporter.translator.gather_weights == expected


@pytest.mark.parametrize(
    "size, jit_compile, compute_dtype, expected",
    [(9_999, False, "bfloat16", None), (10_000, False, "bfloat16", 100),
     (16_000, False, "bfloat16", 100), (16_000, True, "bfloat16", None),
     (7_999, False, "float32", None), (8_000, False, "float32", 100),
     (8_000, False, "float16", None), (8_000, True, "float32", None)],
)  # fmt: skip
def test_auto_gives_a_shortlist_to_large_target_vocabularies_only(
    size, jit_compile, compute_dtype, expected
):
    from keras_attention.shortlist.defaults import auto_shortlist_size

    assert auto_shortlist_size(size, jit_compile, compute_dtype=compute_dtype) == expected


@pytest.mark.parametrize(
    "flags, expected",
    [([], "auto"), (["--shortlist", "auto"], "auto"), (["--shortlist", "None"], None),
     (["--shortlist", "7"], 7)],
)  # fmt: skip
def test_the_shortlist_flag_takes_auto_none_or_a_size(flags, expected):
    import argparse

    from keras_attention.export.cli import add_export_arguments

    parser = argparse.ArgumentParser()
    add_export_arguments(parser)
    args = parser.parse_args(["run", "--export-dir", "models", *flags])
    assert args.shortlist == expected


def test_a_shortlist_size_that_is_no_number_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "run", "--export-dir", "models", "--shortlist", "many"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --shortlist: must be 'auto', 'none' or an integer >= 1. Received: many" in err


def test_auto_follows_the_target_vocabulary_size(run_dir, translator, monkeypatch):
    """The tiny run's vocabulary is below the threshold: no shortlist; with the
    threshold at its size, a shortlist of `AUTO_K` built from its training split."""
    from keras_attention.export import TranslatorExporter
    from keras_attention.shortlist import defaults

    size = translator.target_vectorizer.vocabulary_size
    assert size < defaults.AUTO_MIN_TARGET_VOCABULARY_FLOAT32
    assert TranslatorExporter.from_run(run_dir, shortlist="auto").shortlist is None
    monkeypatch.setattr(defaults, "AUTO_MIN_TARGET_VOCABULARY_FLOAT32", size)
    monkeypatch.setattr(defaults, "AUTO_K", 2)
    exporter = TranslatorExporter.from_run(run_dir, shortlist="auto")
    assert exporter.shortlist.describe()["k"] == 2
    jit = TranslatorExporter.from_run(run_dir, shortlist="auto", jit_compile=True)
    assert jit.shortlist is None
