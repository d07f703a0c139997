"""`benchmarks/harness.py`: the machine record every benchmark prints and writes."""

import json
import os
import subprocess
import time

import pytest
from helpers.benchmark_scripts import load_benchmark
from helpers.subprocesses import ROOT

FIELDS = {
    "date",
    "commit",
    "command",
    "cpu",
    "cores",
    "cpu_flags",
    "memory_gib",
    "onednn_max_cpu_isa",
    "platform",
    "python",
    "tensorflow",
    "keras",
}


@pytest.fixture(scope="module")
def harness():
    return load_benchmark("harness")


def _git(directory, *args):
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=directory,
        check=True,
        capture_output=True,
    )


def test_machine_info_has_every_field_and_the_header_shows_them(harness):
    info = harness.machine_info()
    assert set(info) == FIELDS
    assert info["cores"] >= 1
    header = harness.machine_header(info)
    assert len(header.splitlines()) == 2
    for field in ("date", "commit", "command", "cpu", "python", "tensorflow", "keras"):
        assert str(info[field]) in header, field
    assert f"{info['cores']} cores" in header


def test_cpu_model_and_the_bf16_and_amx_flags_come_from_cpuinfo(harness, tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz\n"
        "flags\t\t: fpu sse2 avx2 fma avx512f avx512_bf16 amx_bf16 amx_tile\n\n"
        "processor\t: 1\nmodel name\t: another\nflags\t\t: avx512_fp16\n"
    )
    model, flags = harness.cpu_description(cpuinfo)
    assert model == "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz"
    assert flags == ["AVX2", "FMA", "AVX512F", "AVX512_BF16", "AMX_TILE", "AMX_BF16"]
    info = harness.machine_info(cpuinfo=cpuinfo)
    assert info["cpu_flags"] == flags
    assert "AVX512_BF16 AMX_TILE AMX_BF16" in harness.machine_header(info)


def test_a_onednn_cap_is_recorded_and_shown(harness, monkeypatch):
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    assert harness.machine_info()["onednn_max_cpu_isa"] is None
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    info = harness.machine_info()
    assert info["onednn_max_cpu_isa"] == "AVX2"
    assert "(oneDNN capped at AVX2)" in harness.machine_header(info)


def test_cpu_description_without_cpuinfo_names_no_flags(harness, tmp_path):
    model, flags = harness.cpu_description(tmp_path / "missing")
    assert model
    assert flags == []


def test_write_json_adds_the_machine_record(harness, tmp_path):
    path = tmp_path / "result.json"
    harness.write_json(path, {"tokens_per_second": {1: 2.5}, "agreement": 1.0})
    written = json.loads(path.read_text())
    assert written["tokens_per_second"] == {"1": 2.5}
    assert written["agreement"] == 1.0
    assert set(written["machine"]) == FIELDS

    info = harness.machine_info()
    harness.write_json(path, {"rows": [1, 2]}, info)
    assert json.loads(path.read_text()) == {"rows": [1, 2], "machine": info}


def test_write_json_refuses_what_it_cannot_add_the_record_to(harness, tmp_path):
    with pytest.raises(TypeError, match="Received: list"):
        harness.write_json(tmp_path / "x.json", [1, 2])
    with pytest.raises(ValueError, match="'machine'"):
        harness.write_json(tmp_path / "x.json", {"machine": "mine"})


def test_write_record_sets_one_record_and_keeps_the_others(harness, tmp_path):
    path = tmp_path / "results.json"
    harness.write_record(path, "runs", "a", {"bleu": 1.5})
    harness.write_record(path, "exports", "b", {"size": 2})
    harness.write_record(path, "runs", "c", {"bleu": 3.0})
    harness.write_record(path, "runs", "a", {"bleu": 4.0})
    assert json.loads(path.read_text()) == {
        "runs": {"a": {"bleu": 4.0}, "c": {"bleu": 3.0}},
        "exports": {"b": {"size": 2}},
    }


@pytest.mark.parametrize("name", ["Upper", "with-dash", "", "dot.ted"])
def test_record_name_refuses_what_a_figure_key_cannot_hold(harness, name):
    import argparse

    with pytest.raises(argparse.ArgumentTypeError, match="lowercase letters, digits"):
        harness.record_name(name)
    assert harness.record_name("native_bf16_2") == "native_bf16_2"


def test_commit_is_the_short_hash_and_dirty_with_uncommitted_changes(harness, tmp_path):
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("one\n")
    _git(tmp_path, "add", "a.txt")
    _git(tmp_path, "commit", "-q", "-m", "one")
    full = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout.strip()
    commit = harness.git_commit(tmp_path)
    assert 7 <= len(commit) < len(full) and full.startswith(commit)

    (tmp_path / "untracked.txt").write_text("not part of the commit\n")
    assert harness.git_commit(tmp_path) == commit
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    (results / "r.json").write_text("{}\n")
    _git(tmp_path, "add", "benchmarks")
    _git(tmp_path, "commit", "-q", "-m", "results")
    commit = harness.git_commit(tmp_path)
    (results / "r.json").write_text('{"written": "by a benchmark"}\n')
    assert harness.git_commit(tmp_path) == commit  # results files are not code
    (tmp_path / "a.txt").write_text("two\n")
    assert harness.git_commit(tmp_path) == commit + "+dirty"


def test_commit_is_unknown_in_a_broken_repository_or_without_git(harness, tmp_path, monkeypatch):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / ".git").write_text("not a git directory\n")
    assert harness.git_commit(broken) == "unknown"

    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert harness.git_commit(outside) == "unknown"

    monkeypatch.setenv("PATH", str(tmp_path / "no-programs-here"))
    assert harness.git_commit(ROOT) == "unknown"
    assert harness.machine_info()["commit"] == "unknown"


def test_time_calls_warms_up_then_times_each_call(harness):
    calls = []
    seconds = harness.time_calls(lambda: calls.append(1), repeats=3, warmup=2)
    assert len(calls) == 5
    assert len(seconds) == 3 and all(s >= 0 for s in seconds)


def test_stopwatch_stops_at_the_end_of_its_block(harness):
    with harness.Stopwatch() as watch:
        pass
    stopped = watch.seconds
    assert stopped >= 0
    assert watch.seconds == stopped
    running = harness.Stopwatch()
    first = running.seconds
    time.sleep(0.01)
    assert running.seconds > first, "without `with`, it keeps counting"


def test_child_environment_puts_the_checkout_first(harness, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    env = harness.child_environment(KERAS_BACKEND="tensorflow")
    assert env["PYTHONPATH"].split(os.pathsep) == [str(ROOT), "/elsewhere"]
    assert env["KERAS_BACKEND"] == "tensorflow"
    assert env["TF_CPP_MIN_LOG_LEVEL"] == "2"


@pytest.mark.filterwarnings("ignore:`shuffle=True` was passed:UserWarning")
def test_fit_step_seconds_times_each_batch(harness):
    import keras
    import tensorflow as tf

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    data = tf.data.Dataset.from_tensors((tf.zeros((8, 3)), tf.zeros((8, 1)))).repeat()
    seconds = harness.fit_step_seconds(model, data, steps=3)
    assert len(seconds) == 3 and all(s > 0 for s in seconds)


# The modules of benchmarks/ that are not benchmarks a user runs, and why.
NOT_BENCHMARKS = {
    "harness.py": "what the benchmarks share",
    "seq2seq_mapping.py": "the weight mapping seq2seq_decoder_speed.py and a test import",
    "seq2seq_decoder_speed_tfa.py": "seq2seq_decoder_speed.py's side in TFA's own environment, "
    "without keras_attention (its parent prints the header)",
}


@pytest.mark.parametrize(
    "script",
    sorted(p.name for p in (ROOT / "benchmarks").glob("*.py") if p.name not in NOT_BENCHMARKS),
)
def test_every_benchmark_prints_the_machine_header(script):
    source = (ROOT / "benchmarks" / script).read_text(encoding="utf-8")
    # `harness.race_setup` prints it for the translation races.
    assert "harness.print_machine_header()" in source or "harness.race_setup(" in source


# A Luong (dot score, no input feeding) GRU model with tiny sizes, counted by hand:
# e=2, u=3 (bidirectional: 6-dim annotations), d=6, vocabulary 10, a 4-token source,
# 5 decoder steps. FLOPs of an (m, k) x (k, n) matmul: 2 m k n.
TINY_LUONG = {
    "attention": "luong",
    "score": "dot",
    "cell": "gru",
    "embedding_dim": 2,
    "encoder_units": 3,
    "decoder_units": 6,
    "target_vocabulary_size": 10,
}
ENCODER_FLOPS = 2 * (2 * 4 * 2 * 9) + 2 * 4 * (2 * 1 * 3 * 9)  # inputs, then 4 steps x 2 dirs
STEP_FLOPS = (
    2 * 2 * 18  # GRU input kernel: e x 3d
    + 2 * 6 * 18  # GRU recurrent kernel: d x 3d
    + 2 * 6 * 4  # scores s . h_i over 4 source positions
    + 2 * 4 * 6  # context: weights x annotations
    + 2 * 12 * 6  # h~ = tanh(W_c [c; s])
    + 2 * 6 * 2  # readout to the embedding size
    + 2 * 2 * 10  # tied output projection
)


def test_decoding_flops_match_a_hand_count(harness):
    assert harness.decoding_flops(TINY_LUONG, source_length=4, steps=5) == (
        ENCODER_FLOPS + 5 * STEP_FLOPS
    )
    # Beam search: the encoder runs once, the decoder once per hypothesis.
    assert harness.decoding_flops(TINY_LUONG, 4, 5, hypotheses=4) == (
        ENCODER_FLOPS + 4 * 5 * STEP_FLOPS
    )


@pytest.mark.parametrize(
    "change, named",
    [
        ({"cell": "lstm"}, "cell='lstm'"),
        ({"score": "general"}, "score='general'"),
        ({"input_feeding": True}, "input_feeding=True"),
        ({"attention": "none"}, "attention='none'"),
        ({"attention": "bahdanau", "conditional": True}, "conditional=True"),
    ],
)
def test_decoding_flops_refuse_models_they_do_not_count(harness, change, named):
    config = {**TINY_LUONG, **change}
    kind, why = harness.flop_count_kind(config)
    assert kind is None and named in why
    assert harness.decoding_flops(config, 4, 5) is None
