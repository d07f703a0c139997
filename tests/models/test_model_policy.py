"""`model_with_policy`: the same weights, computing under another dtype policy."""

from __future__ import annotations

import numpy as np
import pytest

from keras_attention.models.model_policy import model_with_policy
from keras_attention.models.seq2seq import Seq2Seq


def _model(dtype=None):
    model = Seq2Seq(30, 40, embedding_dim=8, encoder_units=8, decoder_units=16, dtype=dtype)
    model.build()
    return model


def test_the_copy_computes_under_the_policy_with_the_same_weights():
    model = _model()
    copy = model_with_policy(model, "mixed_bfloat16")
    assert copy is not model
    assert copy.dtype_policy.name == "mixed_bfloat16"
    assert model.dtype_policy.name == "float32"
    assert len(copy.weights) == len(model.weights)
    for a, b in zip(copy.get_weights(), model.get_weights(), strict=True):
        assert a.dtype == b.dtype == np.float32  # mixed policies keep float32 variables
        np.testing.assert_array_equal(a, b)
    # Every layer's policy was replaced, not only the model's.
    assert {layer.dtype_policy.name for layer in copy._flatten_layers()} == {"mixed_bfloat16"}


def test_the_model_itself_when_it_already_computes_under_the_policy():
    model = _model()
    assert model_with_policy(model, "float32") is model


def test_an_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="Received: policy='float16'"):
        model_with_policy(_model(), "float16")
