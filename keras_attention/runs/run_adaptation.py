"""A trained run continued on a new corpus: `RunAdaptation` (`keras-attention adapt`).

The adapted run is an ordinary run directory (config, vocabularies, splits,
backups, model.keras) whose `TrainConfig.adapt_from` names the trained run it
continues, "the original run":

- **Vocabularies.** Word vocabularies are the original run's, every token at
  its old id, with the new corpus's frequent words they lack appended
  (`extend_vocabulary`: seen at least `MIN_NEW_WORD_COUNT` times in the new
  corpus's sampled training pairs, most frequent first), up to the adapted
  run's vocabulary sizes (by default the original's plus `DEFAULT_NEW_WORDS`).
  Subword runs keep the original run's SentencePiece models: their pieces
  spell any word of the new corpus, and every row keeps its meaning.
- **Weights.** The adapted model starts from the original model's weights:
  every row of a token of both vocabularies copied exactly, each new word's
  row the mean of the old words' rows (`grow_vocabulary_weights`). A
  resumed adapted run starts from its backup instead.
- **Data.** The new corpus gives the training pairs, the validation and the
  test split (by the original run's held-out key and shares, `seed`,
  `validation_fraction`, `test_fraction`). With `mix_original` W
  (`MIX_ORIGINAL` by default, 0 for none), the original run's training
  corpora are mixed into the training stream with a share W of its pairs
  (their weights scaled; `tf.data` streams them, none is sampled or held in
  memory); the same held-out key keeps the original's validation and test
  sentences out of training.
- **Schedule.** `adapted_config` plans `TIME_BUDGET_MINUTES` minutes (the
  budget plan of `epochs="auto"`, the cosine schedule ending with the budget)
  from `LEARNING_RATE_SHARE` times the original's learning rate.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from keras_attention.auto import AUTO
from keras_attention.data.corpus import CorpusError
from keras_attention.data.corpus_files import CorpusFiles, corpus_list
from keras_attention.runs.run_directory import RunDirectory
from keras_attention.runs.train_config import TrainConfig

DEFAULT_NEW_WORDS = 2000
"""Words per side an adapted word vocabulary may add, by default."""

MIN_NEW_WORD_COUNT = 2
"""The fewest times a new word is seen in the new corpus's sampled training pairs to be
added: a word seen once would get a row learned from one sentence (and `[UNK]`
replacement copies such words through attention)."""

TIME_BUDGET_MINUTES = 5.0
"""The time budget of an adapted run, by default."""

LEARNING_RATE_SHARE = 0.25
"""An adapted run's learning rate (the cosine schedule's peak) as a share of the original
run's: the model is trained already, and a smaller step forgets less of it."""

MIX_ORIGINAL = 0.8
"""The share of an adapted run's training pairs drawn from the original run's corpora, by
default. Measured on one topic of the bundled corpus (docs/improve-and-adapt.md): 0.8 kept
the general test within 1 BLEU of the original run, greedy and beam, with and without
unknown-word replacement, while the topic's test gained over 20 BLEU; smaller shares
learned the topic a little better and forgot more (0.3 lost about 4 on the general test)."""

HELD_OUT_FIELDS = ("seed", "validation_fraction", "test_fraction")
"""The fields that decide which sentences are held out: an adapted run that mixes in the
original corpora keeps them, so that the original's held-out sentences stay held out."""


def _model_description(config: TrainConfig) -> dict:
    """The model a config builds, besides its vocabulary sizes, dropout and dtype."""
    arguments = config.model_arguments()
    for name in ("dropout", "dtype"):
        arguments.pop(name)
    attention = arguments.get("attention")
    if isinstance(attention, dict):  # its layer config holds the dtype policy too
        config_part = {k: v for k, v in attention.get("config", {}).items() if k != "dtype"}
        arguments["attention"] = {**attention, "config": config_part}
    return {**arguments, "reverse": config.reverse}


class RunAdaptation:
    """A trained run as the start of an adapted run (see the module docstring).

    Example (the bundled run adapted to a file of in-domain pairs):

        adaptation = RunAdaptation("runs/fra-eng")
        config = adaptation.adapted_config(["support.tsv"], "runs/support")
        keras_attention.training.trainer.train(config)

    Args:
        original: the trained run directory to continue.

    Attributes:
        directory: its `RunDirectory`.
        config: its `TrainConfig`.

    Raises:
        FileNotFoundError: `original` is not a trained run directory.
    """

    def __init__(self, original: str | os.PathLike):
        self.directory = RunDirectory(original)
        self.directory.require_trained()
        self.config = TrainConfig.load(self.directory.path)

    def vocabulary_sizes(self) -> tuple[int, int]:
        """The entries of the original run's source and target vocabularies."""
        if self.config.tokenizer == "subwords":
            return self.config.source_vocabulary_size, self.config.target_vocabulary_size
        from keras_attention.text import load_vocabulary

        files = self.directory.tokenizer_files("words")
        return len(load_vocabulary(files[0])), len(load_vocabulary(files[1]))

    def adapted_config(
        self,
        data: list[str],
        out: str | os.PathLike,
        mix_original: float = MIX_ORIGINAL,
        new_words: int = DEFAULT_NEW_WORDS,
        **changes,
    ) -> TrainConfig:
        """The `TrainConfig` of the run adapting this one to `data`, into `out`.

        The original run's config, with: `data`, `out`, `adapt_from`,
        `mix_original` (0 trains on `data` alone); vocabulary sizes of at most
        `new_words` more words per side (subwords: the original's); `epochs="auto"` in
        `TIME_BUDGET_MINUTES` at `LEARNING_RATE_SHARE` times the original's
        learning rate; no `max_pairs`, no validation or test files (the new
        corpus's held-out shares). `changes` then replace any field
        (`epochs=2`, `time_budget_minutes=None`, `learning_rate=1e-4`, ...).

        Raises:
            ValueError: no `data`, a bad `mix_original` or `new_words`, `out`
                is the original run or holds another run, or a change the
                adapted model cannot take (`check`).
            CorpusError: a corpus of `data` does not exist.
        """
        if not data:
            raise ValueError("Give the new corpus to adapt to (--data SPEC ...)")
        data = [data] if isinstance(data, str) else list(data)
        corpus_list(data)  # a missing file is named before anything starts
        if isinstance(new_words, bool) or not isinstance(new_words, int) or new_words < 0:
            raise ValueError(f"`new_words` must be an int >= 0. Received: new_words={new_words!r}")
        sizes = self.vocabulary_sizes()
        if self.config.tokenizer == "words":
            sizes = tuple(size + new_words for size in sizes)
        config = dataclasses.replace(
            self.config,
            data=data,
            out=str(out),
            adapt_from=str(self.directory.path.resolve()),  # a run found from any directory
            mix_original=mix_original,
            source_vocabulary_size=sizes[0],
            target_vocabulary_size=sizes[1],
            epochs=AUTO,
            time_budget_minutes=TIME_BUDGET_MINUTES,
            learning_rate=self.config.learning_rate * LEARNING_RATE_SHARE,
            max_pairs=None,
            validation_data=None,
            test_data=None,
        )
        config = dataclasses.replace(config, **changes)
        self.check(config)
        target = RunDirectory(config.out)
        if target.config.is_file():
            differences = TrainConfig.load(target.path).differences(config)
            if differences:
                raise ValueError(
                    f"--out {config.out!r} holds another run ({'; '.join(differences)}: saved "
                    "-> asked); adapt into a new directory, or repeat the command that "
                    "started that run to resume it"
                )
        return config

    def resolved(self, config: TrainConfig) -> TrainConfig:
        """`config` (whose `adapt_from` is this run) with the original's tokenizer, and its
        `auto` (or `None`) vocabulary sizes resolved: the original's sizes, plus
        `DEFAULT_NEW_WORDS` with words. Checked (`check`)."""
        sizes = self.vocabulary_sizes()
        if self.config.tokenizer == "words":
            sizes = tuple(size + DEFAULT_NEW_WORDS for size in sizes)
        names = ("source_vocabulary_size", "target_vocabulary_size")
        config = dataclasses.replace(
            config,
            tokenizer=self.config.tokenizer if config.tokenizer == AUTO else config.tokenizer,
            **{
                name: size
                for name, size in zip(names, sizes, strict=True)
                if getattr(config, name) in (AUTO, None)
            },
        )
        self.check(config)
        return config

    def check(self, config: TrainConfig) -> None:
        """Raises unless `config` can continue this run.

        Raises:
            ValueError: `config.out` is this run; another tokenizer; another
                model (architecture, sides); word vocabulary sizes below the
                original's, or subword sizes other than its models'; or, with
                `mix_original`, other held-out fields, or an original run whose
                validation or test split came from a file (`--validation-data`,
                `--test-data`: its training stream left their sources out).
        """
        where = repr(str(self.directory.path))
        if Path(config.out).resolve() == self.directory.path.resolve():
            raise ValueError(f"--out must be a new run directory, not the original run {where}")
        if config.tokenizer != self.config.tokenizer:
            raise ValueError(
                f"{where} was trained with --tokenizer {self.config.tokenizer}, so its adapted "
                f"runs are too. Received: tokenizer={config.tokenizer!r}"
            )
        original, asked = _model_description(self.config), _model_description(config)
        differences = [
            f"{name}: {value!r} -> {asked.get(name)!r}"
            for name, value in original.items()
            if asked.get(name) != value
        ]
        if differences:
            raise ValueError(
                f"An adapted run keeps the model of {where}; these differ: "
                f"{'; '.join(differences)} (original -> asked)"
            )
        sizes = (config.source_vocabulary_size, config.target_vocabulary_size)
        kept = self.vocabulary_sizes()
        if config.tokenizer == "subwords" and sizes != kept:
            raise ValueError(
                f"An adapted subword run keeps the SentencePiece models of {where}, of "
                f"{kept[0]} / {kept[1]} pieces. Received: vocabulary sizes {sizes}"
            )
        if any(size < old for size, old in zip(sizes, kept, strict=True)):
            raise ValueError(
                f"The vocabularies of {where} have {kept[0]} / {kept[1]} entries; an "
                f"adapted run extends them. Received: vocabulary sizes {sizes}"
            )
        if config.mix_original:
            changed = [f for f in HELD_OUT_FIELDS if getattr(config, f) != getattr(self.config, f)]
            files = [f for f in ("validation_data", "test_data") if getattr(self.config, f)]
            if changed or files:
                raise ValueError(
                    f"Mixing in the corpora of {where} (--mix-original) needs its held-out "
                    f"sentences to stay out of training: keep its {', '.join(changed or files)}"
                    f"{' (given as files)' if files and not changed else ''}, or mix in none "
                    "(--mix-original 0)"
                )

    def corpora(self, config: TrainConfig) -> list[CorpusFiles]:
        """The original run's training corpora as `config` mixes them in: weighted so that
        they give a share `config.mix_original` of the training pairs, named `original: NAME`
        (none when `mix_original` is 0).

        Raises:
            CorpusError: a corpus of the original run is gone (named).
        """
        share = config.mix_original
        if not share:
            return []
        try:
            original = corpus_list(self.config.data)
        except CorpusError as error:
            raise CorpusError(
                f"The corpora of {str(self.directory.path)!r} (--mix-original): {error} "
                "(give --mix-original 0 to adapt on the new corpus alone)"
            ) from None
        new_weight = sum(corpus.weight for corpus in corpus_list(config.data))
        scale = new_weight * share / (1 - share) / sum(corpus.weight for corpus in original)
        return [
            dataclasses.replace(
                corpus, name=f"original: {corpus.name}", weight=corpus.weight * scale
            )
            for corpus in original
        ]

    def vocabularies(self, config: TrainConfig, sample) -> tuple[object, object]:
        """The adapted run's `(source, target)` word vocabularies (the original's, extended
        with the frequent words of `sample.train`, the new corpus's sampled training pairs),
        or the original's subword models."""
        from keras_attention.text import extend_vocabulary, load_subword_model, load_vocabulary

        files = self.directory.tokenizer_files(config.tokenizer)
        if config.tokenizer == "subwords":
            return load_subword_model(files[0]), load_subword_model(files[1])
        sides = (
            (files[0], [source for source, _ in sample.train], config.source_vocabulary_size),
            (files[1], [target for _, target in sample.train], config.target_vocabulary_size),
        )
        return tuple(
            extend_vocabulary(load_vocabulary(path), texts, size, MIN_NEW_WORD_COUNT)
            for path, texts, size in sides
        )

    def initialize(self, model) -> list[str]:
        """Sets the built `model` of the adapted run from the original run's model
        (`grow_vocabulary_weights`); returns the paths of the weights that grew."""
        import keras

        from keras_attention.models.seq2seq import Seq2Seq  # registers the saved class
        from keras_attention.models.vocabulary_growth import grow_vocabulary_weights

        original = keras.saving.load_model(self.directory.model, compile=False)
        if not isinstance(original, Seq2Seq):
            raise ValueError(f"{str(self.directory.model)!r} holds no Seq2Seq")
        return grow_vocabulary_weights(original, model)

    def describe_vocabularies(self, config: TrainConfig) -> str:
        """One line: what the adapted run's vocabularies are, or will be."""
        where = str(self.directory.path)
        if config.tokenizer == "subwords":
            return (
                f"the SentencePiece models of {where}, kept (their pieces spell any word of "
                "the new corpus)"
            )
        old = self.vocabulary_sizes()
        files = RunDirectory(config.out).tokenizer_files("words")
        if not all(path.is_file() for path in files):
            asked = (config.source_vocabulary_size, config.target_vocabulary_size)
            return (
                f"the word vocabularies of {where} ({old[0]} / {old[1]} entries), extended "
                f"with the new corpus's words seen at least {MIN_NEW_WORD_COUNT} times, to at "
                f"most {asked[0]} / {asked[1]} entries"
            )
        from keras_attention.text import load_vocabulary

        new = [len(load_vocabulary(path)) for path in files]
        return (
            f"source {old[0]} + {new[0] - old[0]} new words, target {old[1]} + "
            f"{new[1] - old[1]} new words (the vocabularies of {where}, extended)"
        )
