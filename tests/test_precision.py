"""`--precision auto`: resolution from faked CPU flags, GPUs and probes; runs record it resolved."""

from __future__ import annotations

import dataclasses
import json

import pytest
from helpers.training_runs import printed_lines, train_argv

from keras_attention import precision
from keras_attention.precision import (
    PrecisionChoice,
    cpu_flags,
    detect_precision,
    resolve_precision,
)
from keras_attention.runs.train_config import TrainConfig
from keras_attention.runs.training_run import resolve_run_precision

X86_CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz
flags\t\t: fpu vme sse2 avx2 avx512f {extra}
bugs\t\t: spectre_v1

processor\t: 1
flags\t\t: fpu
"""

ARM_CPUINFO = """processor\t: 0
BogoMIPS\t: 2100.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics {extra}
CPU implementer\t: 0x41
"""


def no_probe():
    raise AssertionError("the probe must not run when the CPU flags are known")


@pytest.mark.parametrize(
    "text, extra, expected",
    [
        (X86_CPUINFO, "avx512_bf16 avx512_vnni", "mixed_bfloat16"),  # AVX512_BF16
        (X86_CPUINFO, "amx_bf16 amx_tile amx_int8", "mixed_bfloat16"),  # AMX
        (X86_CPUINFO, "avx512_vnni", "float32"),  # AVX-512 without bf16
        (ARM_CPUINFO, "bf16 i8mm sve", "mixed_bfloat16"),  # Arm BF16 (e.g. Graviton3)
        (ARM_CPUINFO, "sve", "float32"),
    ],
)
def test_auto_follows_the_cpu_flags(tmp_path, text, extra, expected):
    path = tmp_path / "cpuinfo"
    path.write_text(text.format(extra=extra))
    flags = cpu_flags(path)
    assert set(extra.split()) <= flags
    choice = detect_precision(path, gpus=[], probe=no_probe)
    assert (choice.policy, choice.requested) == (expected, "auto")
    assert choice.describe().startswith(f"{expected} (auto: the CPU has")


def test_cpu_flags_reads_the_first_flags_line_only(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(X86_CPUINFO.format(extra="avx512_bf16"))
    assert cpu_flags(path) == {"fpu", "vme", "sse2", "avx2", "avx512f", "avx512_bf16"}
    assert cpu_flags(tmp_path / "missing") is None
    (tmp_path / "empty").write_text("processor : 0\n")
    assert cpu_flags(tmp_path / "empty") is None


@pytest.mark.parametrize(
    "ratio, expected", [(4.4, "mixed_bfloat16"), (1.25, "mixed_bfloat16"), (0.92, "float32")]
)
def test_without_cpu_flags_a_probe_decides(tmp_path, ratio, expected):
    calls = []

    def probe():
        calls.append(1)
        return ratio

    choice = detect_precision(tmp_path / "no-cpuinfo", gpus=[], probe=probe)
    assert calls == [1]
    assert choice.policy == expected
    assert f"{ratio:.2f}x float32" in choice.reason


def test_the_probe_threshold_is_a_margin_over_parity(tmp_path):
    equal = detect_precision(tmp_path / "no-cpuinfo", gpus=[], probe=lambda: 1.0)
    assert equal.policy == "float32"
    assert precision.PROBE_MARGIN > 1.0


@pytest.mark.parametrize(
    "gpus, expected",
    [
        ([(8, 0)], "mixed_bfloat16"),  # Ampere
        ([(9, 0), (9, 0)], "mixed_bfloat16"),
        ([None], "mixed_bfloat16"),  # capability not reported
        ([(7, 0)], "float32"),  # Volta: no bfloat16 units
        ([(8, 6), (7, 5)], "float32"),  # the slowest GPU decides
    ],
)
def test_a_gpu_decides_before_the_cpu(tmp_path, gpus, expected):
    path = tmp_path / "cpuinfo"
    path.write_text(X86_CPUINFO.format(extra="avx512_bf16"))
    choice = detect_precision(path, gpus=gpus, probe=no_probe)
    assert choice.policy == expected


def test_the_probe_really_times_both_dtypes():
    ratio = precision.matmul_probe(size=64, seconds=0.05)
    assert 0.01 < ratio < 100


def test_an_explicit_precision_wins_and_a_bad_one_names_the_choices():
    for policy in precision.POLICIES:
        assert resolve_precision(policy) == PrecisionChoice(policy, policy, "given")
        assert resolve_precision(policy).describe() == policy
    with pytest.raises(ValueError, match=r"one of \('auto', 'float32'.*precision='bf16'"):
        resolve_precision("bf16")
    with pytest.raises(ValueError, match="precision='bf16'"):
        TrainConfig(precision="bf16")


def test_auto_is_the_default_and_model_arguments_get_a_policy(monkeypatch):
    faked = PrecisionChoice("mixed_bfloat16", "auto", "faked")
    monkeypatch.setattr(precision, "_detected", lambda: faked)
    config = TrainConfig()
    assert config.precision == "auto"
    arguments = config.model_arguments()
    assert arguments["dtype"] == "mixed_bfloat16"
    assert arguments["attention"]["config"]["dtype"] == "mixed_bfloat16"


def test_run_precision_is_detected_for_a_new_run_and_saved_resolved(tmp_path, monkeypatch):
    monkeypatch.setattr(precision, "_detected", lambda: PrecisionChoice("float32", "auto", "x"))
    config = TrainConfig(out=str(tmp_path / "run"))
    choice = resolve_run_precision(config, saved=None)
    config = dataclasses.replace(config, precision=choice.policy)  # as `TrainingRun` does
    assert (choice.policy, config.precision) == ("float32", "float32")
    config.save(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["precision"] == "float32"


def test_auto_takes_a_resumed_runs_saved_precision(tmp_path, monkeypatch):
    monkeypatch.setattr(precision, "_detected", lambda: PrecisionChoice("float32", "auto", "x"))
    TrainConfig(out=str(tmp_path), precision="mixed_bfloat16").save(tmp_path)
    config = TrainConfig(out=str(tmp_path))
    saved = TrainConfig.load(tmp_path)
    choice = resolve_run_precision(config, saved)
    assert choice.policy == "mixed_bfloat16"
    assert "saved precision" in choice.describe()
    # An explicit choice still wins over the saved one (the run then reports the difference).
    explicit = TrainConfig(out=str(tmp_path), precision="float32")
    assert resolve_run_precision(explicit, saved).reason == "given"
    assert resolve_run_precision(explicit, saved).policy == "float32"


def test_old_config_files_with_an_explicit_precision_keep_working(tmp_path):
    values = dataclasses.asdict(TrainConfig(precision="mixed_bfloat16"))
    (tmp_path / "config.json").write_text(json.dumps(values))
    loaded = TrainConfig.load(tmp_path)
    assert loaded.precision == "mixed_bfloat16"
    assert loaded.model_arguments()["dtype"] == "mixed_bfloat16"


def test_train_prints_the_resolved_precision_when_it_trains(
    trained_digits_run, digits_corpus, make_train_config, tmp_path, capsys
):
    from keras_attention.cli import main
    from keras_attention.runs.training_run import resolve_run_precision

    # A new run prints the precision it resolved before anything else (the empty
    # corpus then stops it, so nothing trains here).
    empty = tmp_path / "empty.tsv"
    empty.write_text("")
    fresh = make_train_config(empty, tmp_path / "fresh", precision="auto")
    assert main(train_argv(fresh)) == 2
    captured = capsys.readouterr()
    assert (
        captured.out.splitlines()[0]
        == f"Precision: {resolve_run_precision(fresh, None).describe()}"
    )
    assert captured.out.startswith("Precision: float32 (auto: ") or captured.out.startswith(
        "Precision: mixed_bfloat16 (auto: "
    )
    assert "is empty" in captured.err

    # A completed run has nothing to train, so it prints no precision.
    config = make_train_config(digits_corpus, trained_digits_run, precision="auto")
    assert main(train_argv(config)) == 0
    lines = printed_lines(capsys.readouterr().out)
    assert not any(line.startswith("Precision:") for line in lines), lines
    assert "already completed" in lines[0]


@pytest.mark.parametrize(
    "isa, expected",
    [
        ("AVX2", "float32"),
        ("avx512_core_vnni", "float32"),  # any case, as oneDNN reads it
        ("AVX512_CORE_BF16", "mixed_bfloat16"),  # not a cap below bfloat16: the flags decide
        ("", "mixed_bfloat16"),
    ],
)
def test_a_onednn_cap_below_bfloat16_means_float32(tmp_path, isa, expected):
    path = tmp_path / "cpuinfo"
    path.write_text(X86_CPUINFO.format(extra="amx_bf16 avx512_bf16"))
    choice = detect_precision(path, gpus=[], probe=no_probe, environ={"ONEDNN_MAX_CPU_ISA": isa})
    assert choice.policy == expected
    if expected == "float32":
        assert f"ONEDNN_MAX_CPU_ISA={isa.upper()}" in choice.reason
