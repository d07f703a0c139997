"""The cases of TFA 0.23's `attention_wrapper_test.py`, with the values they state
(docs/research/tfa-seq2seq-cases.md lists them)."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers.tfa_golden import load, names, tfa_case_wrapper

from keras_attention import seq2seq

pytestmark = pytest.mark.tensorflow_only

MECHANISMS = [
    seq2seq.LuongAttention,
    seq2seq.LuongMonotonicAttention,
    seq2seq.BahdanauAttention,
    seq2seq.BahdanauMonotonicAttention,
]


@pytest.fixture
def data():
    """TFA's `DummyData`: batch 10, memory (10, 5, 6), units 8."""
    rng = np.random.default_rng(0)
    return {
        "memory": rng.normal(size=(10, 5, 6)).astype("float32"),
        "memory_length": rng.integers(1, 6, size=(10,)),
        "query": rng.normal(size=(10, 8)).astype("float32"),
        "state": rng.normal(size=(10, 5)).astype("float32"),
    }


@pytest.mark.parametrize("cls", MECHANISMS)
def test_mechanism_output_shapes(cls, data):
    mechanism = cls(8, data["memory"])
    score = mechanism([data["query"], data["state"]])
    assert len(score) == 2
    assert score[0].shape == (10, 5) and score[1].shape == (10, 5)


@pytest.mark.parametrize("cls", MECHANISMS)
def test_mechanism_config_round_trip(cls, data):
    config = cls(8, data["memory"]).get_config()
    assert cls.from_config(config).get_config() == config


@pytest.mark.parametrize("cls", MECHANISMS)
def test_memory_from_call_matches(cls, data):
    mechanism = cls(8, data["memory"])
    weights_before_query = mechanism.get_weights()
    reference = mechanism([data["query"], data["state"]])
    clone = cls.from_config(mechanism.get_config())
    clone.build(data["memory"].shape)
    clone.set_weights(weights_before_query)
    clone(data["memory"], setup_memory=True)
    clone.build([data["query"].shape, data["state"].shape])
    clone.set_weights(mechanism.get_weights())
    np.testing.assert_allclose(reference, clone([data["query"], data["state"]]))


@pytest.mark.parametrize("cls", MECHANISMS)
def test_manual_memory_reset(cls, data):
    mechanism = cls(8)

    def score(batch_size):
        memory = data["memory"][:batch_size]
        mechanism.setup_memory(memory, memory_sequence_length=data["memory_length"][:batch_size])
        assert mechanism.values.shape.as_list() == list(memory.shape)
        assert mechanism.keys.shape.as_list() == list(memory.shape)[:-1] + [8]
        return mechanism([data["query"][:batch_size], data["state"][:batch_size]])

    score(10)
    variables = list(mechanism.variables)
    score(9)
    assert all(a is b for a, b in zip(variables, mechanism.variables, strict=True))


def test_masking():
    memory = tf.ones([4, 4, 5])
    mechanism = seq2seq.LuongAttention(5, memory, tf.constant([1, 2, 3, 4]))
    alignment, _ = mechanism([tf.ones([4, 5]), None])
    assert np.sum(np.triu(alignment, k=1)) == 0


# The means TFA's `_test_with_attention` cases state (rnn_output, sample_id, cell h,
# cell c, attention, alignments, alignment history), checked with TFA's atol of 1e-3.
STATED = {
    "bahdanau_not_normalized": (
        -0.003204414,
        3.2,
        0.40868404,
        0.89017969,
        0.041453815,
        0.125,
        0.125,
    ),
    "bahdanau_normalized": (-0.008089137, 2.8, 0.49166861, 1.01068615, 0.042427111, 0.125, None),
    "luong_not_normalized": (
        -0.06124732,
        2.73333333,
        0.52021580,
        1.0964939,
        -0.0318060,
        0.125,
        None,
    ),
    "luong_scaled": (-0.06124732, 2.73333333, 0.52021580, 1.0964939, -0.0318060, 0.125, None),
    "not_use_attention_layer": (0.078317143, 4.2, 0.89382392, 1.722382, 0.026356646, 0.125, None),
    "bahdanau_monotonic_not_normalized": (
        -0.009921653,
        3.13333333,
        0.44612807,
        0.95786464,
        0.038682378,
        0.09778417,
        0.10261579603,
    ),
    "bahdanau_monotonic_normalized": (
        0.007140680,
        3.26666666,
        0.47012400,
        1.0249618,
        0.068432882,
        0.0615656,
        0.07909643,
    ),
    "luong_monotonic_not_normalized": (
        0.003664831,
        3.06666666,
        0.54318606,
        1.12592840,
        0.059128221,
        0.05112994,
        0.06994973868,
    ),
    "luong_monotonic_scaled": (
        0.003664831,
        3.06666666,
        0.54318606,
        1.12592840,
        0.059128221,
        0.05112994,
        0.06994973868,
    ),
}


def test_every_stated_case_has_a_golden_file():
    assert sorted(f"wrapper_tfa_{name}" for name in STATED) == names("wrapper_tfa_")


@pytest.mark.parametrize("case", sorted(STATED))
def test_stated_summaries(case):
    """TFA's case on the weights and inputs TFA drew: the means its test states."""
    arrays, config = load(f"wrapper_tfa_{case}")
    mechanism, cell = tfa_case_wrapper(config)
    mechanism.setup_memory(arrays["in_memory"], arrays["in_memory_sequence_length"])
    decoder = seq2seq.BasicDecoder(cell, seq2seq.TrainingSampler())
    decoder.initialize(
        arrays["in_inputs"], initial_state=cell.get_initial_state(batch_size=5, dtype="float32")
    )
    decoder.set_weights([arrays[f"w_{i}"] for i in range(len(decoder.weights))])
    mechanism.setup_memory(arrays["in_memory"], arrays["in_memory_sequence_length"])
    outputs, state, _ = decoder(
        arrays["in_inputs"],
        initial_state=cell.get_initial_state(batch_size=5, dtype="float32"),
        sequence_length=arrays["in_sequence_length"],
    )
    depth = 6 if config["attention_layer_size"] else 10
    assert outputs.rnn_output.shape == (5, 3, depth) and outputs.sample_id.shape == (5, 3)
    assert outputs.sample_id.dtype == tf.int32
    assert isinstance(outputs, seq2seq.BasicDecoderOutput)
    assert isinstance(state, seq2seq.AttentionWrapperState)
    rnn, sample, h, c, attention, alignments, history = STATED[case]
    got = [
        outputs.rnn_output,
        outputs.sample_id,
        state.cell_state[0],
        state.cell_state[1],
        state.attention,
        state.alignments,
        state.attention_state,
    ]
    expected = [rnn, sample, h, c, attention, alignments, alignments]
    for value, mean in zip(got, expected, strict=True):
        np.testing.assert_allclose(np.mean(value), mean, atol=1e-3)
    if history is not None:
        stacked = state.alignment_history.stack()
        assert stacked.shape == (3, 5, 8)
        np.testing.assert_allclose(np.mean(stacked), history, atol=1e-3)
        tf.nest.assert_same_structure(
            cell.state_size, cell.get_initial_state(batch_size=5, dtype="float32")
        )


def test_custom_attention_layer():
    mechanism = seq2seq.LuongAttention(8)
    attention_layer = keras.layers.Dense(16, use_bias=False, activation="tanh")
    cell = seq2seq.AttentionWrapper(
        keras.layers.LSTMCell(8), mechanism, attention_layer=attention_layer
    )
    with pytest.raises(ValueError):  # the memory is not bound yet
        cell.get_initial_state(batch_size=4, dtype="float32")
    rng = np.random.default_rng(1)
    mechanism.setup_memory(rng.normal(size=(4, 5, 12)).astype("float32"), [5, 2, 3, 1])
    state = cell.get_initial_state(batch_size=4, dtype="float32")
    assert state.attention.shape[-1] == 16
    output, _ = cell(rng.normal(size=(4, 8)).astype("float32"), state)
    assert output.shape[-1] == 16


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "mechanism_cls, kwargs",
    [(seq2seq.BahdanauAttention, {"normalize": True}), (seq2seq.LuongAttention, {"scale": True})],
)
def test_dtypes(mechanism_cls, kwargs, dtype):
    rng = np.random.default_rng(2)
    memory = rng.normal(size=(3, 5, 6)).astype(dtype)
    mechanism = mechanism_cls(
        8, memory=memory, memory_sequence_length=[5, 2, 4], dtype=dtype, **kwargs
    )
    cell = keras.layers.LSTMCell(8, recurrent_activation="sigmoid", dtype=dtype)
    cell = seq2seq.AttentionWrapper(cell, mechanism, dtype=dtype)
    decoder = seq2seq.BasicDecoder(cell, seq2seq.TrainingSampler(), dtype=dtype)
    outputs, state, _ = decoder(
        rng.normal(size=(3, 4, 8)).astype(dtype),
        initial_state=cell.get_initial_state(batch_size=3, dtype=dtype),
        sequence_length=[4, 3, 2],
    )
    assert isinstance(outputs, seq2seq.BasicDecoderOutput)
    assert outputs.rnn_output.dtype == dtype
    assert isinstance(state, seq2seq.AttentionWrapperState)


def test_gru_cell_state_structure():
    mechanism = seq2seq.LuongAttention(units=3)
    cell = seq2seq.AttentionWrapper(keras.layers.GRUCell(3), mechanism)
    mechanism.setup_memory(tf.ones([2, 5, 3]))
    inputs = tf.ones([2, 3])
    initial_state = cell.get_initial_state(inputs=inputs)
    _, state = cell(inputs, initial_state)
    tf.nest.assert_same_structure(initial_state, state)


def test_multiple_mechanisms():
    rng = np.random.default_rng(3)
    mechanisms = [seq2seq.LuongAttention(units=5), seq2seq.LuongAttention(units=5)]
    seq2seq.AttentionWrapper(keras.layers.LSTMCell(5), mechanisms, attention_layer_size=[4, 5])
    cell = seq2seq.AttentionWrapper(
        keras.layers.LSTMCell(5),
        mechanisms,
        attention_layer=[keras.layers.Dense(4), keras.layers.Dense(5)],
    )
    for mechanism in mechanisms:
        mechanism.setup_memory(rng.normal(size=(2, 3, 6)).astype("float32"))
    state = cell.get_initial_state(batch_size=2, dtype="float32")
    output, next_state = cell(tf.ones([2, 4]), state)
    assert output.shape == (2, 9)
    assert len(next_state.alignments) == 2 and next_state.alignments[1].shape == (2, 3)


def test_inside_keras_rnn():
    mechanism = seq2seq.LuongAttention(units=8, memory=tf.ones((2, 4, 8)))
    cell = seq2seq.AttentionWrapper(keras.layers.LSTMCell(8), mechanism)
    layer = keras.layers.RNN(cell)
    assert layer(tf.ones((2, 4, 8))).shape == (2, 8)
    initial_state = cell.get_initial_state(batch_size=2, dtype="float32")
    assert layer(tf.ones((2, 4, 8)), initial_state=initial_state).shape == (2, 8)


def test_inside_keras_rnn_with_mask():
    mechanism = seq2seq.LuongAttention(units=3)
    cell = seq2seq.AttentionWrapper(keras.layers.LSTMCell(3), mechanism)
    data = tf.ones((4, 4, 3))
    mechanism.setup_memory(data)
    outputs = keras.layers.RNN(cell)(data, mask=tf.sequence_mask([1, 2, 3, 4], 4))
    assert outputs.shape == (4, 3)


class ReSetupModel(keras.Model):
    """TFA's `test_memory_re_setup` model: the memory bound twice in `call`."""

    def __init__(self, mechanism_cls):
        super().__init__()
        self.embedding = keras.layers.Embedding(20, 6, mask_zero=True)
        self.encoder = keras.layers.LSTM(6, return_sequences=True)
        self.mechanism = mechanism_cls(8)

    def call(self, inputs):
        tokens, query, state = inputs
        mask = self.embedding.compute_mask(tokens)
        memory = self.encoder(self.embedding(tokens), mask=mask)
        self.mechanism(memory, mask=mask, setup_memory=True)
        self.mechanism(memory, mask=mask, setup_memory=True)
        return self.mechanism([query, state])


@pytest.mark.parametrize("cls", MECHANISMS)
def test_memory_re_setup_in_a_model(cls):
    rng = np.random.default_rng(4)
    model = ReSetupModel(cls)
    model.compile("rmsprop", "mse")
    tokens = rng.integers(20, size=(10, 5))
    query = rng.normal(size=(10, 8)).astype("float32")
    state = rng.normal(size=(10, 5)).astype("float32")
    target = rng.normal(size=(10, 5)).astype("float32")
    model.fit([tokens, query, state], (target, target), batch_size=10, verbose=0)
    alignments, _ = model.predict_on_batch([tokens, query, state])
    assert alignments.shape == (10, 5)


@pytest.mark.parametrize("custom_layer", [False, True])
def test_wrapper_config_round_trip(custom_layer):
    """The wrapper, its cell, mechanism and attention layer rebuild from `get_config`;
    with the same weights and memory the rebuilt wrapper gives the same step."""
    rng = np.random.default_rng(7)
    memory = rng.normal(size=(2, 4, 6)).astype("float32")

    def build(config=None):
        if config is not None:
            cell = seq2seq.AttentionWrapper.from_config(config)
            mechanism = cell._attention_mechanisms[0]
        else:
            mechanism = seq2seq.BahdanauAttention(5, normalize=True)
            layer = {"attention_layer": keras.layers.Dense(7)} if custom_layer else {}
            size = {} if custom_layer else {"attention_layer_size": 3}
            cell = seq2seq.AttentionWrapper(
                keras.layers.GRUCell(4), mechanism, alignment_history=True, **layer, **size
            )
        mechanism.setup_memory(memory, [4, 2])
        state = cell.get_initial_state(batch_size=2, dtype="float32")
        return cell, state

    cell, state = build()
    inputs = tf.constant(rng.normal(size=(2, 3)).astype("float32"))
    cell(inputs, state)
    config = keras.saving.serialize_keras_object(cell)
    clone, clone_state = build(cell.get_config())
    clone(inputs, clone_state)
    clone.set_weights(cell.get_weights())
    clone._attention_mechanisms[0].setup_memory(memory, [4, 2])
    cell._attention_mechanisms[0].setup_memory(memory, [4, 2])
    expected, _ = cell(inputs, cell.get_initial_state(batch_size=2, dtype="float32"))
    output, next_state = clone(inputs, clone.get_initial_state(batch_size=2, dtype="float32"))
    np.testing.assert_allclose(expected, output, atol=1e-6)
    assert next_state.alignment_history.stack().shape == (1, 2, 4)
    assert isinstance(keras.saving.deserialize_keras_object(config), seq2seq.AttentionWrapper)


def test_the_mechanisms_leave_the_layers_registered_names_alone():
    """The seq2seq mechanisms share their class names with our attention layers; a
    saved model's `keras_attention>LuongAttention` must stay the layer."""
    from keras_attention import layers

    for name in ("BahdanauAttention", "LuongAttention"):
        assert keras.saving.get_registered_object(f"keras_attention>{name}") is getattr(
            layers, name
        )
        assert keras.saving.get_registered_object(f"keras_attention.seq2seq>{name}") is getattr(
            seq2seq, name
        )


def test_custom_cell_input_fn_builds_the_cell_for_its_depth(data):
    """An unbuilt cell gets the depth `cell_input_fn` returns, not inputs + attention:
    with the attention left out of the cell's input, the wrapper's cell output is the
    cell's own on the inputs."""
    cell = keras.layers.GRUCell(5)
    wrapper = seq2seq.AttentionWrapper(
        cell,
        seq2seq.LuongAttention(5, data["memory"]),
        attention_layer_size=4,
        cell_input_fn=lambda inputs, attention: inputs,
        output_attention=False,
    )
    inputs = data["query"]
    state = wrapper.get_initial_state(batch_size=10, dtype="float32")
    output, next_state = wrapper(inputs, state)
    assert cell.kernel.shape == (8, 15)
    expected, _ = cell(inputs, [np.zeros((10, 5), "float32")])
    np.testing.assert_allclose(output, expected, atol=1e-6)
    assert next_state.attention.shape == (10, 4)
