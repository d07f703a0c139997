"""`LiteRTChecker`: does a LiteRT export load, run with builtin ops only, and translate as
the SavedModel does?"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from keras_attention.export.litert.check_report import LiteRTCheckReport
from keras_attention.export.litert.ops import model_ops
from keras_attention_client.litert_contract import MANIFEST_FILE, MODEL_FILES
from keras_attention_client.wire.contract import BEAM_SEARCH, DEFAULT_SIGNATURE, TEXT_INPUT
from keras_attention_client.wire.translation import Translation

SIGNATURES = {"greedy": DEFAULT_SIGNATURE, "beam": BEAM_SEARCH}
"""The SavedModel signature each LiteRT mode is compared with."""

MAX_NAMED = 3
"""Differing warmup sentences a comparison's message names (with both outputs)."""


class LiteRTChecker:
    """Checks a LiteRT export (`keras-attention export RUN --format litert`).

    1. `litert_manifest.json` parses, and every model it lists exists.
    2. Each model's op kinds, read from the flatbuffer (`model_ops`), are
       all builtin: a custom or Flex op fails the check.
    3. The models load in LiteRT's interpreter (`ai_edge_litert`) and
       translate the manifest's warmup sentences through
       `keras_attention_client.LiteRTTranslator` (the text side without
       TensorFlow), all in one batch.
    4. The translations are compared with a reference: a SavedModel version
       directory (`saved_model`) run on TF Serving's Session path
       (`serving_default` for greedy, `beam_search` for beam: its beam width
       and length penalty must be the LiteRT export's), or else the run's own
       `Translator` in float32 (the graph the SavedModel's signatures hold)
       with the export's `replace_unknown`, when the manifest's run
       directory is there. Where a SavedModel's `replace_unknown` is not the
       export's, the LiteRT side is translated again with the SavedModel's.
       Tokens and translations must be identical for every sentence unless
       the weights are quantized (`float16`, `int8`), where a difference is
       a warning; the message names the differing sentences and both
       outputs. A shortlisted export (the manifest's `shortlist`) is
       compared with the Translator over the same shortlist
       (`vocabulary_shortlist`, else built again from the run with the
       manifest's `k` and `frequent`); an `int8` export with the Translator
       whose weight matrices hold their int8 values.

    Args:
        saved_model: a SavedModel version directory to compare with, or `None`.
        compare: whether to compare at all. Defaults to `True`.
        vocabulary_shortlist: the `VocabularyShortlist` a shortlisted export
            was made with (saves building it again), or `None`.
    """

    def __init__(
        self,
        saved_model: str | os.PathLike | None = None,
        compare: bool = True,
        vocabulary_shortlist=None,
    ):
        self.saved_model = None if saved_model is None else str(saved_model)
        self.compare = compare
        self.vocabulary_shortlist = vocabulary_shortlist

    def check(self, path: str | os.PathLike) -> LiteRTCheckReport:
        """Checks the export directory `path`; returns the report."""
        path = Path(path)
        report = LiteRTCheckReport(path=str(path))
        try:
            with open(path / MANIFEST_FILE, encoding="utf-8") as f:
                report.manifest = json.load(f)
        except (OSError, ValueError) as error:
            report.errors.append(f"cannot read {MANIFEST_FILE}: {error}")
            return report
        modes = [mode for mode in MODEL_FILES if mode in report.manifest.get("models", {})]
        for mode in modes:
            file = path / MODEL_FILES[mode]
            if not file.is_file():
                report.errors.append(f"{file.name} is missing")
                continue
            ops = model_ops(file.read_bytes())
            report.models[mode] = {
                "bytes": file.stat().st_size,
                "builtin_ops": ops["builtin"],
                "custom_ops": ops["custom"],
            }
            if ops["custom"]:
                report.errors.append(
                    f"{file.name} uses ops outside LiteRT's builtin set: {', '.join(ops['custom'])}"
                )
        if report.errors:
            return report
        sources = [source for source, _ in report.manifest.get("warmup_pairs", [])]
        try:
            from keras_attention_client.litert_translator import LiteRTTranslator

            translator = LiteRTTranslator(path)
            results = self._translate(translator, modes, sources)
        except Exception as error:  # the interpreter's and the text side's failures alike
            report.errors.append(f"the LiteRT interpreter could not translate: {error}")
            return report
        if self.compare and sources:
            reference = self._reference(report, modes, sources)
            if reference is None:
                return report
            expected_results, replace_unknown = reference
            if replace_unknown != translator.replace_unknown:
                # Like with like: the reference's unknown-word setting on the same models.
                report.warnings.append(
                    f"the export's replace_unknown is {translator.replace_unknown}, "
                    f"{report.reference}'s is {replace_unknown}: compared with "
                    f"LiteRTTranslator(replace_unknown={replace_unknown})"
                )
                translator = LiteRTTranslator(path, replace_unknown=replace_unknown)
                results = self._translate(translator, modes, sources)
            quantized = report.manifest.get("weights") != "float32"
            for mode, expected in expected_results.items():
                self._compare(report, mode, sources, expected, results, quantized)
        return report

    @staticmethod
    def _translate(translator, modes, sources) -> dict:
        """mode -> `translator`'s results for `sources` in one batch, and mode + ".seconds"."""
        results = {}
        for mode in modes:
            start = time.perf_counter()
            results[mode] = translator.translate(sources, mode, batch_size=len(sources) or 1)
            results[mode + ".seconds"] = time.perf_counter() - start
        return results

    @staticmethod
    def _compare(report, mode, sources, expected, results, quantized) -> None:
        """Records how LiteRT's `results[mode]` agree with `expected`; differences are
        errors (warnings for quantized weights), each naming the sentence and both outputs."""
        got = results[mode]
        pairs = list(zip(expected, got, strict=True))
        differing = [
            (source, want, have)
            for source, (want, have) in zip(sources, pairs, strict=True)
            if want.tokens != have.tokens or want.text != have.text
        ]
        report.comparisons[mode] = {
            "sentences": len(sources),
            "identical": len(sources) - len(differing),
            "max_score_difference": max(abs(a.score - b.score) for a, b in pairs),
            "seconds": results[mode + ".seconds"],
        }
        if differing:
            named = "; ".join(
                f"{source!r}: LiteRT {have.text!r}, reference {want.text!r}"
                for source, want, have in differing[:MAX_NAMED]
            )
            more = f" (and {len(differing) - MAX_NAMED} more)" if len(differing) > MAX_NAMED else ""
            message = (
                f"{mode}: {len(differing)} of {len(sources)} warmup translations differ from "
                f"{report.reference}: {named}{more}"
            )
            (report.warnings if quantized else report.errors).append(message)

    def _reference(self, report, modes, sources) -> tuple[dict, bool] | None:
        """`(mode -> the reference's `Translation`s of sources, the reference's
        replace_unknown)`; `None` without a reference."""
        manifest = report.manifest
        beam = manifest["decoding"]["beam"]
        if self.saved_model is not None:
            report.reference = f"the SavedModel {self.saved_model} (Session path)"
            return _saved_model_results(self.saved_model, modes, sources, beam, report)
        run_dir = manifest.get("run_dir")
        if not run_dir or not Path(run_dir).is_dir():
            report.warnings.append(
                "no reference to compare with: give --saved-model, or keep the run directory "
                "the manifest names"
            )
            return None
        from keras_attention.export.export_precision import with_precision
        from keras_attention.inference.trained_run import load_translator

        report.reference = f"the run's Translator in float32 ({run_dir})"
        translator = load_translator(
            run_dir,
            max_output_length=manifest["max_output_length"],
            replace_unknown=bool(manifest.get("replace_unknown", False)),
        )
        translator = with_precision(translator, "float32")
        if manifest.get("weights") == "int8":
            # The values an int8 export stores (the SavedModel's int8 ones): the same tokens.
            _use_int8_values(translator.model)
            report.reference += " with its weights' int8 values"
        described = manifest.get("shortlist")
        if described:
            shortlist = self.vocabulary_shortlist
            if shortlist is None:
                from keras_attention.shortlist.vocabulary_shortlist import VocabularyShortlist

                shortlist = VocabularyShortlist.from_run(
                    run_dir, described["k"], described["frequent"]
                )
            translator = translator.with_shortlist(shortlist)
            report.reference += f" with its shortlist of {described['k']} ids per source id"
        options = {
            "greedy": {},
            "beam": {"beam_width": beam["beam_width"], "length_penalty": beam["length_penalty"]},
        }
        results = {
            mode: translator.translate_all(sources, batch_size=len(sources), **options[mode])
            for mode in modes
        }
        return results, translator.replace_unknown


def _use_int8_values(model) -> None:
    """Sets every weight matrix of `model` (a fresh copy) to the values its int8 storage
    stands for (`weight_storage`: a scale per output channel)."""
    from keras_attention.export.weight_storage import (
        channel_axis,
        dequantize,
        is_weight_matrix,
        quantize_per_channel,
    )

    for variable in model.variables:
        if is_weight_matrix(variable):
            quantized, scale = quantize_per_channel(variable.value, channel_axis(variable))
            variable.assign(dequantize(quantized, scale, variable.dtype))


def _saved_model_results(
    saved_model: str, modes: Sequence[str], sources: list[str], beam: dict, report
) -> tuple[dict, bool]:
    """`(mode -> results of the SavedModel's matching signature for sources, whether its
    signatures replace unknown words)`."""
    from keras_attention.export.export_manifest import ExportManifest
    from keras_attention.saved_model_session import SavedModelSession

    manifest = ExportManifest.load(saved_model)
    saved_beam = manifest.decoding.get(BEAM_SEARCH, {})
    if "beam" in modes and (
        saved_beam.get("beam_width") != beam["beam_width"]
        or abs(float(saved_beam.get("length_penalty", -1)) - beam["length_penalty"]) > 1e-9
    ):
        report.warnings.append(
            f"the SavedModel's beam_search ({saved_beam}) is not the LiteRT beam model's "
            f"(beam_width {beam['beam_width']}, length_penalty {beam['length_penalty']}): "
            "beam not compared"
        )
        modes = [mode for mode in modes if mode != "beam"]
    results = {}
    with SavedModelSession(saved_model) as session:
        for mode in modes:
            outputs = session.run(
                SIGNATURES[mode], {TEXT_INPUT: np.array([s.encode("utf-8") for s in sources])}
            )
            results[mode] = Translation.from_outputs(outputs)
    return results, bool(manifest.vocabulary.get("replace_unknown", False))
