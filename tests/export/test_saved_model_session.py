"""The one Session runner, which the export's check and the local server share, runs an
export as TF Serving does.

`keras_attention.export.SavedModelSession` (check-export) is the server's
`keras_attention.saved_model_session.SavedModelSession`; it is held here to the
stand-in export's NumPy reference, through both names.
"""

import numpy as np
import pytest
from helpers.stand_in_export import build_translator_export, reference_outputs

import keras_attention.export
from keras_attention.saved_model_session import SavedModelSession

SESSIONS = pytest.mark.parametrize(
    "session_class",
    [keras_attention.export.SavedModelSession, SavedModelSession],
    ids=["export", "server"],
)
TEXTS = ["the cat sleeps", "a", ""]


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    return build_translator_export(tmp_path_factory.mktemp("stand_in"), 1)


@SESSIONS
@pytest.mark.parametrize("signature", ["serving_default", "beam_search"])
def test_both_sessions_give_the_reference_outputs(export, session_class, signature):
    expected = reference_outputs(TEXTS, signature=signature)
    with session_class(export) as session:
        assert set(session.signature_defs) >= {"serving_default", "beam_search"}
        outputs = session.run(signature, {"text": np.array(TEXTS, dtype=object)})
    assert set(outputs) == set(expected)
    for key, value in expected.items():
        if value.dtype == object:
            assert outputs[key].tolist() == value.tolist(), key
        else:
            np.testing.assert_allclose(outputs[key], value, rtol=1e-6, err_msg=key)


@SESSIONS
def test_both_sessions_refuse_an_unknown_signature_and_wrong_inputs(export, session_class):
    with session_class(export) as session:
        with pytest.raises(KeyError, match="nope"):
            session.run("nope", {"text": np.array(["a"], dtype=object)})
        with pytest.raises(ValueError):
            session.run("serving_default", {"words": np.array(["a"], dtype=object)})


def test_the_export_and_the_server_share_one_session_class():
    assert keras_attention.export.SavedModelSession is SavedModelSession
