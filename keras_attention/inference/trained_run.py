"""Loading trained run directories for inference: one run, or several as an ensemble."""

from __future__ import annotations

import os
from collections.abc import Sequence

import keras

from keras_attention.inference.translator import Translator
from keras_attention.models.ensemble import Ensemble
from keras_attention.models.seq2seq import Seq2Seq  # registers the class `load_model` reads
from keras_attention.runs.run_directory import RunDirectory
from keras_attention.runs.run_vectorizers import check_model_matches, load_vectorizers
from keras_attention.runs.train_config import TrainConfig


def load_translator(
    run_dir: str | os.PathLike,
    max_output_length: int | None = None,
    replace_unknown: bool | None = None,
) -> Translator:
    """The `Translator` of a trained run directory.

    Args:
        run_dir: a run directory written by `keras_attention.training.train`.
        max_output_length: most tokens per translation (default: the run's
            `TrainConfig.max_output_length`).
        replace_unknown: `Translator`'s `replace_unknown` (copy the most
            attended source token for each `[UNK]`): None (the default) for
            on with a word target vocabulary, off with subwords; False for
            off.

    Raises:
        FileNotFoundError: `run_dir` is not a trained run directory.
        ValueError: its model is not a `Seq2Seq`, or does not match its
            vocabularies.
    """
    run = RunDirectory(run_dir)
    run.require_trained()
    config = TrainConfig.load(run.path)
    source_vectorizer, target_vectorizer = load_vectorizers(run, config)
    model = load_run_model(run)
    check_model_matches(model, source_vectorizer, target_vectorizer, repr(str(run.path)))
    return Translator(
        model,
        source_vectorizer,
        target_vectorizer,
        max_output_length=max_output_length or config.max_output_length,
        replace_unknown=replace_unknown,
    )


def load_run_model(run: RunDirectory) -> Seq2Seq:
    """The `Seq2Seq` of a run's model.keras, uncompiled.

    Raises:
        ValueError: model.keras holds another kind of model.
    """
    model = keras.saving.load_model(run.model, compile=False)
    if not isinstance(model, Seq2Seq):
        raise ValueError(f"{str(run.model)!r} holds a {type(model).__name__}, not a Seq2Seq")
    return model


def load_ensemble(
    run_dirs: Sequence[str | os.PathLike],
    max_output_length: int | None = None,
    replace_unknown: bool | None = None,
    precision: str | None = None,
) -> Translator:
    """The `Translator` of an `Ensemble` of the best models of trained runs.

    The runs must have the same vocabularies (`check_same_vocabularies`).
    The first run gives the vectorizers (its source `max_length`, its target
    spacing) and, unless given, `max_output_length`. One run gives its own
    `Translator`, as `load_translator`.

    Args:
        run_dirs: one or more run directories.
        max_output_length: as in `load_translator` (default: the first run's).
        replace_unknown: as in `load_translator`.
        precision: a dtype policy (or `"auto"`) every member computes in, applied before
            they are combined (default: their own, which must then be the same).

    Raises:
        FileNotFoundError: a run directory is not a trained run directory.
        ValueError: no run, or the runs' vocabularies differ (naming the runs).
    """
    run_dirs = list(run_dirs)
    check_same_vocabularies(run_dirs)
    translators = [
        load_translator(run_dir, max_output_length, replace_unknown) for run_dir in run_dirs
    ]
    if len(translators) == 1:
        return translators[0]
    first = translators[0]
    models = [translator.model for translator in translators]
    if precision is not None:
        from keras_attention.models.model_policy import model_with_policy
        from keras_attention.precision import resolve_precision

        policy = resolve_precision(precision).policy
        models = [model_with_policy(model, policy) for model in models]
    return Translator(
        Ensemble(models),
        first.source_vectorizer,
        first.target_vectorizer,
        max_output_length=first.max_output_length,
        replace_unknown=first.replace_unknown,
    )


def check_same_vocabularies(run_dirs: Sequence[str | os.PathLike]) -> None:
    """Raises `ValueError` unless every run has the first run's tokenizer and the same
    vocabulary files, byte for byte (`RunDirectory.tokenizer_files`: word lists or
    SentencePiece models), naming the first run and the one that differs."""
    if not run_dirs:
        raise ValueError("An ensemble needs at least one run directory. Received: none")
    runs = [RunDirectory(run_dir) for run_dir in run_dirs]
    for run in runs:
        run.require_trained()
    first, tokenizer = runs[0], runs[0].tokenizer()
    files = first.tokenizer_files(tokenizer)
    for run in runs[1:]:
        if run.tokenizer() != tokenizer:
            raise ValueError(
                "The runs of an ensemble must have the same vocabularies, but "
                f"{str(run.path)!r} was trained with --tokenizer {run.tokenizer()} and "
                f"{str(first.path)!r} with --tokenizer {tokenizer}"
            )
        for own, other in zip(files, run.tokenizer_files(tokenizer), strict=True):
            if not other.is_file() or other.read_bytes() != own.read_bytes():
                raise ValueError(
                    "The runs of an ensemble must have the same vocabularies, but the "
                    f"{own.name} of {str(run.path)!r} differs from that of "
                    f"{str(first.path)!r} (runs trained on the same data share their "
                    "vocabularies)"
                )
