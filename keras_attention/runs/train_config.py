"""The configuration of one training run, saved beside it (`RunDirectory.config`)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from keras_attention.attention_recipe import conditional_query, luong_scaling
from keras_attention.auto import AUTO
from keras_attention.decoding_defaults import DEFAULT_MAX_OUTPUT_LENGTH
from keras_attention.precision import resolve_precision
from keras_attention.runs.run_directory import RunDirectory
from keras_attention.runs.train_config_checks import check_values

CHOICES = {
    "attention": ("luong", "bahdanau", "none"),
    "score": ("dot", "general", "concat", "scaled_dot", "cosine", "location"),
    "cell": ("gru", "lstm"),
    "precision": ("auto", "float32", "mixed_bfloat16", "mixed_float16"),
    "tokenizer": ("auto", "subwords", "words"),
    "learning_rate_schedule": ("cosine", "constant"),
}
"""The allowed values of the fields that take one of a few names.

Kept here, free of TensorFlow, so `--help` lists them instantly; a test checks
them against the models' own lists (`ATTENTION_TYPES`, `SCORES`, `RNN_CELLS`).
"""

VOCABULARY_SIZES = {"subwords": (8000, 8000), "words": (12000, 16000)}
"""Fixed (source, target) vocabulary sizes per tokenizer: what a size of `None`
means, and the most entries an `auto` word vocabulary has. Word vocabularies
need more entries to cover a corpus; subword pieces spell every word.
Measurements: docs/results.md and docs/research/model-notes.md."""

FLOAT32_TARGET_WORDS = 8000
"""The most entries an `auto` target word vocabulary has in a run computing in float32
(no native bfloat16: `--precision auto` resolved so, or given). The output layer's cost
grows with the target vocabulary, and `[UNK]` replacement (on by default) translates the
rarer words through attention; with float32's slower steps, the steps saved are worth more
than the words (measured: docs/results.md, "Without native bfloat16")."""

MIN_VOCABULARY_SIZE = 5
"""The smallest vocabulary size: the 4 reserved tokens and one more."""

AUTO_EPOCHS = 16
"""The most epochs `epochs="auto"` trains: 16 x 500 steps. The default recipe still
gained from 4,000 to 8,000 steps (docs/results.md, "Steps"); a CPU with native bfloat16
plans more than 4,000 in the default 20-minute budget, and early stopping ends a run
that stops improving sooner."""


def _field(default, help_text: str):
    """A `TrainConfig` field: its default, and its description, the help of its
    `keras-attention train` flag (`keras_attention.cli` makes one flag per field; a test
    checks every field has its flag and its row in docs/cli.md)."""
    return dataclasses.field(default=default, metadata={"help": help_text})


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a training run.

    Frozen: a run's resolved config (`keras_attention.runs.training_run.TrainingRun`)
    is a new one, made with `dataclasses.replace`. Each field's description is the help
    of its `keras-attention train` flag (`dataclasses.fields(TrainConfig)[i].metadata["help"]`).

    The defaults train the bundled English→French corpus on a 2-core CPU
    within the 20-minute `time_budget_minutes`. Measurements:
    docs/results.md and docs/research/model-notes.md.
    """

    data: list[str] | None = _field(
        None,
        "training corpora, one or more SPECs: a TSV file or glob of shards (plain or "
        ".gz); path=PATH,weight=W; src=PATH,tgt=PATH,weight=W for aligned plain-text "
        "files; or a .toml data file (docs/data.md) (default: the bundled fra-eng corpus)",
    )
    validation_data: str | None = _field(
        None,
        "a validation corpus SPEC instead of the hashed share of the training corpora "
        "(its sources are never trained on) (default: none)",
    )
    test_data: str | None = _field(
        None,
        "a test corpus SPEC instead of the hashed share of the training corpora (its "
        "sources are never trained on) (default: none)",
    )
    adapt_from: str | None = _field(
        None, "a trained run this run continues (see keras-attention adapt) (default: none)"
    )
    mix_original: float = _field(
        0.0, "with --adapt-from: the share of training pairs drawn from that run's corpora"
    )
    reverse: bool = _field(
        False,
        "swap the corpus columns: translate its second column into its first (the bundled"
        " corpus: French to English)",
    )
    out: str = _field(
        "runs/fra-eng",
        "run directory (config, vocabularies, model, logs, metrics); re-run to resume",
    )
    attention: str = _field(
        "luong", "attention mechanism; none = the plain encoder-decoder baseline"
    )
    score: str = _field(
        "cosine",
        "Luong score function (dot, scaled_dot and cosine need decoder units = 2 x encoder units)",
    )
    cell: str = _field("gru", "RNN cell")
    embedding_dim: int = _field(256, "embedding size (source and target)")
    encoder_units: int = _field(256, "encoder RNN units per direction")
    decoder_units: int = _field(512, "decoder RNN units")
    encoder_layers: int = _field(1, "stacked bidirectional encoder layers")
    attention_units: int | None = _field(
        None, "units of the additive/concat score (default: decoder units)"
    )
    normalize: bool = _field(False, "weight-normalized Bahdanau score (--attention bahdanau)")
    score_scale: bool | None = _field(
        None,
        "multiply the Luong scores by a learned scalar g (default: on for cosine, g from "
        "sqrt(d), and scaled_dot, g from 1; off for the others)",
    )
    scale_by_dimension: bool | None = _field(
        None,
        "divide the Luong dot or general scores by sqrt(d) (default: on for general, off for dot)",
    )
    input_feeding: bool = _field(False, "Luong input feeding")
    conditional: bool | None = _field(
        None,
        "Bahdanau decoder: query with the state after reading the previous token (the "
        "conditional GRU of Sennrich et al., 2017) instead of s_{t-1}; GRU only (default:"
        " on with --attention bahdanau and GRU cells)",
    )
    tie_embeddings: bool = _field(True, "tie the output projection to the target embeddings")
    dropout: float = _field(0.1, "dropout rate")
    tokenizer: str = _field(
        AUTO,
        "subwords: SentencePiece models learned from the training split, any language, no"
        " [UNK]; words: rule-based word tokens (tuned for English and French) and word "
        "vocabularies; auto = words when vocabularies of every word of the training split"
        " (at most 12000 / 16000) hold at least 98% of each side's tokens and the source "
        "has under 0.15 words seen once per training pair, else subwords (measured: "
        "docs/results.md); resolved once for a new run and saved in config.json "
        "(default: auto)",
    )
    source_vocabulary_size: int | str | None = _field(
        AUTO,
        "source vocabulary size (words or subword pieces), reserved tokens included; auto"
        " = 8000 pieces, or every word of the training split (at most 12000); none = 8000"
        " with subwords, 12000 with words (default: auto)",
    )
    target_vocabulary_size: int | str | None = _field(
        AUTO,
        "target vocabulary size (words or subword pieces), reserved tokens included; auto"
        " = 8000 pieces, or every word of the training split (at most 16000, or 8000 in "
        "float32); none = 8000 with subwords, 16000 with words (default: auto)",
    )
    french_spacing: bool | None = _field(
        None,
        "override the target spacing measured on the training targets: French (space "
        "before ! ? : ;, inside « ») or, with --no-french-spacing, none; needs "
        "--tokenizer words (default: measured)",
    )
    max_length: int = _field(
        30, "tokens per side; longer training pairs are dropped, longer inputs truncated"
    )
    max_output_length: int = _field(DEFAULT_MAX_OUTPUT_LENGTH, "most tokens a translation may have")
    batch_size: int = _field(64, "sentence pairs per batch")
    epochs: int | str = _field(
        AUTO,
        "epochs to train; auto: as many as fit --time-budget-minutes, at most 16, with "
        "the learning-rate schedule ending on the last step (an int trains exactly that "
        "many, unless the budget runs out first)",
    )
    steps_per_epoch: int | None = _field(
        500, "batches per epoch ('none' = one pass over the training split)"
    )
    learning_rate: float = _field(2e-3, "Adam learning rate (the peak of the cosine schedule)")
    learning_rate_schedule: str = _field(
        "cosine", "cosine: decay to 2% of --learning-rate over epochs x steps per epoch; constant"
    )
    global_clipnorm: float = _field(5.0, "clip the global gradient norm")
    label_smoothing: float = _field(
        0.0, "label smoothing eps in [0, 1): target (1 - eps) x one-hot + eps / V, padding ignored"
    )
    ema: bool = _field(
        False,
        "keep a moving average of the weights (use_ema), which validation, the saved model "
        "and the kept epoch weights use; the backup keeps both (docs/improve-and-adapt.md)",
    )
    ema_momentum: float = _field(0.999, "--ema's m: average = m x average + (1 - m) x weights")
    keep_epoch_weights: int = _field(
        0,
        "keep the weights of this many last epochs in RUN_DIR/epochs/ for keras-attention average",
    )
    precision: str = _field(
        "auto",
        "dtype policy; auto = mixed_bfloat16 on a GPU or a CPU with native bfloat16 "
        "(AVX512_BF16, AMX), float32 elsewhere, a resumed run's saved precision; saved "
        "resolved in config.json (measurements: docs/benchmarks.md)",
    )
    jit_compile: bool = _field(
        False,
        "compile the training step with XLA (slower on CPU with the length buckets: "
        "docs/benchmarks.md)",
    )
    max_pairs: int | None = _field(
        None, "train on about this many lines of the corpora, every k-th line ('none' = all)"
    )
    sample_pairs: int = _field(
        300_000,
        "pairs read into memory, across all corpora, for the vocabularies, the tokenizer "
        "choice and the validation and test splits",
    )
    shuffle_buffer: int = _field(200_000, "training pairs held in the shuffle buffers")
    max_length_ratio: float | None = _field(
        9.0,
        "drop training pairs whose longer side has more than this many times the tokens "
        "of the shorter ('none' = keep all)",
    )
    validation_fraction: float = _field(
        0.02, "share of source sentences held out for validation (by a hash of the sentence)"
    )
    test_fraction: float = _field(
        0.02, "share of source sentences held out for the test split (by a hash of the sentence)"
    )
    seed: int = _field(
        0,
        "random seed of the held-out splits (and so of the vocabularies), and of the "
        "initialization and the training order unless --init-seed is given",
    )
    init_seed: int | None = _field(
        None,
        "seed of the initialization, dropout and training order only: runs that differ "
        "by it alone share their splits and vocabularies, as an ensemble's members must "
        "(default: --seed)",
    )
    patience: int = _field(3, "early stopping patience in epochs (on validation loss)")
    time_budget_minutes: float | None = _field(
        20.0, "stop training after this many minutes ('none' = no limit)"
    )

    def __post_init__(self):
        # Normalized and resolved values are set once, here (the dataclass is frozen).
        if isinstance(self.data, str):  # one spec, as config.json of older runs holds it
            object.__setattr__(self, "data", [self.data])
        elif self.data is not None:
            object.__setattr__(self, "data", list(self.data))
        for name, choices in CHOICES.items():
            value = getattr(self, name)
            if value not in choices:
                raise ValueError(f"`{name}` must be one of {choices}. Received: {name}={value!r}")
        for index, name in enumerate(("source_vocabulary_size", "target_vocabulary_size")):
            value = getattr(self, name)
            if value is None and self.tokenizer != AUTO:  # else: once the tokenizer is chosen
                object.__setattr__(self, name, VOCABULARY_SIZES[self.tokenizer][index])
            elif value not in (AUTO, None) and (
                isinstance(value, bool) or not isinstance(value, int) or value < MIN_VOCABULARY_SIZE
            ):
                raise ValueError(
                    f"`{name}` must be 'auto', None or an int >= {MIN_VOCABULARY_SIZE} (the 4 "
                    f"reserved tokens and at least one more). Received: {name}={value!r}"
                )
        recipe = luong_scaling(self.score)
        for name, option in (
            ("score_scale", "scale"),
            ("scale_by_dimension", "scale_by_dimension"),
        ):
            value = getattr(self, name)
            if value is not None and not isinstance(value, bool):
                raise ValueError(f"`{name}` must be a boolean or None. Received: {name}={value!r}")
            if self.attention == "luong" and value is None:
                object.__setattr__(self, name, recipe[option])  # saved resolved
        if self.conditional is not None and not isinstance(self.conditional, bool):
            raise ValueError(
                f"`conditional` must be a boolean or None. Received: conditional={self.conditional!r}"
            )
        if self.conditional is None:  # saved resolved, in config.json
            object.__setattr__(self, "conditional", conditional_query(self.attention, self.cell))
        check_values(self)

    @property
    def maximum_epochs(self) -> int:
        """The most epochs the run trains: `epochs`, or `AUTO_EPOCHS` for `auto`."""
        return AUTO_EPOCHS if self.epochs == AUTO else self.epochs

    @property
    def training_seed(self) -> int:
        """The seed of the weights' initialization, dropout and the order of the training
        pairs: `init_seed`, or `seed` without one (the held-out splits always take `seed`)."""
        return self.seed if self.init_seed is None else self.init_seed

    @property
    def plans_to_budget(self) -> bool:
        """Whether the run plans its steps to fit its time budget (`epochs="auto"`)."""
        return self.epochs == AUTO and self.time_budget_minutes is not None

    def model_arguments(self) -> dict:
        """The `Seq2Seq` keyword arguments of this run, besides the vocabulary sizes.

        One nested description: the attention layer is given as a serialized
        layer (`{"class_name", "registered_name", "config"}`), which `Seq2Seq`
        deserializes, so this module needs no TensorFlow.
        """
        arguments = {
            "embedding_dim": self.embedding_dim,
            "encoder_units": self.encoder_units,
            "decoder_units": self.decoder_units,
            "encoder_layers": self.encoder_layers,
            "cell": self.cell,
            "attention": self._attention_description(),
            "decoder": "luong" if self.attention == "luong" else "bahdanau",
            "tie_embeddings": self.tie_embeddings,
            "dropout": self.dropout,
            "dtype": resolve_precision(self.precision).policy,
        }
        if self.attention == "luong":
            arguments["input_feeding"] = self.input_feeding
        else:
            arguments["conditional"] = self.conditional
        return arguments

    def _attention_description(self) -> dict | None:
        units = self.attention_units or self.decoder_units
        if self.attention == "bahdanau":
            layer, config = "BahdanauAttention", {"units": units, "normalize": self.normalize}
        elif self.attention == "luong":
            layer = "LuongAttention"
            config = {
                "score": self.score,
                "units": units if self.score == "concat" else None,
                "max_length": self.max_length if self.score == "location" else None,
                "scale": self.score_scale,
                "scale_by_dimension": self.scale_by_dimension,
            }
        else:
            return None
        return {
            "class_name": layer,
            "registered_name": f"keras_attention>{layer}",
            "config": {
                **config,
                "name": "attention",
                "dtype": resolve_precision(self.precision).policy,
            },
        }

    def differences(self, other: TrainConfig, ignore: tuple[str, ...] = ("out",)) -> list[str]:
        """The fields that differ from `other`, as `"name: mine -> other's"` lines.

        `out` is ignored by default: the run directory is the run's identity,
        however its path is spelled.
        """
        return [
            f"{field.name}: {getattr(self, field.name)!r} -> {getattr(other, field.name)!r}"
            for field in dataclasses.fields(self)
            if field.name not in ignore and getattr(self, field.name) != getattr(other, field.name)
        ]

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> TrainConfig:
        values = json.loads(text)
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"Unknown training config keys: {unknown}")
        # Runs saved before these fields existed trained at a constant rate, on words.
        values.setdefault("learning_rate_schedule", "constant")
        values.setdefault("tokenizer", "words")
        # Runs saved before `conditional` existed queried with s_{t-1}.
        values.setdefault("conditional", False)
        # Before `score_scale`, only the cosine score learned its scale; None keeps that.
        values.setdefault("score_scale", False if values.get("score") == "scaled_dot" else None)
        return cls(**values)

    def save(self, run_dir: str | os.PathLike) -> Path:
        path = RunDirectory(run_dir).config
        path.write_text(self.to_json() + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, run_dir: str | os.PathLike) -> TrainConfig:
        path = RunDirectory(run_dir).config
        if not path.is_file():
            raise FileNotFoundError(f"No {path.name} in run directory {str(run_dir)!r}")
        return cls.from_json(path.read_text(encoding="utf-8"))
