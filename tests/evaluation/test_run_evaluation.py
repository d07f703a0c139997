"""`evaluate_run`'s options: what it refuses before it reads the run."""

import pytest

from keras_attention.evaluation.run_evaluation import evaluate_run
from keras_attention_client.wire.decoding_options import DecodingOptions


@pytest.mark.parametrize(
    "options, match",
    [
        (DecodingOptions(beam_width=0), "beam_width` must be >= 1"),
        (DecodingOptions(beam_width=4, n_best=2), "takes no n_best"),
        (DecodingOptions(sample=True), "takes no sample"),
        (DecodingOptions(max_output_length=5), "takes no max_output_length"),
    ],
)
def test_options_evaluation_cannot_use_are_refused(tmp_path, options, match):
    with pytest.raises(ValueError, match=match):
        evaluate_run(tmp_path / "no-run", options)
