"""`max_steps`' old name, `max_length`: a keyword and call option that warns, a saved
config key that is read silently."""

import warnings

import numpy as np
import pytest
from helpers.reference_decoders import END, START, scripted_next_fn

from keras_attention.decoding import BeamSearch, GreedySearch, RandomSampling
from keras_attention.decoding.options_strategy import strategy_for
from keras_attention_client.wire.decoding_options import DecodingOptions

STRATEGIES = [GreedySearch, BeamSearch, RandomSampling]


@pytest.mark.parametrize("cls", STRATEGIES)
def test_the_old_keyword_warns_and_builds_the_same_strategy(cls):
    with pytest.warns(DeprecationWarning, match="max_steps") as record:
        old = cls(max_length=5, end_id=2)
    assert record[0].filename == __file__  # the caller's line, not the library's
    assert old.max_steps == 5
    assert old.get_config() == cls(max_steps=5, end_id=2).get_config()
    with pytest.warns(DeprecationWarning, match="max_steps"):
        assert old.max_length == 5
    with pytest.raises(TypeError, match="max_steps"):
        cls(max_steps=5, max_length=5)


@pytest.mark.parametrize("cls", STRATEGIES)
def test_a_config_saved_before_the_rename_loads_without_a_warning(cls):
    config = {**cls(max_steps=6).get_config()}
    config["max_length"] = config.pop("max_steps")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        restored = cls.from_config(config)
    assert restored.max_steps == 6
    assert restored.get_config() == cls(max_steps=6).get_config()


@pytest.mark.parametrize("cls", [GreedySearch, BeamSearch])
def test_the_old_call_option_warns_and_limits_the_steps_alike(cls):
    # A sentence that never ends: the call's limit sets its length.
    script = np.full([2, 8], 5)
    next_fn = scripted_next_fn(script, vocab_size=6)
    strategy = cls(max_steps=8, end_id=END)
    start_ids = np.full([2], START)
    new = strategy(next_fn, (), start_ids, max_steps=3)
    with pytest.warns(DeprecationWarning, match="max_steps") as record:
        old = strategy(next_fn, (), start_ids, max_length=3)
    assert record[0].filename == __file__
    assert new.tokens.shape[1] == 3
    np.testing.assert_array_equal(old.tokens, new.tokens)
    np.testing.assert_array_equal(old.lengths, [3, 3])


def test_strategy_for_takes_the_old_keyword_with_a_warning():
    with pytest.warns(DeprecationWarning, match="max_steps"):
        strategy = strategy_for(DecodingOptions(beam_width=2), max_length=7, end_id=3, pad_id=0)
    assert isinstance(strategy, BeamSearch) and strategy.max_steps == 7


def test_setting_the_old_attribute_warns_and_sets_the_steps():
    strategy = GreedySearch(max_steps=8, end_id=END)
    with pytest.warns(DeprecationWarning, match="max_steps"):
        strategy.max_length = 4
    assert strategy.max_steps == 4
    assert strategy.get_config() == GreedySearch(max_steps=4, end_id=END).get_config()


def test_a_subclass_that_still_takes_max_length_round_trips_its_config():
    class OldStyle(GreedySearch):
        def __init__(self, max_length=5, end_id=3, pad_id=0):
            super().__init__(max_length=max_length, end_id=end_id, pad_id=pad_id)

    with pytest.warns(DeprecationWarning, match="max_steps"):
        strategy = OldStyle(max_length=4)
    with pytest.warns(DeprecationWarning, match="max_steps"):
        restored = OldStyle.from_config(strategy.get_config())
    assert restored.max_steps == 4 and restored.get_config() == strategy.get_config()
