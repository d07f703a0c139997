"""Loading a trained run directory for inference."""

from __future__ import annotations

import os

import keras

from keras_attention.inference.translator import Translator
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
    model = keras.saving.load_model(run.model, compile=False)
    if not isinstance(model, Seq2Seq):
        raise ValueError(f"{str(run.model)!r} holds a {type(model).__name__}, not a Seq2Seq")
    check_model_matches(model, source_vectorizer, target_vectorizer, repr(str(run.path)))
    return Translator(
        model,
        source_vectorizer,
        target_vectorizer,
        max_output_length=max_output_length or config.max_output_length,
        replace_unknown=replace_unknown,
    )
