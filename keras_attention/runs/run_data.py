"""A run's data and files: reading and splitting its corpus, claiming its directory, its history.

Everything here reads or writes the run directory (`RunDirectory`) and needs
no model: the trainer calls it before and after `fit`, and the tokenizer choice
reads the training split through `read_splits`.
"""

from __future__ import annotations

import csv

from keras_attention.data import CorpusSplits, load_corpus, split_corpus
from keras_attention.runs import run_state
from keras_attention.runs.backup_files import (
    complete_lines,
    write_bytes_atomically,
    write_text_atomically,
)
from keras_attention.runs.run_directory import RunDirectory
from keras_attention.runs.run_vectorizers import write_vocabularies
from keras_attention.runs.train_config import TrainConfig


def read_splits(config: TrainConfig) -> CorpusSplits:
    """Reads `config.data` and splits it into training, validation and test pairs.

    Pairs are reversed (target -> source) when `config.reverse` is set, then
    split by `split_corpus` with the config's fractions, seed and `max_pairs`.

    Raises:
        ValueError: the corpus cannot be read, or its training split is empty
            (raised before anything is written).
    """
    corpus = load_corpus(config.data)
    pairs = (
        [(target, source) for source, target in corpus.pairs] if config.reverse else corpus.pairs
    )
    splits = split_corpus(
        pairs,
        validation_fraction=config.validation_fraction,
        test_fraction=config.test_fraction,
        seed=config.seed,
        max_pairs=config.max_pairs,
    )
    if not splits.train:
        raise ValueError(f"The training split of {corpus.path} is empty")
    return splits


def claim_run(config: TrainConfig) -> RunDirectory:
    """Opens `config.out` for this training (see `run_state.claim_run_directory`).

    Saves the config, then marks the run `training` by this process.
    """
    run = RunDirectory(config.out)
    done = run_state.claim_run_directory(run, config)
    run.path.mkdir(parents=True, exist_ok=True)
    write_text_atomically(run.config, config.to_json() + "\n")  # `status` may be reading it
    run_state.write_state(run, run_state.TRAINING, epochs_done=done, epochs_planned=config.epochs)
    return run


def write_run_files(run: RunDirectory, config: TrainConfig, splits: CorpusSplits) -> None:
    """Writes the validation and test splits, and the vocabularies of a new run.

    A resumed run keeps its saved vocabularies (or subword models), so it
    continues with identical token ids.
    """
    run.write_pairs(run.validation_split, splits.validation)
    run.write_pairs(run.test_split, splits.test)
    write_vocabularies(run, config, splits)


def keep_history(run: RunDirectory, epochs: int) -> None:
    """Cuts history.csv back to its header and first `epochs` complete rows.

    A run killed after an epoch's row was written but before its backup was
    (or in the middle of a row) resumes at the backup's epoch, so the rows
    after it would be repeated.
    """
    if not run.history.is_file():
        return
    text = run.history.read_bytes()
    kept = b"".join(text[: text.rfind(b"\n") + 1].splitlines(keepends=True)[: epochs + 1])
    if kept != text:
        write_bytes_atomically(run.history, kept)


def best_validation_loss(run: RunDirectory) -> float | None:
    """The lowest val_loss in history.csv (from before a resume), if any."""
    rows = csv.DictReader(complete_lines(run.history))  # CSVLogger may be writing a row
    losses = [float(row["val_loss"]) for row in rows if row.get("val_loss")]
    return min(losses) if losses else None
