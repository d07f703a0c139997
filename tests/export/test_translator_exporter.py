"""The exported signatures against in-process decoding, edge inputs, layout and versioning."""

from __future__ import annotations

import os
import shutil
import threading

import numpy as np
import pytest
import tensorflow as tf
from helpers.export_testing import SENTENCES

from keras_attention.export import ExportManifest, TranslatorExporter, read_warmup_requests
from keras_attention.runs.train_config import TrainConfig
from keras_attention_client.wire.contract import DECODING_INPUTS, STEERING_INPUTS

EXACT = ("translation", "tokens", "source_tokens", "length")
CLOSE = ("score", "attention")
SIGNATURES = ("serving_default", "beam_search")


def strategy_of(exporter, signature):
    signatures = exporter.signatures
    return (
        signatures.greedy_strategy if signature == "serving_default" else signatures.beam_strategy
    )


def eager_outputs(exporter, signature, texts):
    strategy = strategy_of(exporter, signature)
    outputs = exporter.translator.translate(tf.constant(texts, tf.string), strategy)
    return {key: value.numpy() for key, value in outputs.items()}


def assert_same_outputs(actual, expected, context=""):
    assert sorted(actual) == sorted(expected), context
    for key in EXACT:
        np.testing.assert_array_equal(actual[key], expected[key], err_msg=f"{context} {key}")
    for key in CLOSE:
        assert actual[key].shape == expected[key].shape, f"{context} {key}"
        np.testing.assert_allclose(
            actual[key], expected[key], rtol=1e-5, atol=1e-6, err_msg=f"{context} {key}"
        )
    assert actual["score"].dtype == np.float32 and actual["attention"].dtype == np.float32
    assert actual["length"].dtype == np.int32


def as_bytes(texts):
    return np.array([t if isinstance(t, bytes) else t.encode("utf-8") for t in texts], object)


def row(outputs, index):
    """One sentence's outputs without the batch padding."""
    length = int(outputs["length"][index])
    n_source = int(np.sum(outputs["source_tokens"][index] != b""))
    return {
        "translation": outputs["translation"][index],
        "score": outputs["score"][index],
        "length": length,
        "tokens": outputs["tokens"][index][:length],
        "source_tokens": outputs["source_tokens"][index][:n_source],
        "attention": outputs["attention"][index][:length, :n_source],
        "attention_padding": np.abs(outputs["attention"][index][length:]).sum()
        + np.abs(outputs["attention"][index][:, n_source:]).sum(),
    }


def assert_same_row(actual, expected, context):
    for key in ("translation", "length", "tokens", "source_tokens"):
        np.testing.assert_array_equal(actual[key], expected[key], err_msg=f"{context} {key}")
    np.testing.assert_allclose(actual["score"], expected["score"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(actual["attention"], expected["attention"], rtol=1e-5, atol=1e-6)
    assert actual["attention_padding"] == 0.0


# ---------------------------------------------------------------------------------- parity


@pytest.mark.parametrize("signature", SIGNATURES)
@pytest.mark.parametrize("batch_size", [1, 3, 8, 19])
def test_session_and_tf2_loading_match_in_process_decoding(
    exporter, serving_session, loaded, signature, batch_size
):
    texts = (SENTENCES * 3)[:batch_size]
    expected = eager_outputs(exporter, signature, texts)
    # Not Translator.compile: with AutoGraph on, BeamSearch once failed to trace
    # ("tf__normalize() takes 3 positional arguments but 4 were given").
    strategy = strategy_of(exporter, signature)
    compiled = tf.function(
        lambda text: exporter.translator.translate(text, strategy),
        input_signature=[tf.TensorSpec([None], tf.string)],
        autograph=False,
    )
    in_function = {k: v.numpy() for k, v in compiled(tf.constant(texts)).items()}
    assert_same_outputs(in_function, expected, "tf.function")
    session = serving_session.run(signature, {"text": as_bytes(texts)})
    assert_same_outputs(session, expected, f"Session {signature} batch {batch_size}")
    tf2 = tf2_signature(loaded, exporter, signature)(text=tf.constant(texts))
    assert_same_outputs({k: v.numpy() for k, v in tf2.items()}, expected, "tf.saved_model.load")
    assert session["translation"].shape == (batch_size,)


def tf2_signature(loaded, exporter, name: str):
    """`loaded.signatures[name]` with the decoding inputs' defaults (for `search`): unlike TF
    Serving's Predict, a signature of `tf.saved_model.load` needs every input."""
    function = loaded.signatures[name]
    specs = function.structured_input_signature[1]
    defaults = {
        "beam_width": 1,
        "n_best": 1,
        "length_penalty": 0.6,
        "max_output_length": 10,
    }

    def call(**inputs):
        extra = {k: tf.constant(v, specs[k].dtype) for k, v in defaults.items() if k in specs}
        return function(**inputs, **extra)

    return call


def test_the_tiny_model_translates_inputs_differently(serving_session):
    # Otherwise the parity tests could not tell rows apart.
    outputs = serving_session.run("serving_default", {"text": as_bytes(SENTENCES)})
    assert len(set(outputs["translation"].tolist())) >= 3
    assert np.all(outputs["length"] >= 1)


@pytest.mark.parametrize("signature", SIGNATURES)
def test_each_row_is_translated_as_if_alone(serving_session, signature):
    texts = ["", "I", "the dog", "you like the red cat and the big dog .", "   ", "a " * 40]
    batch = serving_session.run(signature, {"text": as_bytes(texts)})
    for index, text in enumerate(texts):
        alone = serving_session.run(signature, {"text": as_bytes([text])})
        assert_same_row(row(batch, index), row(alone, 0), f"{signature} row {index} {text!r}")


def test_beam_search_signature_uses_the_export_settings(exporter, serving_session):
    from keras_attention.decoding import BeamSearch

    strategy = BeamSearch(
        beam_width=3,
        length_penalty=0.6,
        max_steps=10,
        end_id=exporter.translator.target_vectorizer.end_id,
        pad_id=0,
    )
    texts = SENTENCES
    expected = exporter.translator.translate(tf.constant(texts), strategy)
    session = serving_session.run("beam_search", {"text": as_bytes(texts)})
    assert_same_outputs(session, {k: v.numpy() for k, v in expected.items()}, "beam")


# ----------------------------------------------------------------------------- edge inputs


def test_blank_inputs_translate_to_nothing(serving_session):
    texts = ["", " ", "\t \n  ", "\u00a0\u202f", "I see the cat ."]
    for signature in SIGNATURES:
        outputs = serving_session.run(signature, {"text": as_bytes(texts)})
        for index in range(4):
            assert outputs["translation"][index] == b""
            assert outputs["score"][index] == 0.0 and outputs["length"][index] == 0
            assert np.all(outputs["tokens"][index] == b"")
            assert np.all(outputs["source_tokens"][index] == b"")
            assert np.all(outputs["attention"][index] == 0.0)
        assert outputs["length"][4] >= 1


def test_invalid_utf8_is_replaced_not_fatal(serving_session):
    texts = [b"\xff\xfe\x80 cat", b"I see \xc3( the cat .", b"\x80"]
    outputs = serving_session.run("serving_default", {"text": as_bytes(texts)})
    replacement = "\ufffd".encode()
    assert outputs["source_tokens"][0][:4].tolist() == [replacement] * 3 + [b"cat"]
    assert outputs["source_tokens"][1][:3].tolist() == [b"I", b"see", replacement]
    assert outputs["source_tokens"][2][0] == replacement
    for key in ("translation", "tokens", "source_tokens"):
        for value in np.ravel(outputs[key]):
            value.decode("utf-8")  # every string output is valid UTF-8


def test_long_input_is_truncated_to_the_max_source_length(exporter, serving_session):
    words = [f"w{i}" if i % 3 else "cat" for i in range(500)]
    max_length = exporter.translator.source_vectorizer.max_length
    assert max_length == 12
    texts = [" ".join(words), " ".join(words[:max_length]), "I"]
    for signature in SIGNATURES:
        outputs = serving_session.run(signature, {"text": as_bytes(texts)})
        assert outputs["source_tokens"].shape[1] == max_length
        assert outputs["source_tokens"][0].tolist() == [w.encode() for w in words[:max_length]]
        # The long input is translated exactly as its first max_length tokens.
        assert_same_row(row(outputs, 0), row(outputs, 1), f"{signature} truncation")
        assert outputs["attention"].shape[2] == max_length


def test_huge_string_does_not_fail_the_batch(serving_session):
    texts = ["cat " * 50_000, "I see the cat ."]
    outputs = serving_session.run("serving_default", {"text": as_bytes(texts)})
    alone = serving_session.run("serving_default", {"text": as_bytes(texts[1:])})
    assert_same_row(row(outputs, 1), row(alone, 0), "next to a huge input")


def test_batch_of_256_with_very_different_lengths(exporter, serving_session):
    rng = np.random.default_rng(0)
    pool = SENTENCES + ["", " ", "cat " * 300, b"\xff bad".decode("latin-1"), "x"]
    texts = [pool[i] for i in rng.integers(0, len(pool), size=256)]
    for signature in SIGNATURES:
        outputs = serving_session.run(signature, {"text": as_bytes(texts)})
        assert outputs["translation"].shape == (256,)
        assert outputs["attention"].shape[:2] == outputs["tokens"].shape
        assert_same_outputs(outputs, eager_outputs(exporter, signature, texts), signature)


@pytest.mark.parametrize("signature", SIGNATURES)
def test_empty_batch_gives_empty_outputs(serving_session, loaded, signature):
    empty = np.array([], dtype=object)
    outputs = serving_session.run(signature, {"text": empty})
    tf2 = tf2_signature(loaded, None, signature)(text=tf.constant([], tf.string))
    expected_shapes = {
        "translation": (0,),
        "score": (0,),
        "length": (0,),
        "tokens": (0, 0),
        "source_tokens": (0, 0),
        "attention": (0, 0, 0),
        "token_scores": (0, 0),
        "confidence": (0,),
    }
    assert {k: v.shape for k, v in outputs.items()} == expected_shapes
    assert {k: tuple(v.shape) for k, v in tf2.items()} == expected_shapes


# ---------------------------------------------------------------------------------- layout


def test_signature_defs_take_text_and_return_dense_outputs(serving_session):
    string, float32, int32 = (
        tf.string.as_datatype_enum,
        tf.float32.as_datatype_enum,
        tf.int32.as_datatype_enum,
    )
    expected = {
        "translation": (string, 1),
        "score": (float32, 1),
        "length": (int32, 1),
        "tokens": (string, 2),
        "source_tokens": (string, 2),
        "attention": (float32, 3),
        "token_scores": (float32, 2),
        "confidence": (float32, 1),
    }
    signature_defs = serving_session.signature_defs
    assert set(signature_defs) == {
        "serving_default",
        "beam_search",
        "search",
        "sample",
        "steered_beam_search",
        "score_translation",
    }
    for name in (*SIGNATURES, "search", "sample", "steered_beam_search"):
        signature = signature_defs[name]
        steering = STEERING_INPUTS if name == "search" else {}
        if name == "steered_beam_search":  # [batch] strings, required: no defaults
            steering = {"prefix": None, "constraints": None}
            for alias in ("prefix", "constraints"):
                info = signature.inputs[alias]
                assert info.dtype == string and [d.size for d in info.tensor_shape.dim] == [-1]
            assert not signature.defaults
        assert sorted(signature.inputs) == sorted(
            ["text", *DECODING_INPUTS.get(name, {}), *steering]
        )
        for alias in STEERING_INPUTS if name == "search" else ():  # with defaults
            assert alias in signature.defaults  # prefix [batch], next_words a scalar
        if name in SIGNATURES:  # text only, as before decoding inputs: REST and batching
            assert not signature.defaults
        text = signature.inputs["text"]
        assert text.dtype == string and [d.size for d in text.tensor_shape.dim] == [-1]
        for alias, dtype in DECODING_INPUTS.get(name, {}).items():
            info = signature.inputs[alias]
            assert (
                tf.dtypes.as_dtype(info.dtype).name
                == {"DT_INT32": "int32", "DT_FLOAT": "float32"}[dtype]
            )
            assert info.tensor_shape.dim == [] and not info.tensor_shape.unknown_rank  # scalar
            assert alias in signature.defaults
        assert signature.method_name == "tensorflow/serving/predict"
        # n_best decides the rank of search's outputs: unknown in the SignatureDef.
        ranked = name != "search"
        actual = {
            alias: (
                info.dtype,
                len(info.tensor_shape.dim) if ranked else info.tensor_shape.unknown_rank,
            )
            for alias, info in signature.outputs.items()
        }
        want = {
            alias: (dtype, rank if ranked else alias != "source_tokens")
            for alias, (dtype, rank) in expected.items()
        }
        if name == "search":  # the next words: [batch, k] whatever n_best
            want.update({"next_words": (string, False), "next_word_scores": (float32, False)})
        assert actual == want
        for info in signature.outputs.values():
            assert info.name and not info.HasField("composite_tensor")  # dense


def test_version_directory_layout(exported):
    path = exported.path
    assert path.name == "1" and exported.version == 1
    for relative in (
        "saved_model.pb",
        "variables/variables.index",
        "assets.extra/tf_serving_warmup_requests",
        "assets.extra/export_manifest.json",
    ):
        assert (path / relative).is_file(), relative
    assert sorted(p.name for p in path.parent.iterdir()) == ["1"]
    umask = os.umask(0)
    os.umask(umask)
    assert (path.stat().st_mode & 0o777) == 0o777 & ~umask  # readable by a server's user


def test_manifest_describes_the_export(exporter, exported, run_dir):
    import dataclasses
    import hashlib

    import keras

    import keras_attention

    manifest = ExportManifest.load(exported.path)
    assert manifest == exported.manifest
    assert manifest.version == 1
    assert manifest.run_dir == str(run_dir.resolve())
    assert manifest.train_config == dataclasses.asdict(TrainConfig.load(run_dir))
    translator = exporter.translator
    assert manifest.vocabulary == {
        "tokenizer": "words",
        "source_size": len(translator.source_vectorizer.vocabulary),
        "target_size": len(translator.target_vectorizer.vocabulary),
        "replace_unknown": True,  # a word vocabulary: on by default
    }
    assert manifest.model_config["decoder_units"] == 32
    assert manifest.max_source_length == 12 and manifest.max_output_length == 10
    assert manifest.decoding["beam_search"]["beam_width"] == 3
    assert manifest.decoding["beam_search"]["length_penalty"] == 0.6
    assert manifest.decoding["serving_default"]["search"] == "greedy"
    assert manifest.signatures["serving_default"]["inputs"]["text"]["dtype"] == "DT_STRING"
    # The rank of search's outputs depends on n_best: unknown.
    assert manifest.signatures["search"]["outputs"]["attention"]["shape"] is None
    assert manifest.signatures["beam_search"]["outputs"]["attention"]["shape"] == [-1, -1, -1]
    assert manifest.signatures["sample"]["outputs"]["attention"]["shape"] == [-1, -1, -1]
    assert "inputs" not in manifest.decoding["beam_search"]
    assert manifest.decoding["search"]["max_beam_width"] == 16
    assert manifest.decoding["search"]["inputs"] == {
        "beam_width": {"default": 1, "range": "[1, 16]"},
        "n_best": {"default": 1, "range": "[1, beam_width]"},
        "length_penalty": {"default": 0.6, "range": ">= 0, finite"},
        "max_output_length": {"default": 10, "range": "[1, 10]"},
    }
    assert manifest.decoding["sample"]["inputs"]["seed"]["default"] == -1
    assert manifest.library_versions["keras_attention"] == keras_attention.__version__
    assert manifest.library_versions["tensorflow"] == tf.__version__
    assert manifest.library_versions["keras"] == keras.__version__
    assert manifest.jit_compile is False
    assert manifest.warmup_records == len(read_warmup_requests(exported.path))
    digest = hashlib.sha256((exported.path / "saved_model.pb").read_bytes()).hexdigest()
    assert manifest.saved_model_sha256 == digest


def test_warmup_covers_every_signature_with_test_split_sentences(exported, run_dir):
    logs = read_warmup_requests(exported.path)
    requests = [log.predict_log.request for log in logs]
    assert {r.model_spec.signature_name for r in requests} == {
        "serving_default",
        "beam_search",
        "search",
        "sample",
        "steered_beam_search",
        "score_translation",
    }
    # steered_beam_search: its required inputs, one per text, in every request; once with
    # prefixes and constraints (some rows each, none both).
    steered = [r for r in requests if r.model_spec.signature_name == "steered_beam_search"]
    assert len(steered) == 3
    for request in steered:
        assert set(request.inputs) == {"text", "prefix", "constraints"}
        rows = {alias: tf.make_ndarray(v).tolist() for alias, v in request.inputs.items()}
        assert len(rows["prefix"]) == len(rows["constraints"]) == len(rows["text"])
    assert any(rows["prefix"]) and any(rows["constraints"])
    assert not any(p and c for p, c in zip(rows["prefix"], rows["constraints"], strict=True))
    # search and sample once each with every decoding input given (search's steering but
    # constraints), and search once more with constraints.
    every = [r for r in requests if len(r.inputs) > 2 and r not in steered]
    assert sorted(r.model_spec.signature_name for r in every) == ["sample", "search", "search"]
    constrained = [r for r in every if "constraints" in r.inputs]
    assert len(constrained) == 1
    assert set(constrained[0].inputs) == {"text", *DECODING_INPUTS["search"], "constraints"}
    phrases = tf.make_ndarray(constrained[0].inputs["constraints"]).tolist()
    assert any(phrases) and b"" in phrases  # some sentences constrained, some not
    for request in every:
        name = request.model_spec.signature_name
        if request is constrained[0]:
            continue
        steering = set(STEERING_INPUTS) - {"constraints"} if name == "search" else set()
        assert set(request.inputs) == {"text", *DECODING_INPUTS[name], *steering}
    test_sources = [line.split("\t")[0] for line in (run_dir / "splits" / "test.tsv").open()]
    batches = [tf.make_ndarray(r.inputs["text"]).tolist() for r in requests]
    assert batches[0] == [test_sources[0].encode()]
    assert len(batches[1]) > 1 and batches[1][-1] == b""  # an empty input is warmed up too
    score = [r for r in requests if r.model_spec.signature_name == "score_translation"]
    assert all(set(r.inputs) == {"text", "translation"} for r in score)


# ------------------------------------------------------------------------------ versioning


@pytest.mark.slow
def test_export_is_atomic_increments_and_never_overwrites(exporter, exported, tmp_path):
    base = tmp_path / "models"
    shutil.copytree(exported.path, base / "3")
    (base / "notes").mkdir()  # not a version
    stop = threading.Event()
    seen = {"polls": 0, "staging": 0, "partial": []}

    def poll():
        # What a model server polling the base directory would see.
        while not stop.is_set():
            seen["polls"] += 1
            for entry in os.scandir(base):
                if entry.name.startswith(".tmp-export-"):
                    seen["staging"] += 1
                if not entry.name.isdigit():
                    continue
                for relative in (
                    "saved_model.pb",
                    "variables/variables.index",
                    "variables/variables.data-00000-of-00001",
                    "assets.extra/tf_serving_warmup_requests",
                    "assets.extra/export_manifest.json",
                ):
                    if not os.path.isfile(os.path.join(entry.path, relative)):
                        seen["partial"].append((entry.name, relative))

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        result = exporter.export(base)
    finally:
        stop.set()
        poller.join()
    assert result.version == 4 and result.path == base / "4"
    assert ExportManifest.load(result.path).version == 4
    assert seen["partial"] == []
    assert seen["staging"] > 0 and seen["polls"] > 10  # it did watch the export happen

    before = (base / "3" / "saved_model.pb").read_bytes()
    for version in (3, 4):
        with pytest.raises(FileExistsError, match=f"Version {version} already exists"):
            exporter.export(base, version=version)
    assert (base / "3" / "saved_model.pb").read_bytes() == before
    assert sorted(os.listdir(base)) == ["3", "4", "notes"]


def test_failed_export_leaves_no_trace(exporter, tmp_path, monkeypatch):
    base = tmp_path / "models"

    def fail(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(TranslatorExporter, "build_archive", fail)
    with pytest.raises(RuntimeError, match="disk full"):
        exporter.export(base)
    assert [p.name for p in base.iterdir()] == []


# ------------------------------------------------------------------------- model variants


@pytest.mark.parametrize(
    "variant",
    [
        {"attention": ("general", {}), "cell": "lstm"},
        {"attention": ("location", {"max_length": 6})},
        {"attention": "none"},
        {"attention": "bahdanau", "dtype": "mixed_bfloat16"},
    ],
    ids=["luong-lstm", "luong-location", "no-attention", "bahdanau-bf16"],
)
def test_every_model_variant_exports_and_matches(variant, tmp_path):
    # Untrained (random) weights: parity needs deterministic outputs, not good ones.
    from keras_attention.export import SavedModelSession
    from keras_attention.inference.translator import Translator
    from keras_attention.layers import LuongAttention
    from keras_attention.models.seq2seq import Seq2Seq
    from keras_attention.text import TextVectorizer

    reserved = ["", "[UNK]", "[START]", "[END]"]
    source = TextVectorizer(reserved + "I see the cat dog .".split(), max_length=6)
    target = TextVectorizer(reserved + "je vois le chat chien .".split(), max_length=6)
    if isinstance(variant["attention"], tuple):  # a Luong score and its arguments
        score, arguments = variant["attention"]
        variant = {**variant, "attention": LuongAttention(score=score, **arguments)}
    model = Seq2Seq(
        source.vocabulary_size,
        target.vocabulary_size,
        embedding_dim=8,
        encoder_units=8,
        decoder_units=16,
        **variant,
    )
    model.build()
    translator = Translator(model, source, target, max_output_length=7)
    exporter = TranslatorExporter(translator, beam_width=2, score_signature=False)
    exported = exporter.export(tmp_path)
    texts = ["I see the cat .", "", "dog " * 20, "the the cat"]
    bfloat16 = variant.get("dtype") == "mixed_bfloat16"
    with SavedModelSession(exported.path) as session:
        assert set(session.signature_defs) == {
            "serving_default",
            "beam_search",
            "search",
            "sample",
            "steered_beam_search",
        }
        for signature in SIGNATURES:
            outputs = session.run(signature, {"text": as_bytes(texts)})
            expected = eager_outputs(exporter, signature, texts)
            if bfloat16:
                # bfloat16 keeps ~3 significant digits and graph and eager kernels
                # round differently, so an untrained model's near-tied logits can
                # pick other tokens: the Session must agree with itself and with
                # the eager result's structure.
                again = session.run(signature, {"text": as_bytes(texts)})
                assert_same_outputs(outputs, again, signature)
                assert {k: v.dtype for k, v in outputs.items()} == {
                    k: v.dtype for k, v in expected.items()
                }
                assert outputs["attention"].shape[0] == expected["attention"].shape[0]
            else:
                assert_same_outputs(outputs, expected, signature)
            assert outputs["attention"].shape[2] == outputs["source_tokens"].shape[1] == 6
            # The exported weights are the float32 softmax, also for a bfloat16 model:
            # every row of a real output step sums to 1 (not bf16-rounded 1.002).
            assert outputs["attention"].dtype == np.float32
            if variant["attention"] != "none":
                for row, length in zip(outputs["attention"], outputs["length"], strict=True):
                    if length and row[0].sum() > 0:  # the empty input attends to nothing
                        np.testing.assert_allclose(row[:length].sum(-1), 1.0, atol=1e-5)


def test_a_model_with_an_unregistered_attention_layer_is_refused():
    """An export (or a saved model) of an unregistered attention class could not be
    reloaded: the exporter says so, naming the decorator to use."""
    import keras

    from keras_attention.inference.translator import Translator
    from keras_attention.layers import BaseAttention
    from keras_attention.models.seq2seq import Seq2Seq
    from keras_attention.text import TextVectorizer

    class PlainDot(BaseAttention):  # not registered
        def _score(self, query, keys):
            return keras.ops.matmul(query, keras.ops.swapaxes(keys, 1, 2))

    reserved = ["", "[UNK]", "[START]", "[END]"]
    source = TextVectorizer(reserved + ["a", "b"], max_length=4)
    target = TextVectorizer(reserved + ["c", "d"], max_length=4)
    model = Seq2Seq(6, 6, embedding_dim=4, encoder_units=4, decoder_units=8, attention=PlainDot())
    translator = Translator(model, source, target, max_output_length=3)
    with pytest.raises(ValueError, match="register_keras_serializable.*PlainDot"):
        TranslatorExporter(translator)
