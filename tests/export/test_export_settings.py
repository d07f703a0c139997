"""`ExportSettings` and `SignatureOptions`: keywords reach the right value, checks, defaults."""

import pytest

from keras_attention.export.export_settings import COMMAND_SETTINGS, ExportSettings
from keras_attention.export.signature_options import DEFAULT_MAX_BEAM_WIDTH, SignatureOptions
from keras_attention_client.wire.decoding_options import DEFAULT_LENGTH_PENALTY, DecodingOptions


def test_keywords_go_to_the_settings_or_their_signature_options():
    settings = ExportSettings.of(None, beam_width=3, jit_compile=True, weights="int8")
    assert settings.weights == "int8"
    assert settings.signatures == SignatureOptions(beam_width=3, jit_compile=True)
    assert (settings.precision, settings.shortlist) == (None, None)
    assert (COMMAND_SETTINGS.precision, COMMAND_SETTINGS.shortlist) == ("auto", "auto")


def test_signature_options_defaults_and_the_beam_search_decoding():
    options = SignatureOptions()
    assert options.length_penalty == DEFAULT_LENGTH_PENALTY
    assert options.beam_cap == max(DEFAULT_MAX_BEAM_WIDTH, options.beam_width)
    assert SignatureOptions(beam_width=20).beam_cap == 20
    assert options.beam_search == DecodingOptions(
        beam_width=4, length_penalty=DEFAULT_LENGTH_PENALTY
    )


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: SignatureOptions(beam_width=1), "beam_width=1"),
        (lambda: SignatureOptions(beam_width=4, max_beam_width=3), "max_beam_width=3"),
        (lambda: ExportSettings(max_output_length=0), "max_output_length=0"),
    ],
)
def test_bad_settings(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_of_names_a_value_that_is_not_its_class():
    # The keyword API before ExportSettings took beam_width as export_translator's 4th argument.
    with pytest.raises(TypeError, match="must be an ExportSettings. Received: 5"):
        ExportSettings.of(5)
    with pytest.raises(TypeError, match="must be a SignatureOptions. Received: 3"):
        SignatureOptions.of(3)
