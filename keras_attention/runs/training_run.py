"""A training run, opened once: its resolved config, its data, its files and its outcome.

`TrainingRun.open(config)` reads the run directory's saved config once, resolves
`auto` precision and tokenizer into a frozen, resolved `TrainConfig`
(`dataclasses.replace`), and tells whether the run already completed with it.
The trainer then asks the run for its data sample (`sample`), claims it (`claim`:
the config, the held-out splits, the data summary and vocabularies written), takes its
vectorizers and training stream, and records how training ended
(`record_failure`, `record_interruption`, `record_completion`).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import signal
from typing import Any

from keras_attention.data import DatasetOptions, make_stream
from keras_attention.data.corpus_sample import CorpusSample
from keras_attention.data.corpus_stream import training_pairs
from keras_attention.precision import AUTO, POLICIES, PrecisionChoice, resolve_precision
from keras_attention.runs import run_state
from keras_attention.runs.backup_files import backed_up_position
from keras_attention.runs.run_adaptation import RunAdaptation
from keras_attention.runs.run_data import (
    claim_run,
    held_out,
    keep_history,
    run_splits,
    sample_splits,
    write_run_files,
)
from keras_attention.runs.run_directory import RunDirectory
from keras_attention.runs.run_vectorizers import load_vectorizers
from keras_attention.runs.tokenizer_choice import TokenizerChoice, resolve_run_tokenizer
from keras_attention.runs.train_config import TrainConfig

logger = logging.getLogger(__name__)


def resolve_run_precision(config: TrainConfig, saved: TrainConfig | None) -> PrecisionChoice:
    """The precision of a run, before it starts or resumes.

    `auto` takes the precision of the run's saved config (`saved`; `None`
    without one): a run resumes, or is recognised as completed, in the
    precision it started with, on any machine. Otherwise `auto` is detected
    (`keras_attention.precision.resolve_precision`); an explicit policy is kept.
    """
    if config.precision == AUTO and saved is not None and saved.precision in POLICIES:
        where = RunDirectory(config.out).config
        return PrecisionChoice(saved.precision, AUTO, f"the run's saved precision ({where})")
    return resolve_precision(config.precision)


def _read_saved(directory: RunDirectory) -> TrainConfig | None:
    """The run's saved config; `None` without one, or for one that does not parse (the
    claim then reads it again and says why)."""
    try:
        return TrainConfig.load(directory.path)
    except (OSError, ValueError, TypeError):
        return None


class TrainingRun:
    """A training run opened from its `TrainConfig` (see the module docstring).

    Attributes:
        directory: the run's `RunDirectory`.
        config: the resolved `TrainConfig` (no `auto` precision or tokenizer).
        precision: the `PrecisionChoice` it resolved.
        tokenizer: the `TokenizerChoice` it resolved.
        completed: whether the run already completed with `config` (nothing to train).
        claimed: whether this process claimed the directory (only the chief of a
            distributed run does; the other workers only read it).
    """

    def __init__(
        self,
        config: TrainConfig,
        choices: tuple[PrecisionChoice, TokenizerChoice],
        saved: TrainConfig | None = None,
        read_sample=None,
    ):
        """A run of the resolved `config` (use `open`): `choices` are how its precision and
        tokenizer were resolved, `saved` the run's saved config, `read_sample` returns
        its corpus sample (default: `sample_splits(config)`, read once)."""
        self.directory = RunDirectory(config.out)
        self.config = config
        self.precision, self.tokenizer = choices
        self.claimed = False
        self._saved = saved
        self._read_sample = read_sample or functools.cache(functools.partial(sample_splits, config))
        self.completed = run_state.completed_with(self.directory, config, saved)

    @classmethod
    def open(cls, config: TrainConfig, on_choice=None) -> TrainingRun:
        """Opens `config.out` for `config`: its saved config read once, `auto` resolved.

        Args:
            config: the `TrainConfig` asked for (`auto` values allowed).
            on_choice: called as `on_choice("precision", PrecisionChoice)`, then
                `on_choice("tokenizer", TokenizerChoice)`, as each is resolved;
                not called for a run that already completed.

        A run adapted from another (`config.adapt_from`) takes that run's tokenizer, and
        vocabulary sizes for `auto` (`RunAdaptation.resolved`).

        Raises:
            ValueError: the run completed with other options
                (`run_state.completed_with`), the corpus cannot be used, or the run
                cannot continue the run of `adapt_from` (`RunAdaptation.check`).
            FileNotFoundError: `adapt_from` is not a trained run.
        """
        directory = RunDirectory(config.out)
        saved = _read_saved(directory)
        report = on_choice if on_choice and not run_state.is_completed(directory) else None
        precision = resolve_run_precision(config, saved)  # saved so in config.json
        logger.info("precision: %s", precision.describe())
        if report:
            report("precision", precision)
        config = dataclasses.replace(config, precision=precision.policy)
        if config.adapt_from:  # the tokenizer and vocabularies continue the original run's
            config = RunAdaptation(config.adapt_from).resolved(config)
        # The corpus is read once: here if the tokenizer choice needs it, else for the split.
        read_sample = functools.cache(functools.partial(sample_splits, config))
        tokenizer = resolve_run_tokenizer(config, saved, read_sample)  # saved so too
        if report:
            report("tokenizer", tokenizer)
        return cls(tokenizer.resolved(config), (precision, tokenizer), saved, read_sample)

    def recorded_summary(self) -> dict[str, Any]:
        """The training summary a completed run recorded, marked `already_completed`."""
        recorded = self.directory.read_metrics().get("training", {})
        return {
            **recorded,
            "epochs_run": recorded.get("epochs_run", self.epochs_done()),
            "epochs_this_session": 0,
            "already_completed": True,
        }

    def sample(self, recorded: bool = True) -> CorpusSample:
        """The run's data split: with `recorded`, the sample a resumed run recorded
        (`run_data.run_splits`), else the corpus sample (read once)."""
        return run_splits(self.config, self._read_sample) if recorded else self._read_sample()

    def claim(self, sample: CorpusSample) -> RunDirectory:
        """Claims the directory (`run_data.claim_run`) and writes the run's files."""
        claim_run(self.config, self._saved)
        self.claimed = True
        write_run_files(self.directory, self.config, sample)
        return self.directory

    def vectorizers(self, sample: CorpusSample):
        """`(source, target)` vectorizers: the claimed run's saved ones, else learned from
        `splits` in memory, as the chief learned them."""
        return load_vectorizers(self.directory, self.config, None if self.claimed else sample)

    def training_stream(self, sample, vectorizers, options: DatasetOptions, part, start: int):
        """An endless, deterministic stream of training batches read from the corpus files
        (`training_pairs`, `make_stream`): worker `part[0]` of `part[1]` reads its own lines,
        `options.batch_size` pairs per batch, from batch `start` on (a resumed run continues
        where its backup was taken)."""
        pairs = training_pairs(
            sample.scans,
            held_out(self.config, sample),
            sample.strides,
            self.config.shuffle_buffer,
            self.config.training_seed,
            reverse=self.config.reverse,
            part=part,
        )
        return make_stream(pairs, *vectorizers, options).skip(start)

    def steps_per_epoch(self, sample: CorpusSample) -> int:
        """`config.steps_per_epoch`, or about one pass over the training pairs."""
        if self.config.steps_per_epoch is not None:
            return self.config.steps_per_epoch
        return max(1, math.ceil(sample.training_lines() / self.config.batch_size))

    def position(self) -> tuple[int, int]:
        """`(epoch, step)` where the run's backup was taken (`(0, 0)` without one)."""
        return backed_up_position(self.directory.backup)

    def epochs_done(self) -> int:
        """Epochs the run completed, over all its sessions (`run_state.epochs_done`)."""
        return run_state.epochs_done(self.directory)

    def keep_history(self, epochs: int) -> None:
        """Cuts history.csv back to `epochs` rows (`run_data.keep_history`)."""
        keep_history(self.directory, epochs)

    def best_validation_loss(self, directory: RunDirectory | None = None) -> float | None:
        """The lowest val_loss of history.csv (in `directory`, default: the run's)."""
        return run_state.best_validation_loss(directory or self.directory)

    def record_failure(self, error: BaseException) -> None:
        """Marks a claimed run `failed` with `error`."""
        if self.claimed:
            self._write_state(run_state.FAILED, error=f"{type(error).__name__}: {error}")

    def record_interruption(self, signum: int) -> tuple[int, int]:
        """Marks a claimed run `interrupted` by `signum`; returns its `(epochs done, steps
        into the next epoch)` (`(0, 0)` for a run this process did not claim)."""
        if not self.claimed:
            return 0, 0
        done = self.epochs_done()
        self._write_state(
            run_state.INTERRUPTED, epochs_done=done, signal=signal.Signals(signum).name
        )
        run_state.mark_stale_evaluation(self.directory)
        return done, self.position()[1]

    def record_completion(self, summary: dict[str, Any]) -> None:
        """Records the training summary in metrics.json and marks the run `completed`."""
        self.directory.update_metrics(training=summary)
        run_state.mark_stale_evaluation(self.directory)
        self._write_state(
            run_state.COMPLETED, epochs_done=summary["epochs_run"], stopped_by=summary["stopped_by"]
        )

    def _write_state(self, state: str, epochs_done: int | None = None, **fields) -> None:
        run_state.write_state(
            self.directory,
            state,
            epochs_done=self.epochs_done() if epochs_done is None else epochs_done,
            epochs_planned=self.config.maximum_epochs,
            **fields,
        )
