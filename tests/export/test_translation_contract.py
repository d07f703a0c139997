"""One translation contract: the exporter's signatures and the client's parser agree on it."""

from __future__ import annotations

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import types_pb2

from keras_attention.export import translation_scores, translation_signatures
from keras_attention.serving.server import predict
from keras_attention_client.wire import contract
from keras_attention_client.wire.translation import Translation


def test_the_contracts_copies_are_tensorflows_constants():
    # The client cannot import TensorFlow, so the wire keeps copies; the server uses TF's.
    assert contract.SERVE_TAG == tf.saved_model.SERVING
    assert contract.ASSETS_EXTRA == tf.saved_model.ASSETS_DIRECTORY + ".extra"
    assert contract.DEFAULT_SIGNATURE == tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
    assert predict.DEFAULT_SIGNATURE is tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY


def test_the_exporter_builds_its_signatures_from_the_contract():
    assert translation_signatures.TRANSLATION_OUTPUTS is contract.TRANSLATION_OUTPUTS
    assert translation_scores.SCORE_OUTPUTS is contract.SCORE_OUTPUTS
    assert translation_signatures.INPUT_KEY == contract.TEXT_INPUT
    assert translation_signatures.SERVING_DEFAULT == contract.DEFAULT_SIGNATURE


def test_an_export_matches_the_contract_and_the_client_parses_it(serving_session):
    for name, outputs in [
        (contract.DEFAULT_SIGNATURE, contract.TRANSLATION_OUTPUTS),
        (contract.BEAM_SEARCH, contract.TRANSLATION_OUTPUTS),
        (contract.SEARCH, {**contract.TRANSLATION_OUTPUTS, **contract.STEERING_OUTPUTS}),
        (contract.SAMPLE, contract.TRANSLATION_OUTPUTS),
        (contract.STEERED_BEAM_SEARCH, contract.TRANSLATION_OUTPUTS),
        (contract.SCORE_TRANSLATION, contract.SCORE_OUTPUTS),
    ]:
        signature = serving_session.signature_defs[name]
        found = {
            alias: (types_pb2.DataType.Name(info.dtype), len(info.tensor_shape.dim))
            for alias, info in signature.outputs.items()
            if not info.tensor_shape.unknown_rank  # n_best decides it
        }
        assert found.items() <= {a: (d, len(s)) for a, (d, s) in outputs.items()}.items()
        assert sorted(signature.outputs) == sorted(outputs)
        assert {
            alias: types_pb2.DataType.Name(info.dtype)
            for alias, info in signature.inputs.items()
            if alias in contract.DECODING_INPUTS.get(name, {})
        } == contract.DECODING_INPUTS.get(name, {})
    # steered_beam_search: [batch] strings only, each required (no default to fill).
    steered = serving_session.signature_defs[contract.STEERED_BEAM_SEARCH]
    assert {
        alias: (types_pb2.DataType.Name(info.dtype), len(info.tensor_shape.dim))
        for alias, info in steered.inputs.items()
    } == {alias: ("DT_STRING", 1) for alias in (contract.TEXT_INPUT, "prefix", "constraints")}
    assert not steered.defaults
    # The outputs of a request, the n-best ones included, have the contract's ranks.
    texts = np.array([b"you like the cat .", b""], dtype=object)
    for name, inputs, outputs in [
        (contract.BEAM_SEARCH, {}, contract.TRANSLATION_OUTPUTS),
        (contract.SEARCH, {}, {**contract.TRANSLATION_OUTPUTS, **contract.STEERING_OUTPUTS}),
        (
            contract.SEARCH,
            {"beam_width": np.int32(2), "n_best": np.int32(2)},
            {**contract.N_BEST_OUTPUTS, **contract.STEERING_OUTPUTS},
        ),
        (contract.SAMPLE, {"seed": np.int32(1)}, contract.TRANSLATION_OUTPUTS),
        (
            contract.STEERED_BEAM_SEARCH,
            dict.fromkeys(contract.STEERED_BEAM_SEARCH_INPUTS, np.array([b"", b""], object)),
            contract.TRANSLATION_OUTPUTS,
        ),
    ]:
        got = serving_session.run(name, {contract.TEXT_INPUT: texts, **inputs})
        assert {a: v.ndim for a, v in got.items()} == {a: len(s) for a, (_, s) in outputs.items()}
    n_best = serving_session.run(
        contract.SEARCH,
        {contract.TEXT_INPUT: texts, "beam_width": np.int32(3), "n_best": np.int32(3)},
    )
    listed = Translation.from_n_best_outputs(n_best)
    assert [len(row) for row in listed] == [3, 3]
    assert [t.text for t in listed[0]] == [b.decode() for b in n_best["translation"][0]]
    assert all(t.length == len(t.tokens) == t.attention.shape[0] for t in listed[0])
    assert [t.text for t in listed[1]] == ["", "", ""]  # the empty input
    texts = np.array([b"you like the cat .", b""], dtype=object)
    outputs = serving_session.run(contract.DEFAULT_SIGNATURE, {contract.TEXT_INPUT: texts})
    first, empty = Translation.from_outputs(outputs)
    assert first.length == len(first.tokens) == int(outputs["length"][0])
    assert first.attention.shape == (first.length, len(first.source_tokens))
    assert (empty.text, empty.length, empty.tokens) == ("", 0, [])
