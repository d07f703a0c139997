"""`drop_finished_loop`: the rows of finished sentences leave the loop, the results stay.

Run through the strategies that use it (`drop_finished=True`), against the same
strategies' whole-batch loop and the reference decoders.
"""

import numpy as np
import pytest
import tensorflow as tf
from helpers.reference_decoders import END, PAD, START, PrefixModel

from keras_attention.decoding import BeamSearch, DecodeResult, GreedySearch
from tests.decoding.test_beam_search import assert_same_results
from tests.decoding.test_greedy_search import MODES, run


def _script_in_state(script: np.ndarray, vocab_size: int, tv: int, batch_sizes: list):
    """A `next_fn` that follows `script` like `scripted_next_fn`, but finds each
    row's script line in its state (as `drop_finished` needs), records the batch
    size of each call (eagerly), and attends to `one_hot(row, tv)`, so that an
    attention row written at the wrong position shows."""

    def next_fn(step, token_ids, state):
        batch_sizes.append(int(tf.shape(token_ids)[0]) if tf.executing_eagerly() else None)
        ids = tf.gather(state["script"], step, axis=1)
        logits = tf.one_hot(ids, vocab_size) * 1e9 + tf.cast(state["row"], tf.float32)[:, None]
        return logits, state, tf.one_hot(state["row"], tv)

    state = {"script": tf.constant(script, tf.int32), "row": tf.range(len(script), dtype=tf.int32)}
    return next_fn, state


@pytest.mark.parametrize("mode", MODES)
def test_greedy_gives_the_same_results_and_shrinks_the_batch(mode):
    # Sentences end at steps 2, 1, 4 and 1 (0-based): after step 1 two rows
    # leave, after step 2 a third; the last runs alone to step 4.
    script = np.array(
        [
            [5, 6, END, 7, 7, 7],
            [5, END, 8, 8, 8, 8],
            [9, 8, 7, 6, END, 6],
            [4, END, 4, 4, 4, 4],
        ]
    )
    results, sizes = {}, {}
    for drop in (False, True):
        sizes[drop] = []
        next_fn, state = _script_in_state(script, vocab_size=10, tv=4, batch_sizes=sizes[drop])
        strategy = GreedySearch(max_steps=6, drop_finished=drop)
        strategy.drop_min_rows = 1  # drop each sentence as it finishes
        results[drop] = run(strategy, next_fn, state, tf.fill([4], START), mode)
    kept, dropped = results[False], results[True]
    np.testing.assert_array_equal(
        dropped.tokens.numpy(),
        [
            [5, 6, PAD, PAD, PAD],
            [5, PAD, PAD, PAD, PAD],
            [9, 8, 7, 6, PAD],
            [4, PAD, PAD, PAD, PAD],
        ],
    )
    for field in DecodeResult._fields:  # the logits are exact, so rounding cannot differ
        np.testing.assert_array_equal(getattr(dropped, field), getattr(kept, field), err_msg=field)
    if mode == "eager":  # one model call per step, on the running rows only
        assert sizes[False] == [4, 4, 4, 4, 4]
        assert sizes[True] == [4, 4, 2, 1, 1]


def test_drop_finished_waits_for_drop_min_rows():
    # 40 sentences; sentence i ends at step i % 10 (0-based), so 4 end at each step.
    batch, max_steps = 40, 12
    ends = np.arange(batch) % 10
    script = np.full([batch, max_steps], 5)
    script[np.arange(batch), ends] = END
    sizes = []
    next_fn, state = _script_in_state(script, vocab_size=10, tv=3, batch_sizes=sizes)
    strategy = GreedySearch(max_steps=max_steps, drop_finished=True)
    strategy.drop_min_rows = 16
    result = strategy(next_fn, state, tf.fill([batch], START))
    np.testing.assert_array_equal(result.lengths.numpy(), ends)
    # The rows in the loop at each step: the finished ones leave once 16 of
    # them (or all) have finished.
    expected, running, finished = [], batch, 0
    for _ in range(10):
        expected.append(running)
        finished += 4
        if finished >= 16 or finished == running:
            running, finished = running - finished, 0
    assert sizes == expected == [40, 40, 40, 40, 24, 24, 24, 24, 8, 8]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_drop_finished_matches_numpy_greedy_on_prefix_model(seed, mode):
    model = PrefixModel(batch_size=5, max_steps=4, seed=seed)
    strategy = GreedySearch(max_steps=4, drop_finished=True)
    result = run(strategy, model.next_fn, model.initial_state(), model.start_ids(), mode)
    for b in range(5):
        model.assert_result_row(result, b, *model.greedy(b))


def test_drop_finished_keeps_every_row_under_xla():
    # Under XLA every row stays (static shapes); the results are greedy's.
    model = PrefixModel(batch_size=3, max_steps=4, seed=0)
    decode = tf.function(
        lambda state, ids: GreedySearch(max_steps=4, drop_finished=True)(model.next_fn, state, ids),
        jit_compile=True,
    )
    result = decode(model.initial_state(), model.start_ids())
    refs = [model.greedy(b) for b in range(3)]
    assert result.tokens.shape[1] == max(len(tokens) + int(ended) for tokens, ended in refs)
    for b, (tokens, ended) in enumerate(refs):
        model.assert_result_row(result, b, tokens, ended)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("beam_width, n_best", [(2, None), (3, 3)])
def test_beam_search_gives_the_same_results_and_shrinks_the_batch(mode, beam_width, n_best):
    model = PrefixModel(batch_size=8, max_steps=5, seed=3)
    rows, results = {}, {}
    for drop in (False, True):
        rows[drop] = []

        def next_fn(step, token_ids, state, seen=rows[drop]):
            if tf.executing_eagerly():
                seen.append(int(tf.shape(token_ids)[0]))
            return model.next_fn(step, token_ids, state)

        strategy = BeamSearch(beam_width=beam_width, max_steps=5, n_best=n_best, drop_finished=drop)
        strategy.drop_min_rows = 1  # drop each sentence as it finishes
        results[drop] = run(strategy, next_fn, model.initial_state(), model.start_ids(), mode)
    assert_same_results(results[True], results[False])
    if mode == "eager":
        assert len(rows[True]) == len(rows[False]) and set(rows[False]) == {8 * beam_width}
        # Whole sentences (beam_width rows each) leave, and fewer rows run in all.
        assert all(n % beam_width == 0 for n in rows[True])
        assert rows[True] == sorted(rows[True], reverse=True) and rows[True][-1] < 8 * beam_width
