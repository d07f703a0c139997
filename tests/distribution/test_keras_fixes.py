"""Keras 3 multi-worker bugs: still there (workaround needed) and worked around.

The probe runs in two real worker processes (`helpers.keras_multi_worker_probe`).
When a test here fails because plain Keras now works, upstream has fixed the bug:
delete its workaround in `keras_attention/distribution/keras_fixes.py`.
"""

import json
import sys

import pytest
from helpers.workers import Workers, free_ports, tf_config, worker_env

from keras_attention.distribution import keras_fixes


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("probe")
    hosts = [f"127.0.0.1:{p}" for p in free_ports(2)]
    with Workers(tmp) as group:
        for index in range(2):
            group.start(
                [
                    sys.executable,
                    "-m",
                    "helpers.keras_multi_worker_probe",
                    str(tmp / f"{index}.json"),
                ],
                worker_env(TF_CONFIG=tf_config(hosts, index)),
                f"probe{index}",
            )
        assert group.wait(300) == [0, 0], group.outputs()
    return [json.loads((tmp / f"{i}.json").read_text()) for i in range(2)]


@pytest.mark.slow
def test_multi_worker_fit_bugs_are_still_there_and_worked_around(probe):
    for result in probe:
        if not keras_fixes.multi_worker_fit_is_broken():
            assert result["unpatched"]["ok"], (
                f"Keras {result['keras']} is outside the broken range but multi-worker fit "
                f"still fails: {result['unpatched']}"
            )
            continue
        assert not result["unpatched"]["ok"], (
            f"Keras {result['keras']} fixed multi-worker fit (keras-team/keras#20585): "
            "delete fix_multi_worker_fit and MULTI_WORKER_FIT_BROKEN_THROUGH"
        )
        assert "PerReplica" in result["unpatched"]["error"]
        assert not result["build_fixed"]["ok"]
        assert "Invalid reduction dimension" in result["build_fixed"]["error"]
        assert result["fixed"] == {
            "ok": True,
            "predict_dtype": "float32",
            "predict_shape": [4, 2],
        }


@pytest.mark.slow
def test_gradients_are_clipped_after_the_cross_replica_sum(probe):
    for result in probe:
        assert result["clip_fixed"]["error_vs_global_clipping"] < 1e-6
        if keras_fixes.clip_before_all_reduce_is_broken():
            assert result["clip_unpatched"]["error_vs_global_clipping"] > 1e-4, (
                f"Keras {result['keras']} clips after summing replicas' gradients: delete "
                "all_reduce_before_clipping and CLIP_BEFORE_ALL_REDUCE_BROKEN_THROUGH"
            )


def test_workarounds_are_gated_on_the_keras_version(monkeypatch):
    monkeypatch.setattr(keras_fixes.keras, "__version__", "3.15.1")
    assert keras_fixes.multi_worker_fit_is_broken()
    assert keras_fixes.clip_before_all_reduce_is_broken()
    monkeypatch.setattr(keras_fixes.keras, "__version__", "3.16.0")
    assert not keras_fixes.multi_worker_fit_is_broken()
    assert not keras_fixes.clip_before_all_reduce_is_broken()
