"""The vectorizers of a run: learned from the training split, saved in and loaded from the run.

`TrainConfig.tokenizer` picks the kind:

- `"words"`: `TextVectorizer` with word vocabularies (`build_vocabulary`,
  saved as `source_vocabulary.txt` / `target_vocabulary.txt`);
- `"subwords"`: `SubwordVectorizer` with SentencePiece models
  (`train_subword_model`, saved as `source_subwords.model` /
  `target_subwords.model`).

The vocabulary sizes are `source_vocabulary_size` / `target_vocabulary_size`
either way. Word runs also measure the spacing of their training targets
(`SpacingRules.measure`, saved as `target_spacing.json`), which their target
`TextVectorizer` writes on decoding unless `french_spacing` overrides it.

A run adapted from another (`TrainConfig.adapt_from`) takes that run's
vocabularies, extended (`RunAdaptation.vocabularies`), and its spacing.
"""

from __future__ import annotations

import json
import shutil

from keras_attention.data import progress
from keras_attention.runs.run_adaptation import RunAdaptation
from keras_attention.runs.run_directory import RunDirectory
from keras_attention.runs.train_config import TrainConfig
from keras_attention.text import (
    SubwordVectorizer,
    TextVectorizer,
    build_vocabulary,
    load_subword_model,
    load_vocabulary,
    save_subword_model,
    save_vocabulary,
    train_subword_model,
)
from keras_attention.text.spacing_rules import SpacingRules


def _learn(config: TrainConfig, sample) -> tuple[object, object]:
    """The source and target vocabularies (word lists or subword models) of `sample.train`
    (for an adapted run: its original run's, extended)."""
    if config.adapt_from:
        return RunAdaptation(config.adapt_from).vocabularies(config, sample)
    sources = [source for source, _ in sample.train]
    targets = [target for _, target in sample.train]
    if config.tokenizer == "subwords":
        learn = train_subword_model
    else:
        learn = build_vocabulary
    try:
        source = learn(sources, config.source_vocabulary_size)
    except ValueError as error:
        raise ValueError(f"Source side (--source-vocabulary-size): {error}") from None
    try:
        target = learn(targets, config.target_vocabulary_size)
    except ValueError as error:
        raise ValueError(f"Target side (--target-vocabulary-size): {error}") from None
    return source, target


def measure_spacing(sample) -> SpacingRules:
    """The spacing conventions of the training targets (`SpacingRules.measure`)."""
    return SpacingRules.measure(target for _, target in sample.train)


def write_vocabularies(run: RunDirectory, config: TrainConfig, sample) -> None:
    """Learns and saves the run's vocabularies, unless it has them (a resumed run keeps its ids).

    With `tokenizer="words"` the target side's spacing is measured too and
    saved as `target_spacing.json`.
    """
    files = run.tokenizer_files(config.tokenizer)
    original = RunDirectory(config.adapt_from) if config.adapt_from else None
    if config.tokenizer == "words" and not run.target_spacing.is_file():
        if original is not None:  # the adapted model writes as its original did
            if original.target_spacing.is_file():
                shutil.copyfile(original.target_spacing, run.target_spacing)
        else:
            spacing = measure_spacing(sample)
            run.target_spacing.write_text(
                json.dumps(spacing.get_config(), indent=2, sort_keys=True) + "\n",
                encoding="utf-8",
            )
    if all(path.is_file() for path in files):
        return
    if original is not None and config.tokenizer == "subwords":
        progress.logger.info("Keeping the subword models of %s", original.path)
    elif original is not None:
        progress.logger.info(
            "Extending the vocabularies of %s with the words of %d sampled training pairs",
            original.path,
            len(sample.train),
        )
    else:
        progress.logger.info(
            "Learning the %s from %d sampled training pairs",
            "subword models" if config.tokenizer == "subwords" else "vocabularies",
            len(sample.train),
        )
    source, target = _learn(config, sample)
    save = save_subword_model if config.tokenizer == "subwords" else save_vocabulary
    save(source, files[0])
    save(target, files[1])


def target_spacing(config: TrainConfig, measured: SpacingRules | None) -> SpacingRules:
    """`--[no-]french-spacing` if given, else the measured rules (plain if none)."""
    if config.french_spacing is not None:
        return SpacingRules.french() if config.french_spacing else SpacingRules.plain()
    return measured or SpacingRules.plain()


def make_vectorizers(config: TrainConfig, source, target, spacing: SpacingRules | None = None):
    """`(source, target)` vectorizers of `config.tokenizer` from vocabularies or models.

    `spacing`: the measured target spacing (`--tokenizer words`).
    """
    if config.tokenizer == "subwords":
        return (
            SubwordVectorizer(source, max_length=config.max_length),
            SubwordVectorizer(target, max_length=config.max_length),
        )
    return (
        TextVectorizer(source, max_length=config.max_length),
        TextVectorizer(
            target, max_length=config.max_length, spacing=target_spacing(config, spacing)
        ),
    )


def _read_spacing(run: RunDirectory) -> SpacingRules | None:
    if not run.target_spacing.is_file():
        return None  # a run from before the measurement: its config's french_spacing decides
    try:
        return SpacingRules.from_config(json.loads(run.target_spacing.read_text(encoding="utf-8")))
    except (ValueError, TypeError) as error:
        raise ValueError(f"{str(run.target_spacing)!r} is not a spacing file: {error}") from None


def load_vectorizers(run: RunDirectory, config: TrainConfig, sample=None):
    """The run's vectorizers; learned from the `sample` in memory (as the chief did) if given.

    Raises:
        FileNotFoundError: the run lacks the files of its `tokenizer`.
        ValueError: a file is not a vocabulary / subword model.
    """
    if sample is not None:
        return make_vectorizers(config, *_learn(config, sample), measure_spacing(sample))
    files = run.tokenizer_files(config.tokenizer)
    missing = [path.name for path in files if not path.is_file()]
    if missing:
        raise FileNotFoundError(
            f"{str(run.path)!r} was trained with --tokenizer {config.tokenizer} but lacks "
            f"{', '.join(missing)}"
        )
    load = load_subword_model if config.tokenizer == "subwords" else load_vocabulary
    return make_vectorizers(config, load(files[0]), load(files[1]), _read_spacing(run))


def check_model_matches(model, source_vectorizer, target_vectorizer, where: str) -> None:
    """Raises a clear error when a model's vocabulary sizes are not its vectorizers'.

    Raises:
        ValueError: naming both sizes and the tokenizer.
    """
    expected = (source_vectorizer.vocabulary_size, target_vectorizer.vocabulary_size)
    sizes = (
        getattr(model, "source_vocabulary_size", None),
        getattr(model, "target_vocabulary_size", None),
    )
    if None not in sizes and tuple(sizes) != expected:
        raise ValueError(
            f"The model of {where} has vocabulary sizes {sizes[0]} (source) and {sizes[1]} "
            f"(target), but its {source_vectorizer.tokenizer} vectorizers have "
            f"{expected[0]} and {expected[1]}: the model and the tokenizer files come from "
            "different runs"
        )
