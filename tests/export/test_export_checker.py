"""`ExportChecker` passes a good export and rejects broken and incompatible ones."""

from __future__ import annotations

import shutil

import pytest
from tensorflow.core.protobuf import saved_model_pb2

from keras_attention.export import AllowedOps, ExportChecker
from keras_attention.export.warmup import WARMUP_FILE


def edit_saved_model(version_dir, edit):
    """Parses saved_model.pb, applies `edit(saved_model)`, writes it back."""
    path = version_dir / "saved_model.pb"
    saved_model = saved_model_pb2.SavedModel.FromString(path.read_bytes())
    edit(saved_model)
    path.write_bytes(saved_model.SerializeToString())


@pytest.fixture(scope="module")
def good_report(exported):
    return ExportChecker().check(exported.path)


def test_good_export_passes(good_report, exported):
    assert good_report.ok, good_report.format()
    assert good_report.loaded
    assert set(good_report.signatures) == {
        "serving_default",
        "beam_search",
        "search",
        "sample",
        "steered_beam_search",
        "score_translation",
    }
    text = good_report.signatures["serving_default"]["inputs"]["text"]
    assert (text["dtype"], text["shape"]) == ("DT_STRING", [-1])
    assert good_report.ops["NormalizeUTF8"] == "tf-text"
    assert good_report.ops["While"] == "core"
    assert "NOT ALLOWED" not in good_report.ops.values()
    # 2 each for serving_default, beam_search and scoring, 4 for search (one constrained),
    # 3 for sample and for steered_beam_search (one with prefixes and constraints).
    assert len(good_report.warmup) == 16
    assert {entry["signature"] for entry in good_report.warmup} == set(good_report.signatures)
    assert good_report.warnings == []
    assert good_report.manifest["version"] == 1


def test_report_lists_signatures_ops_and_warmup(good_report):
    text = good_report.format()
    for expected in (
        "serving_default (tensorflow/serving/predict)",
        "text            DT_STRING  [-1]",
        "attention       DT_FLOAT   [-1, -1, -1]",
        "tf-text (1): NormalizeUTF8",
        "Warmup: 16 requests replayed",
        "Result: OK",
    ):
        assert expected in text


def test_ops_in_the_function_library_are_checked(export_copy):
    def edit(saved_model):
        graph_def = saved_model.meta_graphs[0].graph_def
        # The decoding loop lives in the function library, not the top graph.
        function = next(
            f
            for f in graph_def.library.function
            if "while_body" in f.signature.name and any(n.op == "TopKV2" for n in f.node_def)
        )
        node = next(n for n in function.node_def if n.op == "TopKV2")
        node.op = "Addons>GatherTree"

    edit_saved_model(export_copy, edit)
    report = ExportChecker().check(export_copy)
    assert not report.ok
    assert report.ops["Addons>GatherTree"] == "NOT ALLOWED"
    foreign = [e for e in report.errors if "Addons>GatherTree" in e]
    assert len(foreign) == 1 and "while_body" in foreign[0]
    assert "neither core TensorFlow nor tensorflow-text" in foreign[0]
    assert not report.loaded
    assert any("modified after export" in w for w in report.warnings)


def test_foreign_op_in_the_top_level_graph(export_copy):
    def edit(saved_model):
        saved_model.meta_graphs[0].graph_def.node[0].op = "MyCustomOp"

    edit_saved_model(export_copy, edit)
    report = ExportChecker().check(export_copy)
    assert any("'MyCustomOp'" in e and "graph:" in e for e in report.errors)


def test_allowed_ops_from_a_file(exported, tmp_path):
    # A server build without tensorflow-text: NormalizeUTF8 is refused.
    core = AllowedOps.from_registry().core
    path = tmp_path / "ops.txt"
    path.write_text("# core ops only\n" + "\n".join(sorted(core)) + "\n")
    report = ExportChecker(allowed_ops=AllowedOps.from_file(path)).check(exported.path)
    assert [op for op, origin in report.ops.items() if origin == "NOT ALLOWED"] == ["NormalizeUTF8"]
    assert not report.ok


def test_missing_directory(tmp_path):
    report = ExportChecker().check(tmp_path / "nope")
    assert report.errors == [f"Export directory {str(tmp_path / 'nope')!r} does not exist"]


def test_directory_without_saved_model(tmp_path, exported):
    (tmp_path / "7").mkdir()
    report = ExportChecker().check(tmp_path / "7")
    assert not report.ok and "No saved_model.pb" in report.errors[0]
    # Pointing at the base directory instead of a version gets a hint.
    report = ExportChecker().check(exported.path.parent)
    assert "pass BASE/<version>" in report.errors[0]


def test_garbage_saved_model(tmp_path):
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "saved_model.pb").write_bytes(b"\x00\xffthis is not a protobuf" * 10)
    report = ExportChecker().check(tmp_path / "1")
    assert not report.ok and "is not a SavedModel protobuf" in report.errors[0]


def test_missing_signature(export_copy):
    edit_saved_model(export_copy, lambda m: m.meta_graphs[0].signature_def.pop("beam_search"))
    report = ExportChecker().check(export_copy)
    assert any("Missing signature 'beam_search'" in e for e in report.errors)


def test_input_not_named_text(export_copy):
    def edit(saved_model):
        signature = saved_model.meta_graphs[0].signature_def["serving_default"]
        signature.inputs["inputs"].CopyFrom(signature.inputs["text"])
        del signature.inputs["text"]

    edit_saved_model(export_copy, edit)
    report = ExportChecker(replay_warmup=False).check(export_copy)
    assert any(
        "'serving_default' must take the input(s) ['text']. Received: ['inputs']" in e
        for e in report.errors
    )


def test_text_only_signature_with_a_decoding_input(export_copy):
    """serving_default must stay text-only (REST row requests, batching)."""

    def edit(saved_model):
        signatures = saved_model.meta_graphs[0].signature_def
        signatures["serving_default"].inputs["n_best"].CopyFrom(
            signatures["search"].inputs["n_best"]
        )

    edit_saved_model(export_copy, edit)
    report = ExportChecker(replay_warmup=False).check(export_copy)
    assert any(
        "'serving_default' must take the input(s) ['text']. Received: ['n_best', 'text']" in e
        for e in report.errors
    )


def test_decoding_input_without_a_default(export_copy):
    def edit(saved_model):
        del saved_model.meta_graphs[0].signature_def["search"].defaults["n_best"]

    edit_saved_model(export_copy, edit)
    report = ExportChecker(replay_warmup=False).check(export_copy)
    assert any(
        "Input 'n_best' of 'search' has no default in the SignatureDef" in e for e in report.errors
    )


def test_no_serve_tag(export_copy):
    def edit(saved_model):
        tags = saved_model.meta_graphs[0].meta_info_def.tags
        del tags[:]
        tags.append("train")

    edit_saved_model(export_copy, edit)
    report = ExportChecker().check(export_copy)
    assert report.errors == ["No MetaGraph with tag 'serve'. Received tag sets: [['train']]"]


def test_missing_variables_fail_the_load(export_copy):
    shutil.rmtree(export_copy / "variables")
    report = ExportChecker().check(export_copy)
    assert not report.loaded
    assert any("TF Serving's load path failed" in e for e in report.errors)


def test_missing_or_corrupt_warmup(export_copy):
    (export_copy / WARMUP_FILE).unlink()
    report = ExportChecker().check(export_copy)
    assert any("No assets.extra/tf_serving_warmup_requests" in e for e in report.errors)
    for garbage in (b"garbage", b"garbage" * 100):
        (export_copy / WARMUP_FILE).write_bytes(garbage)
        report = ExportChecker().check(export_copy)
        assert any("Unreadable warmup file" in e for e in report.errors), report.errors


def test_non_integer_version_directory_warns(exported, tmp_path):
    path = shutil.copytree(exported.path, tmp_path / "latest")
    report = ExportChecker(replay_warmup=False).check(path)
    assert report.ok
    assert any("is not an integer" in w for w in report.warnings)


def test_registry_splits_core_and_tf_text_ops():
    allowed = AllowedOps.from_registry()
    assert {"While", "MatMul", "StringSplitV2", "RegexReplace", "LookupTableFindV2"} <= allowed.core
    assert {"NormalizeUTF8", "WhitespaceTokenizeWithOffsets"} <= allowed.tf_text
    assert not allowed.core & allowed.tf_text
    assert "Addons>GatherTree" not in allowed.all
    assert allowed.origin("NormalizeUTF8") == "tf-text" and allowed.origin("Nope") is None
