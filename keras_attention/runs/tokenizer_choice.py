"""`--tokenizer auto`: words or subwords, and the vocabulary sizes, from the corpus.

A new run resolves `auto` once, before its vocabularies are learned, from
what its training split shows (`CorpusStatistics`). The rule
(`choose_tokenizer`):

1. Words, each side's vocabulary holding every word (token of
   `keras_attention.text.tokenize`) of the training split, at most
   `VOCABULARY_SIZES["words"]` entries (reserved tokens included; the most
   frequent words are kept), when those vocabularies hold at least
   `WORDS_MIN_COVERAGE` of each side's word tokens in the training split
   and the source side has fewer than `SUBWORDS_MIN_SOURCE_ONCE_PER_PAIR`
   words seen only once per training pair.
2. Subwords otherwise, SentencePiece with `SUBWORD_PIECES` pieces per side:
   a capped word vocabulary would leave too many words `[UNK]`, or too many
   source words would have an embedding learned from one sentence.

The measurements behind the rule and its thresholds: docs/results.md
("Words or subwords") and benchmarks/results/tokenizer_choice.json.

A run computing in float32 (`precision`, resolved before the tokenizer) has
an `auto` target word vocabulary of at most `FLOAT32_TARGET_WORDS` entries.

An explicit `tokenizer` or vocabulary size is kept; a size of `None` is the
chosen tokenizer's fixed default (`VOCABULARY_SIZES`). A run that resumes, or
is found completed, keeps the choice saved in its config
(`resolve_run_tokenizer`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence

from keras_attention.runs import run_data
from keras_attention.runs.run_directory import RunDirectory
from keras_attention.runs.train_config import (
    AUTO,
    FLOAT32_TARGET_WORDS,
    VOCABULARY_SIZES,
    TrainConfig,
)

logger = logging.getLogger(__name__)

WORDS_MIN_COVERAGE = 0.98
"""The share of each side's word tokens in the training split (counted with
repeats) that `auto` word vocabularies must hold for words to be chosen."""

SUBWORDS_MIN_SOURCE_ONCE_PER_PAIR = 0.15
"""Source words seen once per training pair from which `auto` picks subwords
(fitted on the bundled corpus: docs/results.md, "Words or subwords")."""

SUBWORD_PIECES = 8000
"""Pieces per side of an `auto` subword vocabulary."""

RESERVED_TOKENS = 4
"""Entries every vocabulary reserves (padding, `[UNK]`, `[START]`, `[END]`:
`keras_attention.text.RESERVED_TOKENS`, which needs TensorFlow to import)."""

SIZE_FIELDS = ("source_vocabulary_size", "target_vocabulary_size")
CHOICE_FIELDS = ("tokenizer", *SIZE_FIELDS)

CHOICE_INPUTS = (
    "data",
    "reverse",
    "max_pairs",
    "sample_pairs",
    "validation_data",
    "test_data",
    "validation_fraction",
    "test_fraction",
    "seed",
    "precision",
)
"""The `TrainConfig` fields the choice depends on: those that draw the training split,
and the precision (`FLOAT32_TARGET_WORDS`)."""


@dataclasses.dataclass(frozen=True)
class CorpusStatistics:
    """What a training split shows before any tokenizer is learned.

    Attributes:
        train_pairs: sentence pairs in the split.
        source_distinct_words, target_distinct_words: distinct lower-cased,
            whitespace-separated words of each side.
        source_characters_per_sentence, target_characters_per_sentence: mean
            characters per sentence of each side.
        source_distinct_tokens, target_distinct_tokens: distinct tokens of the
            word tokenizer (`keras_attention.text.tokenize`: cased, punctuation
            split off), the entries a complete word vocabulary needs besides the
            reserved tokens.
        source_word_coverage, target_word_coverage: the share of each side's
            word tokens (counted with repeats) that an `auto` word vocabulary,
            the most frequent `VOCABULARY_SIZES["words"]` entries less the
            reserved tokens, holds; rounded to 4 places.
        source_words_seen_once, target_words_seen_once: distinct word tokens
            that occur exactly once in each side's training texts.
    """

    train_pairs: int
    source_distinct_words: int
    target_distinct_words: int
    source_characters_per_sentence: float
    target_characters_per_sentence: float
    source_distinct_tokens: int
    target_distinct_tokens: int
    source_word_coverage: float
    target_word_coverage: float
    source_words_seen_once: int
    target_words_seen_once: int


def corpus_statistics(pairs: Sequence[tuple[str, str]]) -> CorpusStatistics:
    """The `CorpusStatistics` of a training split, `(source, target)` pairs.

    Counting the word tokenizer's tokens runs it once over both sides (a few
    seconds for 160,000 pairs). An empty split covers all of its (no) tokens.
    """
    from keras_attention.text import count_tokens

    values: dict = {"train_pairs": len(pairs)}
    for side, index, cap in zip(
        ("source", "target"), (0, 1), VOCABULARY_SIZES["words"], strict=True
    ):
        texts = [pair[index] for pair in pairs]
        words = {word for text in texts for word in text.lower().split()}
        values[f"{side}_distinct_words"] = len(words)
        values[f"{side}_characters_per_sentence"] = round(
            sum(len(text) for text in texts) / max(1, len(texts)), 2
        )
        counts = count_tokens(texts) if texts else {}
        values[f"{side}_distinct_tokens"] = len(counts)
        held = sorted(counts.values(), reverse=True)[: cap - RESERVED_TOKENS]
        values[f"{side}_word_coverage"] = (
            round(sum(held) / max(1, sum(counts.values())), 4) if counts else 1.0
        )
        values[f"{side}_words_seen_once"] = sum(1 for n in counts.values() if n == 1)
    return CorpusStatistics(**values)


@dataclasses.dataclass(frozen=True)
class TokenizerChoice:
    """A resolved tokenizer and vocabulary sizes, and why.

    Attributes:
        tokenizer: `"subwords"` or `"words"`.
        source_vocabulary_size, target_vocabulary_size: ints.
        requested: the `(tokenizer, source_vocabulary_size,
            target_vocabulary_size)` asked for (`"auto"`, `None` or values).
        reason: how the `auto` values were resolved, or `"given"`.
    """

    tokenizer: str
    source_vocabulary_size: int
    target_vocabulary_size: int
    requested: tuple = (AUTO, AUTO, AUTO)
    reason: str = "given"

    def describe(self) -> str:
        """One line, e.g. `words 7439/11539 (auto: the word vocabularies hold 100.00% / ...)`."""
        line = f"{self.tokenizer} {self.source_vocabulary_size}/{self.target_vocabulary_size}"
        if AUTO not in self.requested:
            return line
        return f"{line} (auto: {self.reason})"

    def resolved(self, config: TrainConfig) -> TrainConfig:
        """`config` with this choice's tokenizer and vocabulary sizes (`dataclasses.replace`)."""
        return dataclasses.replace(config, **{name: getattr(self, name) for name in CHOICE_FIELDS})


def word_vocabulary_sizes(statistics: CorpusStatistics) -> tuple[int, int]:
    """`auto` word vocabulary sizes: each side's distinct tokens plus the reserved
    tokens, at most `VOCABULARY_SIZES["words"]`."""
    sizes = (
        RESERVED_TOKENS + statistics.source_distinct_tokens,
        RESERVED_TOKENS + statistics.target_distinct_tokens,
    )
    return tuple(map(min, sizes, VOCABULARY_SIZES["words"]))


def choose_tokenizer(statistics: CorpusStatistics) -> TokenizerChoice:
    """The tokenizer and vocabulary sizes of `auto` (see the module docstring).

    Args:
        statistics: the training split's `CorpusStatistics`.

    Returns:
        A `TokenizerChoice` with `requested=("auto", "auto", "auto")` and a
        reason naming the inputs and the thresholds, e.g. `the word vocabularies
        hold 98.64% / 100.00% of the training tokens >= 98% and 0.059 source
        words seen once per training pair < 0.15; 25,575 / 15,799 distinct
        word tokens`.
    """
    coverage = (statistics.source_word_coverage, statistics.target_word_coverage)
    held = (
        f"the word vocabularies hold {coverage[0]:.2%} / {coverage[1]:.2%} of the training tokens"
    )
    once = statistics.source_words_seen_once / max(1, statistics.train_pairs)
    rare = f"{once:.3f} source words seen once per training pair"
    sizes = _word_sizes_reason(statistics)
    limit = SUBWORDS_MIN_SOURCE_ONCE_PER_PAIR
    if min(coverage) < WORDS_MIN_COVERAGE:
        reason = f"{held}, < {WORDS_MIN_COVERAGE:.0%} on a side; {sizes}"
    elif once >= limit:
        reason = f"{rare} >= {limit}; {sizes}"
    else:
        reason = f"{held} >= {WORDS_MIN_COVERAGE:.0%} and {rare} < {limit}; {sizes}"
        return TokenizerChoice("words", *word_vocabulary_sizes(statistics), reason=reason)
    return TokenizerChoice("subwords", SUBWORD_PIECES, SUBWORD_PIECES, reason=reason)


def _word_sizes_reason(statistics: CorpusStatistics) -> str:
    return (
        f"{statistics.source_distinct_tokens:,} / {statistics.target_distinct_tokens:,} "
        "distinct word tokens"
    )


def is_resolved(config: TrainConfig) -> bool:
    """Whether `config` names its tokenizer and both vocabulary sizes (no `auto`)."""
    return all(getattr(config, name) != AUTO for name in CHOICE_FIELDS)


def resolve_tokenizer(
    config: TrainConfig, read_sample: Callable[[], object] | None = None
) -> TokenizerChoice:
    """The choice of `config`'s `auto` tokenizer and sizes, from its training split.

    `tokenizer="auto"` is `choose_tokenizer`'s; an `auto` size is the chosen
    tokenizer's (`SUBWORD_PIECES`, or `word_vocabulary_sizes`, the target side at most
    `FLOAT32_TARGET_WORDS` in float32); `None` is its
    `VOCABULARY_SIZES` entry; explicit values are kept.

    Args:
        config: a `TrainConfig`.
        read_sample: returns the run's corpus sample (`.train` is read);
            called only when the choice needs the data (not for subwords).
            Default: `keras_attention.runs.run_data.sample_splits(config)`.

    Returns:
        The `TokenizerChoice` (`choice.resolved(config)`: the config that holds it).
    """
    requested = tuple(getattr(config, name) for name in CHOICE_FIELDS)
    if is_resolved(config):
        return TokenizerChoice(*requested, requested=requested)
    if config.tokenizer == "subwords":  # its auto size needs no data
        choice = TokenizerChoice(
            "subwords", SUBWORD_PIECES, SUBWORD_PIECES, reason=f"{SUBWORD_PIECES:,} pieces per side"
        )
    else:
        sample = read_sample() if read_sample is not None else run_data.sample_splits(config)
        statistics = corpus_statistics(sample.train)
        if config.tokenizer == AUTO:
            choice = choose_tokenizer(statistics)
        else:
            choice = TokenizerChoice(
                "words", *word_vocabulary_sizes(statistics), reason=_word_sizes_reason(statistics)
            )
        choice = dataclasses.replace(
            choice,
            reason=f"{choice.reason}; from {statistics.train_pairs:,} sampled training pairs",
        )
        capped = config.precision == "float32" and config.target_vocabulary_size == AUTO
        if capped and choice.target_vocabulary_size > FLOAT32_TARGET_WORDS:
            choice = dataclasses.replace(
                choice,
                target_vocabulary_size=FLOAT32_TARGET_WORDS,
                reason=f"{choice.reason}; target words at most {FLOAT32_TARGET_WORDS:,} in float32",
            )
    sizes = []
    for name, default in zip(SIZE_FIELDS, VOCABULARY_SIZES[choice.tokenizer], strict=True):
        value = getattr(config, name)
        sizes.append(
            getattr(choice, name) if value == AUTO else default if value is None else value
        )
    return TokenizerChoice(choice.tokenizer, *sizes, requested=requested, reason=choice.reason)


def resolve_run_tokenizer(
    config: TrainConfig,
    saved: TrainConfig | None,
    read_sample: Callable[[], object] | None = None,
) -> TokenizerChoice:
    """The choice of `config`'s `auto` tokenizer and sizes, before its run starts or resumes.

    When the run's saved config (`saved`, read from its directory by
    `TrainingRun`; `None` without one) has the same training split
    (`CHOICE_INPUTS`) and the same explicit tokenizer values, its saved choice
    is taken: a run resumes, or is recognised as completed, with the tokenizer
    it started with, and reads no data for it. Otherwise the choice is made
    from the training split (`resolve_tokenizer`).

    Returns:
        The `TokenizerChoice` (`choice.resolved(config)`: the config that holds it).
    """
    requested = tuple(getattr(config, name) for name in CHOICE_FIELDS)
    if not is_resolved(config):
        values = None if saved is None else _saved_choice(config, saved)
        if values is not None:
            path = RunDirectory(config.out).config
            return TokenizerChoice(
                *values, requested=requested, reason=f"the run's saved choice ({path})"
            )
    choice = resolve_tokenizer(config, read_sample)
    logger.info("tokenizer: %s", choice.describe())
    return choice


def _saved_choice(config: TrainConfig, saved: TrainConfig) -> tuple | None:
    """The `(tokenizer, source size, target size)` of the run's `saved` config, if it
    was saved resolved, with `config`'s choice inputs, and agrees with what `config`
    asks for (an explicit value, or `None`: the saved tokenizer's default size)."""
    tokenizer, *sizes = (getattr(saved, name) for name in CHOICE_FIELDS)
    if tokenizer not in VOCABULARY_SIZES or not all(isinstance(size, int) for size in sizes):
        return None
    if config.tokenizer not in (AUTO, tokenizer):
        return None
    for name, size, default in zip(SIZE_FIELDS, sizes, VOCABULARY_SIZES[tokenizer], strict=True):
        given = getattr(config, name)
        if given != AUTO and (default if given is None else given) != size:
            return None
    if any(getattr(saved, name) != getattr(config, name) for name in CHOICE_INPUTS):
        return None
    return (tokenizer, *sizes)
