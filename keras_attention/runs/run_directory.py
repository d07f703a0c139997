"""The one place that knows the layout of a training run's directory."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from keras_attention.runs.backup_files import read_json, write_json_atomically


class RunDirectory:
    """Paths and small I/O helpers of a run directory.

    Layout::

        RUN_DIR/
          config.json               the TrainConfig of the run
          data.json                 the corpora (files, line counts, weights) and the sample
          source_vocabulary.txt     --tokenizer words: one token per line (see save_vocabulary)
          target_vocabulary.txt
          target_spacing.json       --tokenizer words: the target side's measured spacing
          source_subwords.model     --tokenizer subwords: SentencePiece models
          target_subwords.model       (see keras_attention.text.subword_model)
          splits/validation.tsv     source<TAB>target pairs held out for validation
          splits/test.tsv           source<TAB>target pairs held out for evaluation
          model.keras               the best model (lowest validation loss)
          backup/                   resume state while training (removed at the end)
          epochs/epoch-N.npz        model weights after epoch N (the last --keep-epoch-weights)
          logs/                     TensorBoard logs
          history.csv               per-epoch training and validation metrics
          plan.json                 the steps planned to fit the time budget (budget_plan)
          state.json                training / interrupted / completed / failed (run_state)
          metrics.json              training summary, then evaluation results
          translations.greedy.tsv   the evaluation's translations of the test split
          translations.beam.tsv       (source<TAB>translation; `keras-attention evaluate`)
          plots/                    PNG files written by `keras-attention plot`
    """

    CONFIG = "config.json"
    """The file name of a run's `TrainConfig` (`TrainConfig.save` / `TrainConfig.load`)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunDirectory({str(self.path)!r})"

    @property
    def config(self) -> Path:
        return self.path / self.CONFIG

    @property
    def data_summary(self) -> Path:
        """The run's record of its corpora and sample (`CorpusSample.summary`)."""
        return self.path / "data.json"

    @property
    def source_vocabulary(self) -> Path:
        return self.path / "source_vocabulary.txt"

    @property
    def target_vocabulary(self) -> Path:
        return self.path / "target_vocabulary.txt"

    @property
    def source_subword_model(self) -> Path:
        return self.path / "source_subwords.model"

    @property
    def target_subword_model(self) -> Path:
        return self.path / "target_subwords.model"

    @property
    def target_spacing(self) -> Path:
        return self.path / "target_spacing.json"

    def tokenizer_files(self, tokenizer: str) -> tuple[Path, Path]:
        """The `(source, target)` files of the vectorizers for `TrainConfig.tokenizer`."""
        if tokenizer == "subwords":
            return self.source_subword_model, self.target_subword_model
        if tokenizer == "words":
            return self.source_vocabulary, self.target_vocabulary
        raise ValueError(f"Unknown tokenizer {tokenizer!r}: expected 'words' or 'subwords'")

    def tokenizer(self) -> str:
        """The `tokenizer` of config.json (`"words"` for runs from before the field)."""
        if not self.config.is_file():
            return "words"
        return json.loads(self.config.read_text(encoding="utf-8")).get("tokenizer", "words")

    @property
    def validation_split(self) -> Path:
        return self.path / "splits" / "validation.tsv"

    @property
    def test_split(self) -> Path:
        return self.path / "splits" / "test.tsv"

    @property
    def model(self) -> Path:
        return self.path / "model.keras"

    @property
    def backup(self) -> Path:
        return self.path / "backup"

    @property
    def epoch_weights(self) -> Path:
        """The folder of the kept epoch weights (`TrainConfig.keep_epoch_weights`)."""
        return self.path / "epochs"

    def epoch_weights_file(self, epoch: int) -> Path:
        """The model weights after epoch `epoch` (counted from 1), one array per weight."""
        return self.epoch_weights / f"epoch-{epoch}.npz"

    def kept_epoch_weights(self) -> list[tuple[int, Path]]:
        """`(epoch, file)` of every kept epoch weights file, oldest first."""
        kept = []
        for path in self.epoch_weights.glob("epoch-*.npz"):
            number = path.name[len("epoch-") : -len(".npz")]
            if number.isdigit():
                kept.append((int(number), path))
        return sorted(kept)

    @property
    def logs(self) -> Path:
        return self.path / "logs"

    @property
    def history(self) -> Path:
        return self.path / "history.csv"

    @property
    def plan(self) -> Path:
        return self.path / "plan.json"

    @property
    def state(self) -> Path:
        return self.path / "state.json"

    @property
    def metrics(self) -> Path:
        return self.path / "metrics.json"

    def translations(self, decoding: str) -> Path:
        """The evaluation's translations by `decoding` (`"greedy"` or `"beam"`)."""
        return self.path / f"translations.{decoding}.tsv"

    @property
    def plots(self) -> Path:
        return self.path / "plots"

    def restart_leftovers(self) -> tuple[Path, ...]:
        """What a run with no completed epoch may hold: removed when it restarts with other
        options (`run_state.claim_run_directory`)."""
        return (
            self.config,
            self.source_vocabulary,
            self.target_vocabulary,
            self.target_spacing,
            self.source_subword_model,
            self.target_subword_model,
            self.validation_split.parent,
            self.backup,
            self.epoch_weights,
            self.logs,
            self.history,
            self.metrics,
            self.state,
        )

    def require_trained(self) -> None:
        """Raises a clear error unless this directory holds a trained model."""
        if not self.path.is_dir():
            raise FileNotFoundError(f"Run directory {str(self.path)!r} does not exist")
        missing = [
            p.name
            for p in (self.config, self.model, *self.tokenizer_files(self.tokenizer()))
            if not p.is_file()
        ]
        if missing:
            raise FileNotFoundError(
                f"{str(self.path)!r} is not a trained run directory: missing {', '.join(missing)}"
            )

    def read_metrics(self) -> dict[str, Any]:
        """metrics.json as a dict (`{}` when there is none).

        Raises:
            ValueError: the file is not JSON (read several times first).
        """
        return read_json(self.metrics) or {}

    def update_metrics(self, **sections: Any) -> dict[str, Any]:
        """Merges `sections` into metrics.json (written atomically)."""
        metrics = self.read_metrics()
        metrics.update(sections)
        write_json_atomically(self.metrics, metrics)
        return metrics

    def write_pairs(self, path: Path, pairs) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            for source, target in pairs:
                f.write(f"{source}\t{target}\n")
