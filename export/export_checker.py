"""`ExportChecker`: would TensorFlow Serving load and run this export?"""

from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path

from keras_attention.export.allowed_ops import AllowedOps
from keras_attention.export.check_report import GENERIC, TRANSLATOR, CheckReport
from keras_attention.export.export_manifest import ExportManifest, file_sha256
from keras_attention.export.saved_model_proto import (
    SAVED_MODEL_PB,
    describe_signatures,
    graph_ops,
    read_saved_model,
    serve_meta_graph,
    xla_compiled_functions,
)
from keras_attention.export.translation_signatures import (
    BEAM_SEARCH,
    INPUT_KEY,
    SAMPLE,
    SCORE_TRANSLATION,
    SEARCH,
    SERVING_DEFAULT,
    TRANSLATION_KEY,
    TRANSLATION_OUTPUTS,
)
from keras_attention.export.warmup_replay import check_native, replay_warmup
from keras_attention.saved_model_session import SavedModelSession
from keras_attention_client.wire.contract import (
    CONFIDENCE_OUTPUTS,
    DECODING_INPUTS,
    OPTIONAL_STEERING_INPUTS,
    SCORE_OUTPUTS,
    STEERED_BEAM_SEARCH,
    STEERED_BEAM_SEARCH_INPUTS,
    STEERING_INPUTS,
    STEERING_OUTPUTS,
)

logger = logging.getLogger(__name__)

NOT_ALLOWED = "NOT ALLOWED"

_EXPECTED_OUTPUTS = {
    SERVING_DEFAULT: TRANSLATION_OUTPUTS,
    BEAM_SEARCH: TRANSLATION_OUTPUTS,
    SEARCH: TRANSLATION_OUTPUTS,
    SAMPLE: TRANSLATION_OUTPUTS,
    STEERED_BEAM_SEARCH: TRANSLATION_OUTPUTS,
    SCORE_TRANSLATION: SCORE_OUTPUTS,
}
# Ops the graph must hold for each `TrainConfig.tokenizer` named in the manifest.
_TOKENIZER_OPS = {
    "words": frozenset({"StringSplitV2", "LookupTableFindV2"}),
    "subwords": frozenset(
        {"SentencepieceOp", "SentencepieceTokenizeOp", "SentencepieceDetokenizeOp"}
    ),
}
_EXPECTED_INPUTS = {
    SCORE_TRANSLATION: (INPUT_KEY, TRANSLATION_KEY),
    STEERED_BEAM_SEARCH: (INPUT_KEY, *STEERED_BEAM_SEARCH_INPUTS),
}


_NO_MANIFEST = {
    TRANSLATOR: "No assets.extra/export_manifest.json: not written by keras-attention export; "
    "checking the default translator signatures",
    GENERIC: "No assets.extra/export_manifest.json and serving_default takes no 'text': "
    "checked as a SavedModel of its own (any signatures, dense inputs and outputs, its "
    "own warmup requests), not against the translator contract",
}


class ExportChecker:
    """Checks an exported version the way TensorFlow Serving would use it.

    1. `saved_model.pb` parses and has a MetaGraph tagged `serve`.
    2. The signatures: `serving_default` and `beam_search` (and every
       signature the manifest lists) exist, take the `[batch]` DT_STRING
       input `text` (plus `translation` for `score_translation`), or for
       `search` and `sample` `text` and all of their decoding inputs
       (scalars of the contract's dtypes, each with a default in the
       SignatureDef's `defaults` map), and return the documented dense outputs with the
       documented dtypes (of any rank where `n_best` can add an axis).
    3. Every op of the graph and of its function library is core TensorFlow
       or tensorflow-text (`AllowedOps`); anything else (e.g. TF Addons'
       `Addons>GatherTree`) would fail to load in the model server. The
       graph holds the text ops of the tokenizer the manifest names (word
       lookups, or SentencePiece ops for `subwords`).
    4. The export loads with `tf.compat.v1.saved_model.loader.load` in a
       `tf.compat.v1.Session` with tag `serve` (`SavedModelSession`), after
       `tensorflow_text` is imported, as in the model server.
    5. The warmup requests (`assets.extra/tf_serving_warmup_requests`) are
       replayed through the SignatureDefs' tensor names, inputs a request
       leaves out fed from the SignatureDef's `defaults` as TF Serving's
       `GetInputValues` does (a `seed` of -1 is replaced by 1, so that step
       6 can compare the draws); each must return outputs of the
       signature's dtypes with one row per input.
    6. With `native=True`: the version is loaded again by TensorFlow's C API
       (`TF_LoadSessionFromSavedModel`, the C++ loader TF Serving calls) in a
       process that never imports Python TensorFlow (`keras_attention.export.native_check`),
       every warmup request is run through `TF_SessionRun` (the inputs it
       leaves out filled from `defaults` here, as `GetInputValues` does,
       since the C API feeds only what it is given), and so is, for each
       signature with decoding inputs, a request giving every input
       explicitly; the outputs must equal the Python Session path's
       (strings and integers exactly, floats within 1e-5 relative).

    A SavedModel without a manifest whose `serving_default` does not take
    `text` is not a translator export: it is checked as a SavedModel of its
    own (`CheckReport.contract` is `"generic"`). Step 2 then only asks for a
    signature and dense inputs and outputs, and skips the manifest's
    tokenizer; step 5 replays the model's own warmup requests (outputs of the
    signature's dtypes and ranks, no NaN; no row count is assumed), and step
    6 loads the version with the C API even without warmup requests, running
    those there are.

    Problems are collected, not raised: the returned `CheckReport` lists
    errors (the check fails) and warnings.

    Args:
        allowed_ops: the op set to accept (default: `AllowedOps.from_registry()`).
        replay_warmup: bool, whether to replay the warmup requests.
        native: bool, whether to also run them on TensorFlow's C API (step 6;
            needs `replay_warmup`).

    Example:

    ```python
    report = ExportChecker().check("/models/translator/1")
    print(report.format())
    report.ok  # True
    ```
    """

    def __init__(
        self,
        allowed_ops: AllowedOps | None = None,
        replay_warmup: bool = True,
        native: bool = False,
    ):
        if native and not replay_warmup:
            raise ValueError("native=True runs the warmup requests; it needs replay_warmup=True")
        self.allowed_ops = allowed_ops
        self.replay_warmup = replay_warmup
        self.native = native

    def check(self, path: str | os.PathLike) -> CheckReport:
        path = Path(path)
        report = CheckReport(path=str(path))
        try:
            meta_graph = serve_meta_graph(read_saved_model(path))
        except (FileNotFoundError, ValueError) as error:
            report.errors.append(str(error))
            return report
        if not path.resolve().name.isdigit():
            report.warnings.append(
                f"The directory name {path.resolve().name!r} is not an integer: TF Serving only "
                "loads integer-named version directories under the model's base path"
            )
        manifest = self._check_manifest(path, report)
        report.signatures = describe_signatures(meta_graph)
        report.contract = _contract(manifest, report.signatures)
        if manifest is None:
            report.warnings.append(_NO_MANIFEST[report.contract])
        if report.contract == TRANSLATOR:
            self._check_signatures(report, manifest, meta_graph)
        else:
            _check_generic_signatures(report)
        self._check_ops(meta_graph, report)
        self._check_tokenizer(meta_graph, report, manifest)
        if any(origin == NOT_ALLOWED for origin in report.ops.values()):
            report.errors.append(
                "Not loaded: the model server cannot load a graph with ops it does not link"
            )
            return report
        try:
            session = SavedModelSession(path)
        except Exception as error:  # noqa: BLE001 - any load failure is the finding
            report.errors.append(f"TF Serving's load path failed: {type(error).__name__}: {error}")
            return report
        report.loaded = True
        with session:
            if self.replay_warmup:
                replayed = replay_warmup(path, session, report, manifest)
                if self.native and (replayed or report.contract == GENERIC):
                    check_native(path, session, replayed, report)
        return report

    # ------------------------------------------------------------------ steps

    def _check_manifest(self, path: Path, report: CheckReport) -> ExportManifest | None:
        try:
            manifest = ExportManifest.load(path)
        except FileNotFoundError:
            return None
        except (ValueError, TypeError) as error:
            report.errors.append(f"Unreadable export manifest: {error}")
            return None
        report.manifest = dataclasses.asdict(manifest)
        if manifest.saved_model_sha256 and (path / SAVED_MODEL_PB).is_file():
            if file_sha256(path / SAVED_MODEL_PB) != manifest.saved_model_sha256:
                report.warnings.append(
                    "saved_model.pb differs from the one the manifest describes "
                    "(modified after export)"
                )
        return manifest

    def _check_signatures(
        self, report: CheckReport, manifest: ExportManifest | None, meta_graph=None
    ) -> None:
        signatures = report.signatures
        expected = [SERVING_DEFAULT, BEAM_SEARCH]
        if manifest is not None:
            expected += [name for name in manifest.signatures if name not in expected]
        for name in expected:
            if name not in signatures:
                report.errors.append(
                    f"Missing signature {name!r}. Signatures present: {sorted(signatures)}"
                )
        for name, signature in signatures.items():
            inputs = _EXPECTED_INPUTS.get(name, (INPUT_KEY,))
            decoding = DECODING_INPUTS.get(name, {})
            has_decoding = bool(decoding) and set(signature["inputs"]) != set(inputs)
            if has_decoding:
                inputs = (*inputs, *decoding)
            # `search`'s steering inputs (`prefix`, `next_words`): an export before them lacks them.
            required = set(STEERING_INPUTS) - set(OPTIONAL_STEERING_INPUTS)
            steered = name == SEARCH and required <= set(signature["inputs"])
            if steered:  # `constraints` came later: an export may lack it
                inputs = (
                    *inputs,
                    *(a for a in STEERING_INPUTS if a in required or a in signature["inputs"]),
                )
            if sorted(signature["inputs"]) != sorted(inputs):
                report.errors.append(
                    f"Signature {name!r} must take the input(s) {list(inputs)}. "
                    f"Received: {sorted(signature['inputs'])}"
                )
            defaults = set(meta_graph.signature_def[name].defaults) if meta_graph else set()
            for alias, spec in signature["inputs"].items():
                if steered and alias in STEERING_INPUTS:
                    dtype, shape = STEERING_INPUTS[alias]
                    if spec["dtype"] != dtype or spec["shape"] != shape:
                        report.errors.append(
                            f"Input {alias!r} of {name!r} must be {dtype} {shape}. "
                            f"Received: {spec['dtype']} {spec['shape']}"
                        )
                    if alias not in defaults:
                        report.errors.append(
                            f"Input {alias!r} of {name!r} has no default in the SignatureDef: "
                            "TF Serving would refuse every request that leaves it out"
                        )
                elif alias in decoding and alias in inputs:
                    if spec["dtype"] != decoding[alias] or spec["shape"] != []:
                        report.errors.append(
                            f"Input {alias!r} of {name!r} must be a {decoding[alias]} scalar. "
                            f"Received: {spec['dtype']} {spec['shape']}"
                        )
                    if alias not in defaults:
                        report.errors.append(
                            f"Input {alias!r} of {name!r} has no default in the SignatureDef: "
                            "TF Serving would refuse every request that leaves it out"
                        )
                elif alias in inputs and (spec["dtype"] != "DT_STRING" or spec["shape"] != [-1]):
                    report.errors.append(
                        f"Input {alias!r} of {name!r} must be DT_STRING [batch] (shape [-1]). "
                        f"Received: {spec['dtype']} {spec['shape']}"
                    )
                elif alias in defaults and name == STEERED_BEAM_SEARCH:
                    report.errors.append(
                        f"Input {alias!r} of {name!r} has a default in the SignatureDef: TF "
                        "Serving would fill it for a request that leaves it out, and a batching "
                        "server could not merge that request with others"
                    )
            outputs = _EXPECTED_OUTPUTS.get(name)
            if steered:
                outputs = {**outputs, **STEERING_OUTPUTS}
            if outputs is None and manifest is not None and name in manifest.signatures:
                outputs = {
                    alias: (spec["dtype"], spec["shape"])
                    for alias, spec in manifest.signatures[name]["outputs"].items()
                }
            report.errors.extend(_composite_problems(name, signature, ("outputs",)))
            if outputs is None:
                continue
            received = sorted(signature["outputs"])
            if name != SCORE_TRANSLATION and received == sorted(
                set(outputs) - set(CONFIDENCE_OUTPUTS)
            ):
                report.warnings.append(
                    f"Signature {name!r} lacks the outputs {list(CONFIDENCE_OUTPUTS)} "
                    "(an export written before them): clients get no confidence"
                )
            elif received != sorted(outputs):
                report.errors.append(
                    f"Signature {name!r} must return {sorted(outputs)}. "
                    f"Received: {sorted(signature['outputs'])}"
                )
            for alias, (dtype, shape) in outputs.items():
                spec = signature["outputs"].get(alias)
                if spec is None:
                    continue
                rank = None if spec["shape"] is None else len(spec["shape"])
                if has_decoding and "n_best" in decoding and rank is None:
                    rank = len(shape)  # the rank depends on the request's n_best
                if spec["dtype"] != dtype or rank != len(shape):
                    report.errors.append(
                        f"Output {alias!r} of {name!r} must be {dtype} of rank {len(shape)}. "
                        f"Received: {spec['dtype']} {spec['shape']}"
                    )

    def _check_ops(self, meta_graph, report: CheckReport) -> None:
        allowed = self.allowed_ops or AllowedOps.from_registry()
        report.op_source = allowed.source
        used = graph_ops(meta_graph)
        for op, places in sorted(used.items()):
            origin = allowed.origin(op)
            report.ops[op] = origin or NOT_ALLOWED
            if origin is None:
                where = ", ".join(places[:3]) + (
                    f" and {len(places) - 3} more" if len(places) > 3 else ""
                )
                report.errors.append(
                    f"Op {op!r} is neither core TensorFlow nor tensorflow-text, so TF Serving "
                    f"cannot run it (used at {where})"
                )
        compiled = xla_compiled_functions(meta_graph)
        if compiled:
            report.warnings.append(
                f"{len(compiled)} function(s) must be compiled with XLA (jit_compile): TF Serving "
                "on CPU runs them only with --xla_cpu_compilation_enabled=true"
            )

    def _check_tokenizer(self, meta_graph, report: CheckReport, manifest) -> None:
        """The graph's text ops must be those of the manifest's tokenizer."""
        if manifest is None:
            return
        tokenizer = manifest.vocabulary.get("tokenizer", "words")
        ops = set(graph_ops(meta_graph))
        expected = _TOKENIZER_OPS.get(tokenizer)
        if expected is None:
            report.errors.append(
                f"The manifest names an unknown tokenizer {tokenizer!r} "
                f"(expected one of {sorted(_TOKENIZER_OPS)})"
            )
            return
        missing = sorted(expected - ops)
        if missing:
            report.errors.append(
                f"The manifest says the run was trained with tokenizer {tokenizer!r}, but the "
                f"graph lacks its ops {missing}: the model and its tokenizer do not match"
            )


def _contract(manifest: ExportManifest | None, signatures: dict) -> str:
    """`TRANSLATOR` for an export with a manifest, or without one whose `serving_default`
    takes the translator's `text` input; `GENERIC` for any other SavedModel."""
    if manifest is not None:
        return TRANSLATOR
    default = signatures.get(SERVING_DEFAULT)
    return TRANSLATOR if default is not None and INPUT_KEY in default["inputs"] else GENERIC


def _composite_problems(name: str, signature: dict, kinds: tuple[str, ...]) -> list[str]:
    """Errors for the inputs or outputs (`kinds`) of a signature that are not dense tensors."""
    return [
        f"{kind[:-1].capitalize()} {alias!r} of {name!r} is not a dense tensor "
        f"(ragged and sparse {kind} break TF Serving's Predict API)"
        for kind in kinds
        for alias, spec in signature[kind].items()
        if spec["name"] in ("", "<composite>")
    ]


def _check_generic_signatures(report: CheckReport) -> None:
    """A SavedModel of no contract of ours: Predict needs a signature, dense in and out."""
    if not report.signatures:
        report.errors.append("No signatures: TF Serving's Predict has nothing to run")
    elif SERVING_DEFAULT not in report.signatures:
        report.warnings.append(
            f"No {SERVING_DEFAULT!r} signature: every request must name one of "
            f"{sorted(report.signatures)}"
        )
    for name, signature in report.signatures.items():
        report.errors.extend(_composite_problems(name, signature, ("inputs", "outputs")))
