"""`describe_decoding`: the decoding of each signature, as the export manifest records it."""

from __future__ import annotations

from typing import Any

from keras_attention.export.translation_signatures import TranslationSignatures
from keras_attention_client.wire.contract import STEERED_BEAM_SEARCH


def describe_decoding(signatures: TranslationSignatures) -> dict[str, dict[str, Any]]:
    """Signature name -> its strategy's config (`ExportManifest.decoding`).

    `serving_default` (greedy) and `beam_search` (beam); with decoding
    inputs also `search` (greedy or beam, up to `max_beam_width`) and
    `sample`, each with `inputs`: alias -> `{"default", "range"}`, and
    `steered_beam_search` (beam, as `beam_search`).
    """
    decoding = {
        name: _strategy_config(strategy)
        for name, strategy in (
            ("serving_default", signatures.greedy_strategy),
            ("beam_search", signatures.beam_strategy),
        )
    }
    decoding["serving_default"]["search"] = "greedy"
    decoding["beam_search"]["search"] = "beam"
    if signatures.decoding_inputs:
        decoding["search"] = {
            **_strategy_config(signatures.beam_strategy),
            "search": "greedy or beam (the beam_width input)",
            "max_beam_width": signatures.max_beam_width,
        }
        decoding["search"].pop("beam_width", None)
        decoding[STEERED_BEAM_SEARCH] = {
            **_strategy_config(signatures.beam_strategy),
            "search": "beam, steered per row (the prefix and constraints inputs)",
        }
        decoding["sample"] = {
            **_strategy_config(signatures.sample_strategy),
            "search": "sample",
        }
        for name in ("search", "sample"):
            ranges = signatures.input_ranges(name)
            decoding[name]["inputs"] = {
                alias: {"default": default, "range": ranges[alias]}
                for alias, default in signatures.input_defaults(name).items()
            }
    return decoding


def _strategy_config(strategy) -> dict:
    config = dict(strategy.get_config())
    config.pop("name", None)
    return config
