"""The request a `translate` call sends: its signature and decoding inputs, and the error
for decoding inputs a served version lacks."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from keras_attention_client.model_metadata import ModelMetadata
from keras_attention_client.wire.contract import (
    BEAM_SEARCH,
    CONSTRAINT_SEPARATOR,
    DECODING_INPUTS,
    DEFAULT_SIGNATURE,
    SAMPLE,
    SEARCH,
    STEERED_BEAM_SEARCH,
)
from keras_attention_client.wire.decoding_options import (
    SAMPLING_FIELDS,
    SEARCH_FIELDS,
    DecodingOptions,
)
from keras_attention_client.wire.errors import ServingError


def decoding_request(
    signature_name: str, options: DecodingOptions, *, explicit_signature: bool = True
) -> tuple[str, dict[str, np.ndarray]]:
    """The signature to call and the decoding inputs to send, as scalar arrays.

    `options.sample` calls `sample`; otherwise any of `beam_width`, `n_best`,
    `length_penalty`, `max_output_length` given calls `search` (unless a
    signature other than `serving_default`, `beam_search` and `search` was
    chosen explicitly, `explicit_signature`). Without them the request goes
    to `signature_name`, `text` only, as before exports took decoding inputs
    (`serving_default` and `beam_search` take no other input, so every REST
    caller and a batching server keep working). Only the options given are
    sent (`DecodingOptions` has checked their types and combination).
    """
    if options.sample:
        signature_name = SAMPLE
        names = (*SAMPLING_FIELDS, "max_output_length")
    else:
        if options.searches and (
            not explicit_signature or signature_name in (DEFAULT_SIGNATURE, BEAM_SEARCH)
        ):
            signature_name = SEARCH
        names = SEARCH_FIELDS
    dtypes = DECODING_INPUTS.get(signature_name, DECODING_INPUTS[SEARCH])
    inputs = {}
    for alias in names:
        value = getattr(options, alias)
        if value is not None:
            inputs[alias] = np.int32(value) if dtypes[alias] == "DT_INT32" else np.float32(value)
    return signature_name, inputs


class Steering(NamedTuple):
    """A `translate` call's checked steering: one prefix and one list of phrases per text
    (`None`: not given), and the signature and decoding inputs to send."""

    signature_name: str
    inputs: dict[str, np.ndarray]
    prefixes: list[str] | None
    constraints: list[list[str]] | None

    def rows(self, indices: Sequence[int]) -> dict[str, np.ndarray]:
        """The `prefix` and `constraints` inputs of the batch of texts `indices` (those
        given; both, `""` for none, for `steered_beam_search`, which requires them)."""
        every = self.signature_name == STEERED_BEAM_SEARCH
        prefixes, constraints = self.prefixes, self.constraints
        rows = {}
        if prefixes is not None or every:
            rows["prefix"] = [prefixes[i] if prefixes is not None else "" for i in indices]
        if constraints is not None or every:
            rows["constraints"] = [
                CONSTRAINT_SEPARATOR.join(p for p in constraints[i] if p.strip())
                if constraints is not None
                else ""
                for i in indices
            ]
        return {alias: np.array(values, dtype=object) for alias, values in rows.items()}


def steering(
    request: tuple[str, dict[str, np.ndarray]],
    options: DecodingOptions,
    count: int,
    prefixes: Sequence[str] | None,
    next_words: int,
    constraints: Sequence[Sequence[str]] | None,
) -> Steering:
    """Checks a `translate` call's steering arguments for `count` texts and routes it.

    `request` is `decoding_request`'s answer. Prefixes, next words or
    constraints call `search` (with `prefix`, `constraints` named `[]` in
    the inputs, so that the export is checked for them; each batch sends its
    own rows), unless the signature is `steered_beam_search`, which takes
    them per row and no other input.

    Raises:
        ValueError: a bad argument, steering with sampling, or a
            `steered_beam_search` call with decoding options or `next_words`.
    """
    signature_name, inputs = request
    if prefixes is not None:
        prefixes = list(prefixes)
        if len(prefixes) != count or not all(isinstance(p, str) for p in prefixes):
            raise ValueError(
                "prefixes must hold one str per text. "
                f"Received: {len(prefixes)} prefixes for {count} texts"
            )
    if isinstance(next_words, bool) or not isinstance(next_words, int) or next_words < 0:
        raise ValueError(f"next_words must be an int >= 0. Received: {next_words!r}")
    if constraints is not None:
        constraints = [[row] if isinstance(row, str) else list(row) for row in constraints]
        if len(constraints) != count or not all(
            isinstance(p, str) and CONSTRAINT_SEPARATOR not in p for row in constraints for p in row
        ):
            raise ValueError(
                "constraints must hold one list of phrases (str, without tabs) per text. "
                f"Received: {len(constraints)} lists for {count} texts"
            )
    steered = prefixes is not None or next_words or constraints is not None
    if steered and options.sample:
        raise ValueError("prefixes, next_words and constraints steer search, not sampling")
    if signature_name == STEERED_BEAM_SEARCH:
        if inputs or next_words:
            given = sorted(inputs) + (["next_words"] if next_words else [])
            raise ValueError(
                "steered_beam_search decodes at the export's beam width and length penalty "
                "and takes only prefixes and constraints; call search for decoding options "
                f"or next words. Received: {', '.join(given)}"
            )
    elif steered:
        signature_name = SEARCH
        if next_words:
            inputs["next_words"] = np.int32(next_words)
        if prefixes is not None:  # each batch sends its own; named here to check the export
            inputs["prefix"] = np.array([], dtype=object)
        if constraints is not None:
            inputs["constraints"] = np.array([], dtype=object)
    return Steering(signature_name, inputs, prefixes, constraints)


def lacking_inputs_error(
    metadata: ModelMetadata, signature_name: str, lacking: Sequence[str], detail: str = ""
) -> ServingError:
    """`INVALID_ARGUMENT` for decoding inputs a served version's signature does not take
    (or for its lacking `search` or `sample` signature)."""
    if signature_name not in metadata.signatures:
        return ServingError(
            "INVALID_ARGUMENT",
            f"Model {metadata.name!r} version {metadata.version} has no {signature_name!r} "
            f"signature (signatures: {sorted(metadata.signatures)}): it was exported before "
            "exports took decoding inputs. Re-export it with this keras-attention version to "
            "send decoding options, or leave them out (its serving_default and beam_search "
            f"signatures decode as exported).{detail}",
        )
    signature = metadata.signatures[signature_name]
    return ServingError(
        "INVALID_ARGUMENT",
        f"Model {metadata.name!r} version {metadata.version} has no decoding input "
        f"{', '.join(repr(a) for a in lacking)} in its {signature_name!r} signature (inputs: "
        f"{sorted(signature.inputs)}): it was exported before exports took decoding inputs. "
        "Re-export it with this keras-attention version, or leave out the decoding options "
        f"(its beam_search signature decodes with the beam width fixed at export).{detail}",
    )


def explain_missing_inputs(
    error: ServingError,
    signature_name: str,
    inputs: Mapping[str, Any],
    model_metadata: Callable[[], ModelMetadata],
) -> ServingError:
    """`error`, or for a request whose decoding inputs the export lacks, one that says so.

    `model_metadata()` asks the server for the served version's signatures
    (only when `error` may be such an answer).
    """
    sent = [alias for alias in inputs if alias in error.message]
    no_sample = signature_name in (SEARCH, SAMPLE) and error.code in (
        "FAILED_PRECONDITION",
        "INVALID_ARGUMENT",
    )
    if not no_sample and (error.code != "INVALID_ARGUMENT" or not sent):
        return error
    try:
        metadata = model_metadata()
    except ServingError:
        return error
    signature = metadata.signatures.get(signature_name)
    if signature is None:
        if no_sample:
            return lacking_inputs_error(metadata, signature_name, [])
        return error
    lacking = [alias for alias in inputs if alias not in signature.inputs]
    if not lacking:
        return error
    return lacking_inputs_error(
        metadata, signature_name, lacking, f" The server said: {error.message}"
    )
