"""`ExportChecker` on a SavedModel that is not a translator export (no manifest, no `text`).

The model is a hand-made `tf.Module`: `scaled = x * 3` and `total = sum(x)`, so the
expected outputs are worked out here.
"""

from __future__ import annotations

import numpy as np
import pytest

from keras_attention.export import ExportChecker


def _write_model(version_dir, signature_name: str = "serving_default", warmup=None):
    """A SavedModel of `x` (float32 [batch, 2]) -> `scaled` = 3x and `total` (scalar)."""
    import tensorflow as tf

    from keras_attention.export.warmup import predict_log, write_warmup_requests

    module = tf.Module()
    module.scale = tf.Variable(3.0)

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32, name="x")])
    def serve(x):
        return {"scaled": x * module.scale, "total": tf.reduce_sum(x)}

    tf.saved_model.save(module, str(version_dir), signatures={signature_name: serve})
    if warmup is not None:
        write_warmup_requests(version_dir, [predict_log(signature_name, {"x": warmup})])
    return version_dir


def test_model_of_its_own_runs_its_warmup_on_both_loaders(tmp_path):
    from keras_attention.saved_model_session import SavedModelSession

    x = np.array([[1.0, 2.0], [0.5, -1.0], [0.0, 4.0]], np.float32)
    path = _write_model(tmp_path / "1", signature_name="scale", warmup=x)
    report = ExportChecker(native=True).check(path)
    assert report.ok, report.format()
    assert report.contract == "generic" and report.loaded
    assert [(w["signature"], w["batch_size"]) for w in report.warmup] == [("scale", 3)]
    assert report.native["requests"] == 1 and report.native["max_float_difference"] == 0.0
    assert any("No 'serving_default' signature" in w for w in report.warnings)
    assert any("not against the translator contract" in w for w in report.warnings)
    text = report.format()
    assert "Checked as: a SavedModel of its own" in text
    assert "loaded, and 1 request (" in text and "Result: OK" in text
    with SavedModelSession(path) as session:  # what the warmup ran: 3x and the sum
        outputs = session.run("scale", {"x": x})
    np.testing.assert_array_equal(outputs["scaled"], 3 * x)
    assert outputs["total"] == pytest.approx(6.5)


def test_model_without_warmup_is_only_loaded_natively(tmp_path):
    report = ExportChecker(native=True).check(_write_model(tmp_path / "1"))
    assert report.ok, report.format()
    assert report.warmup == [] and report.native["requests"] == 0
    assert any("No assets.extra/tf_serving_warmup_requests" in w for w in report.warnings)
    assert "loaded; no warmup requests to run" in report.format()


def test_warmup_of_the_wrong_dtype_fails(tmp_path):
    warmup = np.array([[1, 2]], np.int32)  # the signature takes float32
    report = ExportChecker().check(_write_model(tmp_path / "1", warmup=warmup))
    assert not report.ok
    assert any(e.startswith("Warmup record 0 (serving_default) failed") for e in report.errors)
