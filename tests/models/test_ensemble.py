"""`Ensemble`: one decoding step and teacher forcing against the members' own outputs
combined in NumPy, searches against teacher-forced scores, save/load, errors."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.decoding import BeamSearch, GreedySearch
from keras_attention.models import Ensemble
from keras_attention.models.model_policy import model_with_policy
from keras_attention.models.seq2seq import Seq2Seq

SOURCE_VOCABULARY, TARGET_VOCABULARY = 20, 30
START_ID, END_ID = 2, 3


def log_softmax(x):
    x = np.asarray(x, np.float64)
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def reference_log_probs(members, source_ids, target_in):
    """The ensemble's teacher-forced log-probabilities `(batch, Tt, V)`, in NumPy from
    each member's own logits: `log_softmax(mean_i log_softmax(logits_i))`."""
    logits = [member((source_ids, target_in)).numpy() for member in members]
    return log_softmax(np.mean([log_softmax(value) for value in logits], axis=0))


@pytest.fixture(scope="module")
def members():
    keras.utils.set_random_seed(7)
    sizes = dict(embedding_dim=8, encoder_units=8)
    first = Seq2Seq(SOURCE_VOCABULARY, TARGET_VOCABULARY, decoder_units=16, **sizes)
    second = Seq2Seq(
        SOURCE_VOCABULARY,
        TARGET_VOCABULARY,
        decoder_units=12,
        attention="bahdanau",
        cell="lstm",
        **sizes,
    )
    for member in (first, second):
        member.build()
    return [first, second]


@pytest.fixture(scope="module")
def source_ids():
    return tf.constant(np.random.default_rng(0).integers(4, SOURCE_VOCABULARY, (3, 5)), tf.int32)


def test_a_step_is_the_mean_of_the_members_log_probabilities(members, source_ids):
    ensemble = Ensemble(members)
    tokens = tf.constant([START_ID, 5, 9], tf.int32)
    state = ensemble.initial_decode_state(source_ids)
    logits, new_state, attention = ensemble.next_logits(0, tokens, state)
    outputs = [
        member.next_logits(0, tokens, member.initial_decode_state(source_ids)) for member in members
    ]
    expected = np.mean([log_softmax(member_logits) for member_logits, _, _ in outputs], axis=0)
    np.testing.assert_allclose(logits.numpy(), expected, atol=1e-5)
    assert len(new_state) == 2
    for member_state, (_, expected_state, _) in zip(new_state, outputs, strict=True):
        tf.nest.map_structure(
            lambda a, b: np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-6),
            member_state,
            expected_state,
        )
    expected_attention = np.mean([a.numpy() for _, _, a in outputs], axis=0)
    np.testing.assert_allclose(attention.numpy(), expected_attention, atol=1e-6)


def test_a_shortlist_step_combines_each_members_candidate_logits(members, source_ids):
    ensemble = Ensemble(members)
    candidates = tf.constant([0, 2, 3, 7, 11, 19], tf.int32)
    tokens = tf.constant([START_ID, 5, 9], tf.int32)
    logits, _, _ = ensemble.next_logits(
        0,
        tokens,
        ensemble.initial_decode_state(source_ids),
        projection=ensemble.output_projection(candidates),
    )
    expected = np.mean(
        [
            log_softmax(
                member.next_logits(
                    0,
                    tokens,
                    member.initial_decode_state(source_ids),
                    projection=member.output_projection(candidates),
                )[0]
            )
            for member in members
        ],
        axis=0,
    )
    np.testing.assert_allclose(logits.numpy(), expected, atol=1e-5)


def test_teacher_forcing_is_the_mean_of_the_members(members, source_ids):
    target_in = tf.constant([[START_ID, 4, 5], [START_ID, 6, 0], [START_ID, 7, 8]], tf.int32)
    logits, attention = Ensemble(members).call_with_attention((source_ids, target_in))
    np.testing.assert_allclose(
        log_softmax(logits.numpy()), reference_log_probs(members, source_ids, target_in), atol=1e-5
    )
    expected = np.mean(
        [m.call_with_attention((source_ids, target_in))[1].numpy() for m in members], axis=0
    )
    np.testing.assert_allclose(attention.numpy(), expected, atol=1e-6)


@pytest.mark.parametrize(
    "strategy",
    [
        GreedySearch(max_steps=6, end_id=END_ID),
        BeamSearch(beam_width=3, length_penalty=0.0, max_steps=6, end_id=END_ID),
    ],
    ids=["greedy", "beam"],
)
def test_a_search_scores_what_teacher_forcing_the_members_scores(members, source_ids, strategy):
    """Each translation's score is the ensemble's teacher-forced log-probability of its
    tokens (beam search reorders every member's state with its beams), and greedy search
    emits the most probable token of the mean at every step."""
    ensemble = Ensemble(members)
    state = ensemble.initial_decode_state(source_ids)
    start = tf.fill([source_ids.shape[0]], START_ID)
    result = strategy(ensemble.step_function(state), state, start)
    tokens, lengths = result.tokens.numpy(), result.lengths.numpy()
    steps = tokens.shape[1]
    for row, length in enumerate(lengths):
        emitted = list(tokens[row, :length]) + ([END_ID] if length < steps else [])
        target_in = tf.constant([[START_ID, *emitted[:-1]]], tf.int32)
        log_probs = reference_log_probs(members, source_ids[row : row + 1], target_in)[0]
        expected = sum(log_probs[t, token] for t, token in enumerate(emitted))
        np.testing.assert_allclose(result.scores.numpy()[row], expected, atol=1e-5)
        if isinstance(strategy, GreedySearch):
            assert emitted == list(log_probs.argmax(axis=-1)[: len(emitted)])


def test_one_member_decodes_as_the_model_itself(members, source_ids):
    model = members[0]
    beam = BeamSearch(beam_width=3, max_steps=6, end_id=END_ID)
    start = tf.fill([source_ids.shape[0]], START_ID)
    results = []
    for decoded in (model, Ensemble([model])):
        state = decoded.initial_decode_state(source_ids)
        results.append(beam(decoded.step_function(state), state, start))
    np.testing.assert_array_equal(results[0].tokens.numpy(), results[1].tokens.numpy())
    np.testing.assert_allclose(results[0].scores.numpy(), results[1].scores.numpy(), atol=1e-5)


def test_save_load_and_another_policy_keep_the_members(members, source_ids, tmp_path):
    ensemble = Ensemble(members)
    target_in = tf.constant([[START_ID, 4, 5]] * 3, tf.int32)
    expected = ensemble((source_ids, target_in)).numpy()
    path = tmp_path / "ensemble.keras"
    ensemble.save(path)
    loaded = keras.saving.load_model(path, compile=False)
    assert isinstance(loaded, Ensemble) and len(loaded.members) == 2
    np.testing.assert_allclose(loaded((source_ids, target_in)).numpy(), expected, atol=1e-6)
    bfloat16 = model_with_policy(ensemble, "mixed_bfloat16")
    assert bfloat16.dtype_policy.name == "mixed_bfloat16"
    assert [m.dtype_policy.name for m in bfloat16.members] == ["mixed_bfloat16"] * 2
    for own, copied in zip(ensemble.get_weights(), bfloat16.get_weights(), strict=True):
        np.testing.assert_array_equal(own, copied)


def test_members_must_share_vocabulary_sizes_and_policy(members):
    with pytest.raises(ValueError, match="at least one member"):
        Ensemble([])
    other = Seq2Seq(SOURCE_VOCABULARY, TARGET_VOCABULARY + 1, embedding_dim=8, encoder_units=8)
    with pytest.raises(ValueError, match=r"same vocabulary sizes.*\(20, 30\), \(20, 31\)"):
        Ensemble([members[0], other])
    bfloat16 = Seq2Seq(SOURCE_VOCABULARY, TARGET_VOCABULARY, dtype="mixed_bfloat16")
    with pytest.raises(ValueError, match="same dtype policy"):
        Ensemble([members[0], bfloat16])
