"""A `Seq2Seq` default decoder mapped onto `keras_attention.seq2seq` objects
(`benchmarks/seq2seq_mapping.py`, what `benchmarks/seq2seq_decoder_speed.py` times)
decodes as the model does, so the weights map: `BeamSearchDecoder` gives the ids of
`Seq2Seq`'s beam search (both ranking as TFA does, `BeamSearch.tfa_scoring`), and
`BasicDecoder` with `GreedyEmbeddingSampler` its greedy ids."""

import importlib.util
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention import seq2seq
from keras_attention.decoding import BeamSearch, GreedySearch
from keras_attention.models import Seq2Seq
from keras_attention.runs.train_config import TrainConfig

pytestmark = pytest.mark.tensorflow_only

MAPPING = Path(__file__).parents[2] / "benchmarks" / "seq2seq_mapping.py"
START, END, MAX_STEPS = 2, 3, 12
WEIGHT_SCALE = 1.0  # the weights' standard deviation
END_BIAS = 8.0  # the end token's output bias: rows end after 0 to 6 tokens, or run on


def _mapping():
    spec = importlib.util.spec_from_file_location("seq2seq_mapping", MAPPING)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def setup():
    """`(mapping, model, encoder outputs)`: a tiny default-config model, every weight
    drawn from N(0, WEIGHT_SCALE) (peaked distributions), the end token's bias `END_BIAS`, and a
    batch of 6 sources of lengths 7 down to 2 (padded)."""
    keras.utils.set_random_seed(3)
    arguments = TrainConfig(
        embedding_dim=8, encoder_units=8, decoder_units=16, precision="float32", dropout=0.0
    ).model_arguments()
    model = Seq2Seq(20, 24, **arguments)
    model.build()
    rng = np.random.default_rng(3)
    for variable in model.weights:
        variable.assign(rng.normal(0.0, WEIGHT_SCALE, variable.shape).astype("float32"))
    bias = model.decoder.output_bias
    bias.assign(tf.tensor_scatter_nd_update(bias, [[END]], [END_BIAS]))
    lengths = np.array([7, 6, 5, 4, 3, 2])
    ids = rng.integers(4, 20, size=(6, 7)) * (np.arange(7) < lengths[:, None])
    source_ids = tf.constant(ids, tf.int32)
    annotations, summary = model.encoder(source_ids, training=False)
    return _mapping(), model, (annotations, tf.not_equal(source_ids, 0), summary)


def test_beam_search_decoder_gives_seq2seqs_beam_search_ids(setup):
    mapping, model, (annotations, mask, summary) = setup
    search = {
        "beam_width": 3,
        "length_penalty": 0.6,
        "max_steps": MAX_STEPS,
        "start_id": START,
        "end_id": END,
    }
    strategy = BeamSearch(beam_width=3, length_penalty=0.6, max_steps=MAX_STEPS, end_id=END)
    strategy.tfa_scoring = True  # the decoder's ranking
    state = model.decoder.initial_state(annotations, mask, summary)
    expected = strategy(model.step_function(state), state, tf.fill([6], START))
    parts = mapping.DecoderParts(seq2seq, keras, tf, mapping.seq2seq_weights(model), search)
    got = parts.decode(annotations, mask, summary)
    expected_rows = mapping.rows_of_lengths(expected.tokens, expected.lengths)
    assert mapping.rows_before_end(got, END) == expected_rows
    # Not a vacuous match: the rows end at different steps, some before the last.
    assert len({len(row) for row in expected_rows}) > 1
    assert min(len(row) for row in expected_rows) < MAX_STEPS


def test_greedy_basic_decoder_gives_seq2seqs_greedy_ids(setup):
    mapping, model, (annotations, mask, summary) = setup
    search = {"beam_width": 1, "length_penalty": 0.0, "max_steps": MAX_STEPS}
    search.update(start_id=START, end_id=END)
    parts = mapping.DecoderParts(seq2seq, keras, tf, mapping.seq2seq_weights(model), search)
    state = model.decoder.initial_state(annotations, mask, summary)
    expected = GreedySearch(max_steps=MAX_STEPS, end_id=END)(
        model.step_function(state), state, tf.fill([6], START)
    )
    parts.mechanism.setup_memory(annotations, memory_mask=mask)
    initial = parts.wrapper.get_initial_state(batch_size=6, dtype=tf.float32)
    initial = initial.clone(cell_state=[parts.bridge(summary)])
    decoder = seq2seq.BasicDecoder(
        parts.wrapper,
        seq2seq.GreedyEmbeddingSampler(),
        output_layer=parts.output_layer,
        maximum_iterations=MAX_STEPS,
    )
    outputs, _, _ = decoder(
        parts.embedding, start_tokens=tf.fill([6], START), end_token=END, initial_state=initial
    )
    assert mapping.rows_before_end(outputs.sample_id, END) == mapping.rows_of_lengths(
        expected.tokens, expected.lengths
    )
