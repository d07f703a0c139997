"""`--weights`: int8 quantization against NumPy, bfloat16 and int8 exports against float32's."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from helpers.export_testing import SENTENCES

from keras_attention.export.weight_storage import (
    WeightStorage,
    dequantize,
    quantize_per_channel,
    resolve_weights,
)

STORED = ("bfloat16", "int8")


def numpy_quantize(weights: np.ndarray, axis: int):
    """The reference: symmetric per-channel int8, one scale per index along `axis`."""
    reduce = tuple(a for a in range(weights.ndim) if a != axis % weights.ndim)
    scale = np.max(np.abs(weights), axis=reduce, keepdims=True) / 127.0
    q = np.round(weights / np.where(scale > 0, scale, 1.0))
    return np.clip(q, -127, 127).astype(np.int8), scale.astype(np.float32)


@pytest.mark.parametrize("axis", [0, -1, 1])
def test_quantize_per_channel_matches_numpy_and_its_error_bound(axis):
    rng = np.random.default_rng(0)
    weights = rng.normal(size=(37, 29)).astype(np.float32) * rng.uniform(0.01, 3, size=(1, 29))
    weights[:, 3] = 0.0  # a column of zeros
    weights[5, :] = 0.0  # a row of zeros
    q, scale = quantize_per_channel(weights, axis)
    expected_q, expected_scale = numpy_quantize(weights, axis)
    assert q.dtype == tf.int8 and scale.dtype == tf.float32
    assert scale.shape == expected_scale.shape
    np.testing.assert_allclose(scale.numpy(), expected_scale, rtol=1e-6)
    # Division may round a value at exactly .5 either way: allow one step there.
    assert np.max(np.abs(q.numpy().astype(int) - expected_q)) <= 1
    assert np.mean(q.numpy() == expected_q) > 0.999
    assert np.max(np.abs(q.numpy())) == 127  # every nonzero channel reaches the end
    restored = dequantize(q, scale).numpy()
    # Each weight within half a step of its channel's scale, and exact for zeros.
    assert np.all(np.abs(restored - weights) <= expected_scale / 2 * (1 + 1e-5) + 1e-12)
    assert np.all(restored[:, 3] == 0.0) and np.all(restored[5, :] == 0.0)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"axis=2"):
        quantize_per_channel(np.ones((2, 3)), 2)
    choices = r"one of \('auto', 'float32', 'bfloat16', 'int8'\).*'int4'"
    with pytest.raises(ValueError, match=choices):
        WeightStorage(object(), "int4")
    with pytest.raises(ValueError, match=choices):
        resolve_weights("int4", "bfloat16")


@pytest.mark.parametrize(
    "weights, compute_dtype, expected",
    [
        ("auto", "bfloat16", "bfloat16"),
        ("auto", "float32", "float32"),
        ("auto", "float16", "float32"),
        ("int8", "bfloat16", "int8"),
        ("float32", "bfloat16", "float32"),
        ("bfloat16", "float32", "bfloat16"),
    ],
)
def test_auto_stores_the_weights_in_the_dtype_the_model_computes_in(
    weights, compute_dtype, expected
):
    assert resolve_weights(weights, compute_dtype) == expected


# ------------------------------------------------------- bfloat16 weights read in bfloat16


@pytest.fixture(scope="module")
def bfloat16_translator(translator):
    from keras_attention.export.export_precision import with_precision

    return with_precision(translator, "mixed_bfloat16")


@pytest.mark.parametrize("precision", ["float32", "mixed_bfloat16"])
def test_auto_replaces_the_variables_only_for_a_bfloat16_model(
    translator, bfloat16_translator, precision
):
    model = (translator if precision == "float32" else bfloat16_translator).model
    assert model.dtype_policy.name == precision
    description = WeightStorage(model, "auto").describe()
    floats = [v for v in model.variables if tf.as_dtype(v.dtype).is_floating]
    if precision == "float32":
        expected = {"weights": "float32", "value_dtype": "float32", "replaced": 0}
    else:
        expected = {"weights": "bfloat16", "value_dtype": "bfloat16", "replaced": len(floats)}
    assert {key: description[key] for key in expected} == expected
    assert description["requested"] == "auto"


def translate_fn(translator, storage=None, **strategy_options):
    strategy = translator.strategy(**strategy_options)
    fn = translator.translate if storage is None else storage.wrap(translator.translate)
    return tf.function(
        lambda texts: fn(texts, strategy),
        input_signature=[tf.TensorSpec([None], tf.string)],
        autograph=False,
    )


@pytest.mark.parametrize("shortlisted", [False, True], ids=["vocabulary", "shortlist"])
@pytest.mark.parametrize("beam_width", [1, 3])
def test_bfloat16_weights_read_in_bfloat16_translate_exactly_as_float32_weights(
    bfloat16_translator, run_dir, shortlisted, beam_width
):
    """A model computing in bfloat16 casts its float32 weights to bfloat16, the values
    the bfloat16 storage holds: handed over as they are, every output is the same to
    the bit, and no stored value is cast."""
    from keras_attention.shortlist.vocabulary_shortlist import VocabularyShortlist

    translator = bfloat16_translator
    storage = WeightStorage(translator.model, "auto")
    assert (storage.weights, storage.value_dtypes) == ("bfloat16", ["bfloat16"])
    assert storage.describe()["value_dtype"] == "bfloat16"
    # As the exporter builds it: the stored weights' slices read through `gather`.
    shortlist = VocabularyShortlist.from_run(run_dir, k=2, frequent=2) if shortlisted else None
    reference = translator.with_shortlist(shortlist)
    stored = translator.with_shortlist(shortlist, gather_weights=storage.gather)
    texts = tf.constant(SENTENCES)
    expected = translate_fn(reference, beam_width=beam_width)(texts)
    function = translate_fn(stored, storage, beam_width=beam_width)
    outputs = function(texts)
    for key, value in expected.items():
        np.testing.assert_array_equal(outputs[key].numpy(), value.numpy(), err_msg=key)
    assert {v.dtype for v in storage.variables} == {tf.bfloat16}
    graph = function.get_concrete_function().graph
    reads = [op for op in graph.get_operations() if op.type == "ReadVariableOp"]
    cast_reads = [
        consumer.name
        for op in reads
        if op.outputs[0].dtype == tf.bfloat16
        for consumer in op.outputs[0].consumers()
        if consumer.type == "Cast"
    ]
    assert not cast_reads, "stored bfloat16 values are cast"


@pytest.mark.parametrize("weights", STORED)
def test_stored_variables_are_never_read_sparsely(bfloat16_translator, run_dir, weights):
    """A `ResourceGather` puts a variable in copy-on-read mode, after which every read
    of it copies it whole: the shortlist's columns are gathered from the values read."""
    from keras_attention.shortlist.vocabulary_shortlist import VocabularyShortlist

    storage = WeightStorage(bfloat16_translator.model, weights)
    shortlist = VocabularyShortlist.from_run(run_dir, k=2, frequent=2)
    translator = bfloat16_translator.with_shortlist(shortlist, gather_weights=storage.gather)
    graph_def = translate_fn(translator, storage).get_concrete_function().graph.as_graph_def()
    nodes = [*graph_def.node, *(n for f in graph_def.library.function for n in f.node_def)]
    stored_dtypes = {v.dtype for v in storage.variables}
    sparse_reads = [
        node.name
        for node in nodes
        if node.op == "ResourceGather" and tf.as_dtype(node.attr["dtype"].type) in stored_dtypes
    ]
    assert not sparse_reads
    # `gather` itself: the rows of the values read, as the value the model is handed.
    embeddings = bfloat16_translator.model.decoder.embedding.embeddings
    ids = tf.constant([3, 0, 5])
    gather = tf.function(lambda ids: storage.gather(embeddings, ids, 0))
    function_nodes = gather.get_concrete_function(ids).graph.as_graph_def().node
    assert "ResourceGather" not in {node.op for node in function_nodes}
    expected = storage.wrap(lambda: tf.gather(embeddings.value, ids))()  # as the model reads it
    np.testing.assert_array_equal(gather(ids).numpy(), expected.numpy())


def _dequantized_matrices(graph, storage, variables) -> list:
    """The ops of `graph` that compute the whole value of each of `variables` from
    its stored form (`WeightStorage.wrap`'s `Mul` of int8 values and scales, or
    `Cast` of bfloat16 values)."""
    placeholders = {id(outer): inner for outer, inner in graph.captures}
    ops = []
    for variable in variables:
        stored = storage._by_variable[id(variable)].stored[0]  # noqa: SLF001
        reads = placeholders[id(stored.handle)].consumers()
        assert [op.type for op in reads] == ["ReadVariableOp"], "read once per call"
        casts = [c for c in reads[0].outputs[0].consumers() if c.type == "Cast"]
        whole = [c for c in casts if c.outputs[0].shape == tuple(variable.shape)]
        if storage.weights == "int8":  # q * s: the whole matrix times its scales
            whole = [m for c in whole for m in c.outputs[0].consumers() if m.type == "Mul"]
        ops.extend(op for op in whole if op.outputs[0].shape == tuple(variable.shape))
    return ops


@pytest.mark.parametrize("shortlisted", [False, True], ids=["vocabulary", "shortlist"])
@pytest.mark.parametrize("weights", STORED)
def test_stored_embeddings_are_converted_only_in_the_rows_a_request_uses(
    translator, run_dir, weights, shortlisted
):
    """With `gather_weights=storage.gather`, the source and target lookups convert
    only the rows they take (and a shortlist only its columns): nothing consumes an
    embedding matrix converted whole, so it is not computed; the translations are
    those of the stored weights converted whole, to the bit."""
    from keras_attention.shortlist.vocabulary_shortlist import VocabularyShortlist

    storage = WeightStorage(translator.model, weights)
    shortlist = VocabularyShortlist.from_run(run_dir, k=2, frequent=2) if shortlisted else None
    reference = translator.with_shortlist(shortlist)
    routed = translator.with_shortlist(shortlist, gather_weights=storage.gather)
    texts = tf.constant(SENTENCES)
    for options in ({}, {"beam_width": 3}):
        expected = translate_fn(reference, storage, **options)(texts)
        function = translate_fn(routed, storage, **options)
        outputs = function(texts)
        for key, value in expected.items():
            np.testing.assert_array_equal(outputs[key].numpy(), value.numpy(), err_msg=key)

        model = translator.model
        source, target = model.encoder.embedding.embeddings, model.decoder.embedding.embeddings
        # Tied and not shortlisted, the logits need the whole target matrix.
        whole_needed = model.decoder.tie_embeddings and not shortlisted
        embeddings = [source] if whole_needed else [source, target]
        graph = function.get_concrete_function().graph
        computed = _dequantized_matrices(graph, storage, embeddings)
        assert len(computed) == len(embeddings), "the whole conversions were not found"
        assert all(not op.outputs[0].consumers() for op in computed)
        reference_graph = translate_fn(reference, storage, **options).get_concrete_function().graph
        used = _dequantized_matrices(reference_graph, storage, embeddings)
        assert all(op.outputs[0].consumers() for op in used)  # the check can fail


def test_export_cli_refuses_a_bad_weights_value(run_dir, tmp_path, capsys):
    from keras_attention.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["export", str(run_dir), "--export-dir", str(tmp_path), "--weights", "int4"])
    assert exit_info.value.code == 2
    assert "argument --weights: invalid choice: 'int4'" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def export_each(run_dir, base, precision, storages):
    """`{weights: ExportedVersion}`: the tiny run exported under `precision` with each
    of `storages` (no check)."""
    from keras_attention.export import TranslatorExporter

    return {
        weights: TranslatorExporter.from_run(
            run_dir, beam_width=3, precision=precision, weights=weights
        ).export(base / weights)
        for weights in storages
    }


# Three exports of the tiny run take about 100 s on 2 cores: the tests that use them are slow.
@pytest.fixture(scope="module")
def exports(run_dir, tmp_path_factory):
    """The tiny run exported with each storage (float32 compute)."""
    return export_each(run_dir, tmp_path_factory.mktemp("weights"), "float32", ("float32", *STORED))


def checkpoint_tensors(version_dir):
    reader = tf.train.load_checkpoint(str(version_dir / "variables" / "variables"))
    return {
        name: reader.get_tensor(name)
        for name in reader.get_variable_to_shape_map()
        if name != "_CHECKPOINTABLE_OBJECT_GRAPH"
    }


@pytest.mark.slow
@pytest.mark.parametrize("weights", ("float32", *STORED))
def test_the_checkpoint_holds_the_stored_form_once(exports, translator, weights):
    manifest = exports[weights].manifest
    assert (manifest.weights["weights"], manifest.precision) == (weights, "float32")
    tensors = checkpoint_tensors(exports[weights].path)
    weights_bytes = sum(t.nbytes for t in tensors.values() if t.dtype != np.int64)
    assert manifest.weights["bytes"] == weights_bytes  # the seed generators' states aside
    dtypes = [t.dtype for t in tensors.values()]
    # Kernels (input, recurrent, attention: query_kernel, key_kernel) and embeddings.
    matrices = [v for v in translator.model.variables if len(v.shape) == 2 and v.name != "bias"]
    if weights == "float32":
        assert manifest.weights["replaced"] == 0
        float_count = sum(1 for v in translator.model.variables if "float" in str(v.dtype))
        assert dtypes.count(np.float32) == float_count  # each variable once
    elif weights == "bfloat16":
        assert np.float32 not in dtypes and dtypes.count(tf.bfloat16.as_numpy_dtype) > 0
    else:
        assert dtypes.count(np.int8) == manifest.weights["replaced"] == len(matrices)


@pytest.mark.slow
def test_stored_exports_are_smaller(exports):
    sizes = {
        weights: sum(f.stat().st_size for f in (exported.path / "variables").iterdir())
        for weights, exported in exports.items()
    }
    # The tiny model's biases and scales weigh more than a real model's (the
    # default model's ratios: docs/benchmarks.md).
    assert sizes["bfloat16"] < 0.6 * sizes["float32"]
    assert sizes["int8"] < 0.5 * sizes["float32"]


@pytest.mark.slow
@pytest.mark.parametrize("weights", STORED)
@pytest.mark.parametrize("signature", ("serving_default", "beam_search"))
def test_stored_weights_translate_as_float32(exports, weights, signature):
    """Same tokens as the float32 export on the trained tiny model; scores within 0.05
    (of about -5) and attention weights within 0.05."""
    from keras_attention.export import SavedModelSession

    outputs = {}
    text = np.array([s.encode("utf-8") for s in SENTENCES], dtype=object)
    for name in ("float32", weights):
        # As TF Serving runs it: the Session path, the SignatureDef's defaults filled in.
        with SavedModelSession(exports[name].path) as session:
            outputs[name] = session.run(signature, {"text": text})
    reference, stored = outputs["float32"], outputs[weights]
    for key in ("translation", "tokens", "length", "source_tokens"):
        np.testing.assert_array_equal(stored[key], reference[key], err_msg=key)
    np.testing.assert_allclose(stored["score"], reference["score"], atol=0.05)
    np.testing.assert_allclose(stored["attention"], reference["attention"], atol=0.05)
    assert not np.array_equal(stored["score"], reference["score"]), "the weights were replaced"


@pytest.mark.slow
@pytest.mark.parametrize("weights", STORED)
def test_stored_exports_pass_check_export_native(exports, weights):
    from keras_attention.export.export_checker import ExportChecker

    report = ExportChecker(native=True).check(exports[weights].path)
    assert report.ok and report.native, report.errors
    assert report.ops["Cast"] == report.ops["Mul"] == "core"


@pytest.fixture(scope="module")
def bfloat16_exports(run_dir, tmp_path_factory):
    """The tiny run exported computing in bfloat16, with float32 and with `auto` weights."""
    base = tmp_path_factory.mktemp("bfloat16_weights")
    return export_each(run_dir, base, "mixed_bfloat16", ("float32", "auto"))


def casts_of_bfloat16_reads(version_dir) -> list[str]:
    """The `Cast` nodes of an export's functions that convert a bfloat16 variable read."""
    from keras_attention.export.saved_model_proto import read_saved_model

    saved_model = read_saved_model(version_dir)
    casts = []
    for graph in saved_model.meta_graphs:
        for function in graph.graph_def.library.function:
            nodes = {node.name: node for node in function.node_def}
            for node in function.node_def:
                source = nodes.get(node.input[0].split(":")[0]) if node.input else None
                if (
                    node.op == "Cast"
                    and source is not None
                    and source.op == "ReadVariableOp"
                    and tf.as_dtype(source.attr["dtype"].type) == tf.bfloat16
                ):
                    casts.append(f"{function.signature.name}/{node.name}")
    return casts


@pytest.mark.slow
def test_a_bfloat16_export_with_auto_weights_serves_as_with_float32_weights(
    bfloat16_exports, exports
):
    """On TF Serving's Session path: the same translations (scores and attention within
    bfloat16 rounding), from half the bytes, with no cast of a stored value, and the
    export passes `check-export --native`."""
    from keras_attention.export import SavedModelSession
    from keras_attention.export.export_checker import ExportChecker

    auto, float32 = bfloat16_exports["auto"], bfloat16_exports["float32"]
    assert auto.manifest.weights["weights"] == auto.manifest.weights["value_dtype"] == "bfloat16"
    assert auto.manifest.weights["bytes"] < 0.6 * float32.manifest.weights["bytes"]
    assert not casts_of_bfloat16_reads(auto.path)
    # Computed in float32, the same storage is cast back at every request.
    assert casts_of_bfloat16_reads(exports["bfloat16"].path)
    text = np.array([s.encode("utf-8") for s in SENTENCES], dtype=object)
    for signature in ("serving_default", "beam_search", "search"):
        outputs = {}
        for name, exported in bfloat16_exports.items():
            with SavedModelSession(exported.path) as session:
                outputs[name] = session.run(signature, {"text": text})
        reference, stored = outputs["float32"], outputs["auto"]
        for key in ("translation", "tokens", "length", "source_tokens"):
            np.testing.assert_array_equal(stored[key], reference[key], err_msg=key)
        # The same values in, but the Session's graph rewrites (a Cast before each
        # matmul in the float32-weight export) may order bfloat16 roundings otherwise.
        np.testing.assert_allclose(stored["score"], reference["score"], atol=1e-2)
        np.testing.assert_allclose(stored["attention"], reference["attention"], atol=2e-3)
    report = ExportChecker(native=True).check(auto.path)
    assert report.ok and report.native, report.errors
