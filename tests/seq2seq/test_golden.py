"""Our seq2seq objects with TFA's weights give TFA's outputs: the golden files of
`benchmarks/tfa_golden/make_golden.py` (tensorflow-addons 0.23, tensorflow-cpu 2.15.1)."""

import keras
import pytest
import tensorflow as tf
from helpers.tfa_golden import (
    assert_matches_golden,
    flatten_state,
    golden_weights,
    load,
    make_cell,
    make_wrapper,
    mechanism_outputs,
    names,
)

from keras_attention import seq2seq

pytestmark = pytest.mark.tensorflow_only


@pytest.mark.parametrize("name", names("mechanism_"))
def test_mechanism(name):
    arrays, config = load(name)
    _, ours = mechanism_outputs(arrays, config)
    assert_matches_golden(arrays, ours, name)


def test_functions():
    arrays, _ = load("functions")
    ours = {
        "hardmax": seq2seq.hardmax(arrays["in_logits"]),
        "safe_cumprod": seq2seq.safe_cumprod(arrays["in_x"], axis=1),
        "safe_cumprod_exclusive": seq2seq.safe_cumprod(arrays["in_x"], axis=1, exclusive=True),
    }
    for mode in ("recursive", "parallel"):
        ours[f"monotonic_{mode}"] = seq2seq.monotonic_attention(
            arrays["in_p_choose"], arrays["in_previous"], mode
        )
    ours["monotonic_hard"] = seq2seq.monotonic_attention(
        arrays["in_hard_choose"], arrays["in_first"], "hard"
    )
    assert_matches_golden(arrays, ours, "functions")


def run_twice(decoder, arrays, run):
    """Runs once to build, sets TFA's weights, runs again: the outputs of ours."""
    for attempt in range(2):
        if attempt:
            assert [tuple(w.shape) for w in decoder.weights] == [
                w.shape for w in golden_weights(arrays)
            ]
            decoder.set_weights(golden_weights(arrays))
        outputs, state, lengths = run()
    return {
        "rnn_output": outputs.rnn_output,
        "sample_id": outputs.sample_id,
        "lengths": lengths,
        **flatten_state("state", state),
    }


def wrapper_case(name, query_layer=False, units=None):
    arrays, config = load(name)
    units = units or config.get("units") or config["depth"]
    mechanism, cell = make_wrapper(
        config["mechanism"],
        config["mechanism_kwargs"],
        config.get("wrapper_kwargs")
        or {
            "attention_layer_size": config["attention_layer_size"],
            "alignment_history": config["alignment_history"],
        },
        units,
        query_layer=query_layer,
        cell_units=9 if name.startswith("wrapper_tfa") else 8,
    )
    decoder = seq2seq.BasicDecoder(cell, seq2seq.TrainingSampler())
    batch = arrays["in_inputs"].shape[0]

    def run():
        mechanism.setup_memory(
            arrays["in_memory"], memory_sequence_length=arrays["in_memory_sequence_length"]
        )
        state = cell.get_initial_state(batch_size=batch, dtype=tf.float32)
        return decoder(
            arrays["in_inputs"],
            initial_state=state,
            sequence_length=arrays["in_sequence_length"],
        )

    return arrays, config, run_twice(decoder, arrays, run)


@pytest.mark.parametrize("name", [n for n in names("wrapper_") if not n.startswith("wrapper_tfa_")])
def test_attention_wrapper_with_basic_decoder(name):
    arrays, _, ours = wrapper_case(name)
    assert_matches_golden(arrays, ours, name)


@pytest.mark.parametrize("name", names("wrapper_tfa_"))
def test_tfa_test_cases_with_tfa_weights(name):
    """TFA's `_test_with_attention` cases, on the weights and inputs they drew."""
    _, config = load(name)
    arrays, _, ours = wrapper_case(
        name, query_layer=config["create_query_layer"], units=config["depth"]
    )
    assert_matches_golden(arrays, ours, name)


@pytest.mark.parametrize("name", names("greedy_"))
def test_basic_decoder_with_greedy_embedding_sampler(name):
    arrays, config = load(name)
    if config["with_attention"]:
        mechanism, cell = make_wrapper("LuongAttention", {}, {"attention_layer_size": 6}, 8)
    else:
        mechanism, cell = None, make_cell("lstm", 8)
    decoder = seq2seq.BasicDecoder(
        cell,
        seq2seq.GreedyEmbeddingSampler(),
        output_layer=keras.layers.Dense(arrays["in_embedding"].shape[0]),
        maximum_iterations=config["maximum_iterations"],
    )

    def run():
        if mechanism is not None:
            mechanism.setup_memory(
                arrays["in_memory"], memory_sequence_length=arrays["in_memory_sequence_length"]
            )
        state = cell.get_initial_state(batch_size=3)  # Keras 3 cells take no dtype
        return decoder(
            arrays["in_embedding"],
            start_tokens=arrays["in_start_tokens"],
            end_token=arrays["in_end_token"],
            initial_state=state,
        )

    assert_matches_golden(arrays, run_twice(decoder, arrays, run), name)


def test_sequence_loss_variants():
    arrays, config = load("loss")
    logits, targets, weights = arrays["in_logits"], arrays["in_targets"], arrays["in_weights"]
    ours = {}
    for name, (avg_t, avg_b, sum_t, sum_b) in config["variants"].items():
        ours[name] = seq2seq.sequence_loss(
            tf.constant(logits),
            tf.constant(targets),
            tf.constant(weights),
            average_across_timesteps=avg_t,
            average_across_batch=avg_b,
            sum_over_timesteps=sum_t,
            sum_over_batch=sum_b,
        )
    ours["one_hot_average_both"] = seq2seq.sequence_loss(
        tf.constant(logits), tf.one_hot(targets, 6), tf.constant(weights)
    )
    ours["class_default"] = seq2seq.SequenceLoss()(targets, tf.constant(logits), weights)
    assert_matches_golden(arrays, ours, "loss")
