"""`benchmarks/peers/`: the OpenNMT-py configurations, the budget plan, the log readers,
the result rows, and the training pairs written for another toolkit.

None of these needs the OpenNMT-py environment; the one test that reads OpenNMT-py's own
option list runs only where `benchmarks/peers/.venv` exists.
"""

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / "benchmarks" / "peers"
VENV_PYTHON = PEERS / ".venv" / "bin" / "python"


def load(name: str):
    sys.path[:0] = [str(PEERS), str(ROOT / "benchmarks")]  # siblings: peer_config, harness
    try:
        spec = importlib.util.spec_from_file_location(f"peers_{name}", PEERS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        del sys.path[:2]
    return module


@pytest.fixture(scope="module")
def config():
    return load("peer_config")


def test_the_rnn_is_our_default_shape(config):
    rnn = config.train_config("rnn", "/w", 1000)
    assert (rnn["encoder_type"], rnn["rnn_type"], rnn["global_attention"]) == (
        "brnn",
        "GRU",
        "general",
    )
    # brnn halves enc_hid_size per direction: 256 + 256, and a 512-unit decoder, as ours.
    assert (rnn["word_vec_size"], rnn["enc_hid_size"] // 2, rnn["dec_hid_size"]) == (256, 256, 512)
    assert (rnn["train_steps"], rnn["batch_size"], rnn["batch_type"]) == (1000, 64, "sents")
    assert rnn["world_size"] == 1 and rnn["gpu_ranks"] == []
    assert rnn["data"]["corpus_1"]["transforms"] == ["sentencepiece"]


def learning_rate(options: dict, step: int, d_model: int = 256) -> float:
    """The rate OpenNMT-py's optimizer uses at `step` (its `noam` and step-decay rules)."""
    if options["decay_method"] == "noam":
        warmup = options["warmup_steps"]
        return options["learning_rate"] * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
    start, every = options["start_decay_steps"], options["decay_steps"]
    decays = 0 if step < start else 1 + (step - start) // every
    return options["learning_rate"] * options["learning_rate_decay"] ** decays


@pytest.mark.parametrize("steps", [300, 2000, 60000])
def test_the_transformer_peaks_at_our_rate_at_the_end_of_its_warmup(config, steps):
    options = config.schedule("transformer", steps)
    warmup = options["warmup_steps"]
    assert warmup == min(4000, max(100, steps // 10))
    assert math.isclose(learning_rate(options, warmup), 0.002)
    assert learning_rate(options, warmup - 1) < 0.002 and learning_rate(options, warmup + 1) < 0.002


def test_the_rnn_schedule_trains_its_last_eighth_at_a_sixteenth_of_the_rate(config):
    options = config.schedule("rnn", 1000)
    assert learning_rate(options, 499) == 0.002
    assert learning_rate(options, 500) == 0.002 / 2
    assert learning_rate(options, 874) == 0.002 / 8
    assert learning_rate(options, 875) == learning_rate(options, 999) == 0.002 / 16


def test_the_plan_fits_the_budget(config):
    assert config.plan_steps(1200, 0.5) == 2328  # 97% of 1,200 s at 0.5 s/step
    assert config.plan_steps(10, 60) == 1
    with pytest.raises(ValueError, match="step_seconds=0"):
        config.plan_steps(1200, 0)


def test_the_yaml_reads_back(config):
    yaml = pytest.importorskip("yaml")
    options = config.train_config("transformer", "/tmp/a dir", 500)
    assert yaml.safe_load(config.to_yaml(options)) == options


LOG = """\
[2026-01-01 10:00:00,000 INFO] encoder: 2839552
[2026-01-01 10:00:00,000 INFO] decoder: 6863688
[2026-01-01 10:00:00,000 INFO] * number of parameters: 9703240
[2026-01-01 10:00:10,000 INFO] Step 10/  100; acc: 6.7; ppl: 3065.8; xent: 8.0; lr: 0.00200; \
sents:     640; bsz:  542/ 746/64;  72/100 tok/s;     15 sec;
[2026-01-01 10:00:20,000 INFO] Step 20/  100; acc: 9.7; ppl: 565.8; xent: 6.0; lr: 0.00200; \
sents:     640; bsz:  542/ 746/64;  72/100 tok/s;     19 sec;
[2026-01-01 10:00:30,000 INFO] Step 100/  100; acc: 19.7; ppl: 65.8; xent: 4.0; lr: 0.00200; \
sents:     640; bsz:  542/ 746/64;  72/100 tok/s;     59 sec;
"""


def test_the_log_gives_the_step_time_and_the_parameters(config):
    assert config.step_times(LOG) == [(10, 15.0), (20, 19.0), (100, 59.0)]
    assert config.step_seconds(LOG, skip=20) == 0.5  # (59 - 19) s / 80 steps
    assert config.parameter_count(LOG) == 9703240
    with pytest.raises(ValueError, match="fewer than two"):
        config.step_seconds(LOG, skip=50)


def test_rows_take_each_system_and_leave_missing_figures_empty(config):
    record = {
        "systems": {
            "ours": {
                "parameters": 10,
                "training": {"seconds": 1200.0, "planned_steps": 3000},
                "evaluation": {"bleu": 45.0, "chrf": 62.0},
                "decoding": {"batch_64": {"sentences_per_second": 90.0, "tokens_per_second": 600}},
            },
            "rnn": {"training": {}},
        }
    }
    ours, rnn = config.table_rows(record)
    assert (ours["system"], ours["bleu"], ours["tokens_per_second_64"]) == ("ours", 45.0, 600)
    assert ours["tokens_per_second_1"] is None and rnn["bleu"] is None
    table = config.format_table([ours, rnn]).splitlines()
    assert len(table) == 3 and table[2].split()[1:] == ["-"] * 7


def test_target_tokens_are_words(config):
    assert config.words(["Il fait froid.", "Va !", ""]) == 5


def test_decoding_speeds_warm_up_then_time_every_sentence_at_each_batch_size(config):
    calls = []

    def translate(sentences, batch_size):
        calls.append((len(sentences), batch_size))
        return ["un deux"] * len(sentences), 0.5 * len(sentences)

    speeds = config.decoding_speeds(translate, ["a"] * 100)
    # One warm-up batch, then the whole sample, per batch size.
    assert calls == [(1, 1), (100, 1), (64, 64), (100, 64)]
    assert speeds["batch_64"] == {
        "sentences": 100,
        "seconds": 50.0,
        "sentences_per_second": 2.0,
        "target_words": 200,
        "tokens_per_second": 4.0,
    }


@pytest.mark.slow
def test_every_training_option_is_one_of_opennmt_pys(config):
    """The keys are read from the installed OpenNMT-py's own parser, not guessed."""
    if not VENV_PYTHON.is_file():
        pytest.skip("benchmarks/peers/.venv is not there (run.py creates it)")
    code = (
        "import json; from onmt.opts import train_opts, translate_opts; "
        "from onmt.utils.parse import ArgumentParser as P\n"
        "t = P(); train_opts(t); r = P(); translate_opts(r)\n"
        "print(json.dumps([sorted(o.lstrip('-') for a in p._actions for o in a.option_strings)"
        " for p in (t, r)]))"
    )
    out = subprocess.run([str(VENV_PYTHON), "-c", code], capture_output=True, text=True, check=True)
    train, translate = json.loads(out.stdout.strip().splitlines()[-1])
    for model in ("rnn", "transformer"):
        assert set(config.train_config(model, "/w", 100)) - set(train) == set()
    assert set(config.vocab_config("/w")) - set(train) - {"n_sample"} == set()
    assert set(config.translate_options("m.pt", "/w", 64, "out.txt")) - set(translate) == set()


def test_the_length_filter_keeps_what_the_training_pipeline_keeps():
    """A hand-worked example: `max_length` 4 (the target with [END]) and ratio 2."""
    data = load("peer_data")
    from keras_attention.runs.train_config import TrainConfig
    from keras_attention.text import TextVectorizer, build_vocabulary

    pairs = [
        ("a b", "x y"),  # kept
        ("a b c d e", "x"),  # 5 source tokens
        ("a", "x y z"),  # 3 target tokens for 1: above the ratio
        ("a b", "x y z"),  # kept: 3 + [END] = 4
        ("a b c", "x y z w"),  # 4 + [END] = 5
    ]
    vectorizers = (
        TextVectorizer(build_vocabulary([s for s, _ in pairs], 50), max_length=4),
        TextVectorizer(build_vocabulary([t for _, t in pairs], 50), max_length=4),
    )
    settings = TrainConfig(tokenizer="words", max_length=4, max_length_ratio=2.0, batch_size=2)
    keep = data.within_limits(pairs, settings, vectorizers)
    assert keep == [True, False, False, True, False]
    assert data.pipeline_count(pairs, settings, vectorizers) == sum(keep)
