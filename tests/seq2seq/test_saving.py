"""`.keras` round trips of the seq2seq objects that are Keras layers (and losses), and of
a model that uses them: `get_config` / `from_config` give the same config, and a
reloaded object gives the original's outputs (the memory, no part of a config, bound
again)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention import seq2seq

pytestmark = pytest.mark.tensorflow_only

MECHANISMS = [
    (seq2seq.LuongAttention, {"scale": True}),
    (seq2seq.LuongMonotonicAttention, {"scale": True, "mode": "hard"}),
    (seq2seq.BahdanauAttention, {"normalize": True}),
    (seq2seq.BahdanauMonotonicAttention, {"normalize": True, "score_bias_init": -1.0}),
]


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    return {
        "memory": rng.normal(size=(2, 5, 6)).astype("float32"),
        "lengths": np.array([5, 3]),
        "query": rng.normal(size=(2, 8)).astype("float32"),
        "inputs": rng.normal(size=(2, 4, 3)).astype("float32"),
        "tokens": rng.integers(1, 7, size=(2, 4)),
    }


def reload(obj, tmp_path, name="object"):
    path = tmp_path / f"{name}.keras"
    keras.saving.save_model(obj, path)
    return keras.saving.load_model(path)


def without_build_configs(config):
    """`config` without the nested layers' build configs (a built layer has one, the
    same layer rebuilt from its config has none until it builds)."""
    if isinstance(config, dict):
        return {k: without_build_configs(v) for k, v in config.items() if k != "build_config"}
    if isinstance(config, list):
        return [without_build_configs(item) for item in config]
    return config


def assert_config_round_trip(obj):
    restored = type(obj).from_config(obj.get_config())
    assert without_build_configs(restored.get_config()) == without_build_configs(obj.get_config())


def assert_same(first, second):
    for a, b in zip(tf.nest.flatten(first), tf.nest.flatten(second), strict=True):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b))


def randomize(layer, seed=0):
    """Weights away from their initial values (a reload that lost them would show)."""
    rng = np.random.default_rng(seed)
    layer.set_weights([w + rng.normal(scale=0.3, size=w.shape) for w in layer.get_weights()])


@pytest.mark.parametrize("cls, kwargs", MECHANISMS, ids=lambda x: getattr(x, "__name__", ""))
def test_mechanism_round_trip(cls, kwargs, data, tmp_path):
    mechanism = cls(8, memory=data["memory"], memory_sequence_length=data["lengths"], **kwargs)
    state = mechanism.initial_state(2, tf.float32)
    mechanism([data["query"], state])
    randomize(mechanism)
    mechanism.setup_memory(data["memory"], data["lengths"])  # keys from the new weights
    expected = mechanism([data["query"], state])
    assert_config_round_trip(mechanism)
    restored = reload(mechanism, tmp_path)
    assert type(restored) is cls and not restored.memory_initialized
    assert [w.shape for w in restored.weights] == [w.shape for w in mechanism.weights]
    restored.setup_memory(data["memory"], data["lengths"])
    assert_same(restored([data["query"], state]), expected)


def make_wrapper(data, beam_width=1, **kwargs):
    memory = seq2seq.tile_batch(data["memory"], beam_width)
    lengths = seq2seq.tile_batch(data["lengths"], beam_width)
    mechanism = seq2seq.BahdanauAttention(7, memory=memory, memory_sequence_length=lengths)
    return seq2seq.AttentionWrapper(
        keras.layers.GRUCell(8), mechanism, attention_layer_size=5, **kwargs
    )


def bind(wrapper, data, beam_width=1):
    """Binds the test memory to the wrapper's (only) mechanism."""
    (mechanism,) = wrapper.attention_mechanisms
    mechanism.setup_memory(
        seq2seq.tile_batch(data["memory"], beam_width),
        seq2seq.tile_batch(data["lengths"], beam_width),
    )


def test_attention_wrapper_round_trip(data, tmp_path):
    wrapper = make_wrapper(data, alignment_history=True)
    wrapper(data["inputs"][:, 0], wrapper.get_initial_state(batch_size=2, dtype=tf.float32))
    randomize(wrapper)
    bind(wrapper, data)
    state = wrapper.get_initial_state(batch_size=2, dtype=tf.float32)
    output, next_state = wrapper(data["inputs"][:, 0], state)
    assert_config_round_trip(wrapper)
    restored = reload(wrapper, tmp_path)
    assert restored.built and len(restored.weights) == len(wrapper.weights)
    bind(restored, data)
    state = restored.get_initial_state(batch_size=2, dtype=tf.float32)
    restored_output, restored_state = restored(data["inputs"][:, 0], state)
    assert_same(restored_output, output)
    assert_same(restored_state.alignment_history.stack(), next_state.alignment_history.stack())
    assert_same(
        restored_state._replace(alignment_history=()), next_state._replace(alignment_history=())
    )


SAMPLERS = [
    lambda: seq2seq.TrainingSampler(time_major=False),
    lambda: seq2seq.ScheduledEmbeddingTrainingSampler(
        0.5, embedding_fn=keras.layers.Embedding(7, 3), seed=1, scheduling_seed=2
    ),
    lambda: seq2seq.ScheduledOutputTrainingSampler([0.2, 0.8], seed=3),
    lambda: seq2seq.GreedyEmbeddingSampler(keras.layers.Embedding(7, 3)),
    lambda: seq2seq.SampleEmbeddingSampler(softmax_temperature=0.5, seed=4),
]


@pytest.mark.parametrize("make", SAMPLERS)
def test_sampler_config_round_trip(make):
    sampler = make()
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(sampler))
    assert type(restored) is type(sampler)
    assert restored.get_config() == sampler.get_config()


def test_samplers_of_callables_say_they_cannot_be_serialized():
    custom = seq2seq.CustomSampler(lambda inputs: inputs, lambda **_: 0, lambda **_: 0)
    with pytest.raises(NotImplementedError, match="cannot be serialized"):
        custom.get_config()
    greedy = seq2seq.GreedyEmbeddingSampler(lambda ids: tf.one_hot(ids, 3))
    with pytest.raises(NotImplementedError, match="not a Keras layer"):
        greedy.get_config()


def test_basic_decoder_with_a_training_sampler_round_trip(data, tmp_path):
    wrapper = make_wrapper(data)
    decoder = seq2seq.BasicDecoder(
        wrapper, seq2seq.TrainingSampler(), output_layer=keras.layers.Dense(4), name="dec"
    )

    def run(decoder):
        state = decoder.cell.get_initial_state(batch_size=2, dtype=tf.float32)
        return decoder(data["inputs"], initial_state=state, sequence_length=[4, 2])

    run(decoder)
    randomize(decoder)
    bind(wrapper, data)
    expected = run(decoder)
    assert_config_round_trip(decoder)
    restored = reload(decoder, tmp_path)
    assert isinstance(restored.sampler, seq2seq.TrainingSampler)
    assert isinstance(restored.cell, seq2seq.AttentionWrapper)
    bind(restored.cell, data)
    assert_same(run(restored), expected)


def test_basic_decoder_with_a_greedy_sampler_keeps_its_embedding(tmp_path):
    embedding = keras.layers.Embedding(6, 3)
    decoder = seq2seq.BasicDecoder(
        keras.layers.GRUCell(8),
        seq2seq.GreedyEmbeddingSampler(embedding),
        output_layer=keras.layers.Dense(6),
        maximum_iterations=5,
    )

    def run(decoder):
        state = decoder.cell.get_initial_state(batch_size=2)
        return decoder(None, initial_state=state, start_tokens=[1, 2], end_token=0)

    run(decoder)
    randomize(decoder)
    randomize(embedding, seed=1)
    expected = run(decoder)
    restored = reload(decoder, tmp_path)
    assert len(restored.weights) == len(decoder.weights)  # the sampler's are not the decoder's
    np.testing.assert_array_equal(
        restored.sampler.embedding_fn.get_weights()[0], embedding.get_weights()[0]
    )
    assert_same(run(restored), expected)


def test_beam_search_decoder_round_trip(data, tmp_path):
    wrapper = make_wrapper(data, beam_width=3)
    decoder = seq2seq.BeamSearchDecoder(
        wrapper,
        beam_width=3,
        embedding_fn=keras.layers.Embedding(6, 3),
        output_layer=keras.layers.Dense(6),
        maximum_iterations=4,
        length_penalty_weight=0.6,
        coverage_penalty_weight=0.2,
    )

    def run(decoder):
        state = decoder.cell.get_initial_state(batch_size=6, dtype=tf.float32)
        return decoder(None, start_tokens=[1, 1], end_token=0, initial_state=state)

    run(decoder)
    randomize(decoder)
    bind(wrapper, data, beam_width=3)
    expected, _, expected_lengths = run(decoder)
    assert_config_round_trip(decoder)
    restored = reload(decoder, tmp_path)
    bind(restored.cell, data, beam_width=3)
    outputs, _, lengths = run(restored)
    assert_same(outputs, expected)
    assert_same(lengths, expected_lengths)


def test_sequence_loss_round_trip(tmp_path):
    loss = seq2seq.SequenceLoss(average_across_batch=False, sum_over_timesteps=False)
    assert_config_round_trip(loss)
    restored = keras.losses.deserialize(keras.losses.serialize(loss))
    assert type(restored) is seq2seq.SequenceLoss
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 3, 5)).astype("float32")
    targets, weights = rng.integers(0, 5, size=(2, 3)), rng.random((2, 3)).astype("float32")
    assert_same(restored(targets, logits, weights), loss(targets, logits, weights))

    model = keras.Sequential([keras.Input((3, 4)), keras.layers.Dense(5)])
    model.compile(optimizer="sgd", loss=seq2seq.SequenceLoss())
    reloaded = reload(model, tmp_path, "model")
    assert type(reloaded.loss) is seq2seq.SequenceLoss
    assert reloaded.loss.get_config() == model.loss.get_config()


@keras.saving.register_keras_serializable(package="keras_attention_tests")
class AttentionTranslator(keras.Model):
    """An encoder whose outputs are the memory; the decoder cell, an `AttentionWrapper`,
    runs inside `keras.layers.RNN` and inside a `BasicDecoder`."""

    def __init__(self, vocab_size=7, units=6, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size, self.units = vocab_size, units
        self.embedding = keras.layers.Embedding(vocab_size, units)
        self.encoder = keras.layers.GRU(units, return_sequences=True)
        self.mechanism = seq2seq.LuongAttention(units)
        self.wrapper = seq2seq.AttentionWrapper(
            keras.layers.GRUCell(units), self.mechanism, attention_layer_size=units
        )
        self.rnn = keras.layers.RNN(self.wrapper, return_sequences=True)
        self.projection = keras.layers.Dense(vocab_size)
        self.decoder = seq2seq.BasicDecoder(
            self.wrapper, seq2seq.TrainingSampler(), output_layer=self.projection
        )

    def call(self, inputs):
        source, target = inputs
        self.mechanism.setup_memory(self.encoder(self.embedding(source)))
        embedded = self.embedding(target)
        state = self.wrapper.get_initial_state(batch_size=tf.shape(target)[0], dtype=tf.float32)
        outputs, _, _ = self.decoder(embedded, initial_state=state)
        return self.projection(self.rnn(embedded)), outputs.rnn_output

    def get_config(self):
        return {**super().get_config(), "vocab_size": self.vocab_size, "units": self.units}


def test_model_with_the_wrapper_in_an_rnn_and_a_basic_decoder(data, tmp_path):
    model = AttentionTranslator()
    inputs = (data["tokens"], data["tokens"][:, ::-1].copy())
    model(inputs)
    randomize(model)
    expected = model(inputs)
    restored = reload(model, tmp_path)
    assert len(restored.weights) == len(model.weights)
    assert_same(restored(inputs), expected)
