"""`DecodingOptions`: what is given, the one set of defaults, and the checks of types and
combinations (ranges are the decoders')."""

import dataclasses

import pytest

from keras_attention_client.wire.decoding_options import DEFAULT_LENGTH_PENALTY, DecodingOptions


def test_nothing_is_given_by_default_and_the_defaults_fill_in():
    options = DecodingOptions()
    assert options.given() == {} and not options.searches and not options.listed
    assert options.value("beam_width") == 1
    assert options.value("length_penalty") == DEFAULT_LENGTH_PENALTY
    assert options.value("temperature") == 1.0
    assert options.value("top_k") is None


def test_given_options_and_keyword_changes():
    options = DecodingOptions.of(DecodingOptions(beam_width=4), n_best=2)
    assert options.given() == {"beam_width": 4, "n_best": 2}
    assert options.searches and options.listed
    assert DecodingOptions.of(None, sample=True, seed=3).given() == {"sample": True, "seed": 3}
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.beam_width = 2


@pytest.mark.parametrize(
    "fields, error, match",
    [
        ({"beam_width": 2.5}, TypeError, "beam_width must be an int"),
        ({"n_best": True}, TypeError, "n_best must be an int"),
        ({"length_penalty": "1"}, TypeError, "length_penalty must be a number"),
        ({"seed": 2**31}, ValueError, "seed must fit in int32"),
        ({"sample": True, "beam_width": 4}, ValueError, "cannot be combined with beam search"),
        ({"sample": True, "length_penalty": 1.0}, ValueError, "length_penalty=1.0"),
        ({"top_k": 3, "seed": 1}, ValueError, "top_k, seed only go with sample=True"),
    ],
)
def test_bad_values_and_combinations(fields, error, match):
    with pytest.raises(error, match=match):
        DecodingOptions(**fields)


def test_beam_width_and_n_best_one_go_with_sampling():
    options = DecodingOptions(sample=True, beam_width=1, n_best=1, temperature=0.5)
    assert options.conflicts() == ([], [])
