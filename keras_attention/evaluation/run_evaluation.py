"""Evaluate a trained run on its held-out test split, or on another test corpus: sacreBLEU
and chrF."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Sequence

from keras_attention.data import group_references, load_corpus
from keras_attention.decoding_defaults import DEFAULT_BEAM_WIDTH
from keras_attention.evaluation.bleu import DEFAULT_BUCKETS, bleu_by_length, score_translations
from keras_attention.inference.trained_run import load_ensemble
from keras_attention.runs import run_state
from keras_attention.runs.run_directory import RunDirectory
from keras_attention_client.defaults import DEFAULT_BATCH_SIZE
from keras_attention_client.wire.decoding_options import DecodingOptions

logger = logging.getLogger(__name__)

TEST_DATA_SECTION = "test_data_evaluations"
"""The metrics.json section of evaluations on other test corpora, by their spec."""

ENSEMBLE_SECTION = "ensemble_evaluations"
"""The first run's metrics.json section of its ensembles' evaluations, by the runs (and
` --test-data SPEC`)."""


def evaluate_run(
    run_dir: str | os.PathLike | Sequence[str | os.PathLike],
    options: DecodingOptions | None = None,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_sentences: int | None = None,
    progress: bool = False,
    buckets: Sequence[tuple[int, int | None]] = DEFAULT_BUCKETS,
    replace_unknown: bool | None = None,
    test_data: str | None = None,
    **decoding,
) -> dict:
    """Scores greedy and beam-search translations of the run's test split (or `test_data`),
    or of the ensemble of several runs.

    Hypotheses are the detokenized, cased outputs; references are the
    original test sentences, all translations of each source (multi-reference
    BLEU). Writes `metrics.json` section `evaluation` and the translations to
    `translations.greedy.tsv` / `translations.beam.tsv`.

    The evaluation records what it was made of: `model_sha256` (the
    model.keras scored), `epochs` and `training_state` (`completed`, or
    `interrupted` etc. for a partial model), so `run_state` can tell when it
    goes stale (the model changed since) and a partial model's figures are
    never taken for the final ones; and `replace_unknown`, whether each
    `[UNK]` of a word model became the most attended source token.

    Several runs are scored as one `Ensemble` (`load_ensemble`: the same vocabularies, the
    mean of their log-probabilities at each step) on the first run's test split (or
    `test_data`); the evaluation, with `runs` and each run's `model_sha256`, goes to the
    first run's section `ensemble_evaluations`, under the runs as given.

    Args:
        run_dir: a trained run directory, or a sequence of them (an ensemble).
        options: `DecodingOptions` of the beam-search pass (or its fields as
            keywords in `decoding`): `beam_width` (default
            `DEFAULT_BEAM_WIDTH`; 1 = greedy only) and `length_penalty`.
        batch_size: sentences per batch.
        max_sentences: evaluate only the first N unique test sources.
        progress: show a progress bar.
        buckets: source-length buckets of `bleu_by_length` (inclusive word
            counts; `None` = no upper bound).
        replace_unknown: `load_translator`'s: None (the default) scores the
            output as `translate` gives it (each `[UNK]` of a word model
            replaced by the most attended source token; subwords have none),
            False keeps `[UNK]` (as evaluations before that default did).
        test_data: a test corpus SPEC (as `train --test-data` takes it, the run's
            `reverse` applied) to score instead of the run's test split: an adapted
            run on its original run's test split (`ORIGINAL/splits/test.tsv`), a run
            on the user's own test set.

    Returns:
        The evaluation section written to metrics.json.

    Raises:
        ValueError: a beam width below 1, or `options` that give `sample`,
            `n_best` or `max_output_length` (evaluation scores greedy and
            beam search with the run's own length limit).
        CorpusError: `test_data` is wrong or holds no pair.
        ValueError: runs whose vocabularies differ, naming them.
    """
    options = DecodingOptions.of(options, **decoding)
    unused = [
        name for name in ("sample", "n_best", "max_output_length") if options.given().get(name)
    ]
    if unused:
        raise ValueError(
            "evaluate scores greedy and beam search with `beam_width` and `length_penalty`; "
            f"it takes no {', '.join(unused)}. Received: {options!r}"
        )
    beam_width = DEFAULT_BEAM_WIDTH if options.beam_width is None else options.beam_width
    if beam_width < 1:
        raise ValueError(f"`beam_width` must be >= 1 (1: greedy only). Received: {beam_width}")
    length_penalty = options.value("length_penalty")
    runs = [run_dir] if isinstance(run_dir, str | os.PathLike) else list(run_dir)
    if not runs:
        raise ValueError("Give at least one run directory to evaluate.")
    directories = [RunDirectory(member) for member in runs]
    for directory in directories:
        directory.require_trained()
    run = directories[0]
    grouped = group_references(_test_pairs(run, test_data))
    if max_sentences is not None:
        grouped = grouped[:max_sentences]
    sources = [source for source, _ in grouped]
    references = [refs for _, refs in grouped]
    fingerprints = [run_state.model_fingerprint(directory) for directory in directories]
    state = run_state.recorded_state(run)
    if state != run_state.COMPLETED:
        logger.info("Evaluating %s, whose training is %s: a partial model", run.path, state)
    translator = load_ensemble(runs, replace_unknown=replace_unknown)

    strategies = {"greedy": 1}
    if beam_width > 1:
        strategies["beam"] = beam_width
    evaluation: dict = {
        "sentences": len(sources),
        "model_sha256": fingerprints[0] if len(runs) == 1 else fingerprints,
        "epochs": run_state.epochs_done(run),
        "training_state": state,
        "replace_unknown": translator.replace_unknown,
    }
    if len(runs) > 1:
        evaluation["runs"] = [str(member) for member in runs]
    if test_data is not None:
        evaluation["test_data"] = test_data
    for name, width in strategies.items():
        results = translator.translate_all(
            sources,
            DecodingOptions(beam_width=width, length_penalty=length_penalty),
            batch_size=batch_size,
            progress=progress,
        )
        hypotheses = [r.text for r in results]
        scores = score_translations(hypotheses, references)
        evaluation[name] = {
            **dataclasses.asdict(scores),
            "beam_width": width,
            "length_penalty": length_penalty if width > 1 else None,
            "bleu_by_length": bleu_by_length(sources, hypotheses, references, buckets),
        }
        if test_data is None and len(runs) == 1:
            with open(run.translations(name), "w", encoding="utf-8") as f:
                for source, hypothesis in zip(sources, hypotheses, strict=True):
                    f.write(f"{source}\t{hypothesis}\n")
        logger.info("%s: BLEU %.2f chrF %.2f", name, scores.bleu, scores.chrf)
    _record(run, evaluation, runs, test_data)
    return evaluation


def _record(run: RunDirectory, evaluation: dict, runs: list, test_data: str | None) -> None:
    """Writes `evaluation` to the first run's metrics.json: as `evaluation` (the run alone on
    its own split), else under its key in `test_data_evaluations` or `ensemble_evaluations`."""
    if len(runs) == 1 and test_data is None:
        run.update_metrics(evaluation=evaluation)
        return
    section, key = TEST_DATA_SECTION, test_data
    if len(runs) > 1:
        section = ENSEMBLE_SECTION
        key = " ".join(map(str, runs)) + (f" --test-data {test_data}" if test_data else "")
    others = run.read_metrics().get(section, {})
    run.update_metrics(**{section: {**others, key: evaluation}})


def _test_pairs(run: RunDirectory, test_data: str | None) -> list[tuple[str, str]]:
    """The `(source, target)` pairs to score: the run's test split, or `test_data`'s pairs
    read in the run's direction."""
    if test_data is None:
        return load_corpus(run.test_split).pairs
    from keras_attention.runs.run_data import read_held_out_file
    from keras_attention.runs.train_config import TrainConfig

    return read_held_out_file(test_data, TrainConfig.load(run.path).reverse)
