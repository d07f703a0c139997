"""Vocabularies: the reserved tokens, building from a corpus, saving and loading.

A vocabulary is a plain `list[str]` whose index is the token id. Its first
four entries are always the reserved tokens:

| id | token | meaning |
| --- | --- | --- |
| 0 | `""` | padding; also the Keras mask value |
| 1 | `"[UNK]"` | any token that is not in the vocabulary |
| 2 | `"[START]"` | start of a target sequence (first decoder input) |
| 3 | `"[END]"` | end of a target sequence |

The tokenizer never produces these strings as tokens (`"[UNK]"` in a
sentence becomes `"["`, `"UNK"`, `"]"`), so they cannot collide with text.
"""

from __future__ import annotations

import collections
import logging
import os
from collections.abc import Iterable

import tensorflow as tf

from keras_attention.text.tokenization import tokenize

logger = logging.getLogger(__name__)

PAD_TOKEN = ""
UNK_TOKEN = "[UNK]"
START_TOKEN = "[START]"
END_TOKEN = "[END]"
RESERVED_TOKENS = (PAD_TOKEN, UNK_TOKEN, START_TOKEN, END_TOKEN)
PAD_ID, UNK_ID, START_ID, END_ID = 0, 1, 2, 3

_BATCH = 2048  # sentences tokenized per TensorFlow call when counting


def _batches(texts) -> Iterable[tf.Tensor]:
    """Yields `[batch]` string tensors from strings or a `tf.data.Dataset`."""
    if isinstance(texts, tf.data.Dataset):
        spec = texts.element_spec
        if not isinstance(spec, tf.TensorSpec) or spec.dtype != tf.string:
            raise TypeError(f"`texts` must be a dataset of strings. Received: element_spec={spec}")
        if spec.shape.rank != 0:
            texts = texts.map(lambda x: tf.reshape(x, [-1])).unbatch()
        yield from texts.batch(_BATCH)
        return
    if isinstance(texts, (str, bytes)):
        raise TypeError(
            "`texts` must be an iterable of strings, not a single string. "
            f"Received: texts={texts[:50]!r}"
        )
    batch: list[str] = []
    for text in texts:
        batch.append(text)
        if len(batch) == _BATCH:
            yield tf.constant(batch, dtype=tf.string)
            batch = []
    if batch:
        yield tf.constant(batch, dtype=tf.string)


def count_tokens(texts: Iterable[str] | tf.data.Dataset) -> collections.Counter:
    """Counts the tokens (`tokenize`) of an iterable or dataset of sentences.

    Args:
        texts: an iterable of `str`, or a `tf.data.Dataset` of scalar (or
            `[batch]`) strings.

    Returns:
        A `collections.Counter` mapping each token (`str`) to its count.
    """
    counts: collections.Counter = collections.Counter()
    tokenize_batch = tf.function(tokenize, reduce_retracing=True)
    for batch in _batches(texts):
        tokens = tokenize_batch(batch).flat_values.numpy()
        counts.update(tokens)
    return collections.Counter({token.decode("utf-8"): n for token, n in counts.items()})


def build_vocabulary(
    texts: Iterable[str] | tf.data.Dataset, max_size: int, min_count: int = 1
) -> list[str]:
    """Builds a cased vocabulary from sentences.

    The computation:

    1. Every sentence is tokenized with `tokenize` and the tokens counted.
    2. Tokens seen fewer than `min_count` times are dropped.
    3. The rest are sorted by decreasing count, ties broken by the token
       string (Unicode code point order), so the result is deterministic.
    4. The reserved tokens come first and the list is cut at `max_size`.

    Args:
        texts: an iterable of `str`, or a `tf.data.Dataset` of scalar (or
            `[batch]`) strings.
        max_size: int, the most entries in the vocabulary, reserved tokens
            included (so at most `max_size - 4` corpus tokens).
        min_count: int, the fewest occurrences a token needs to be kept.

    Returns:
        A `list[str]`: `["", "[UNK]", "[START]", "[END]", most frequent, ...]`.

    Example:

    >>> build_vocabulary(["Le chat.", "Le chien."], max_size=6)
    ['', '[UNK]', '[START]', '[END]', '.', 'Le']
    """
    if not isinstance(max_size, int) or max_size < len(RESERVED_TOKENS):
        raise ValueError(
            f"`max_size` must be an int >= {len(RESERVED_TOKENS)} (the reserved tokens). "
            f"Received: max_size={max_size!r}"
        )
    if not isinstance(min_count, int) or min_count < 1:
        raise ValueError(f"`min_count` must be an int >= 1. Received: min_count={min_count!r}")
    counts = count_tokens(texts)
    kept = _ranked_tokens(counts, min_count)
    vocabulary = list(RESERVED_TOKENS) + kept[: max_size - len(RESERVED_TOKENS)]
    total = sum(counts.values())
    covered = sum(counts[token] for token in vocabulary[len(RESERVED_TOKENS) :])
    logger.info(
        "Vocabulary of %d entries from %d distinct tokens; it covers %.2f%% of %d tokens",
        len(vocabulary),
        len(counts),
        100.0 * covered / total if total else 0.0,
        total,
    )
    return vocabulary


def extend_vocabulary(
    vocabulary: list[str],
    texts: Iterable[str] | tf.data.Dataset,
    max_size: int,
    min_count: int = 2,
) -> list[str]:
    """A vocabulary with the frequent tokens of `texts` that it lacks appended.

    The computation:

    1. `vocabulary` is kept as it is: every token keeps its id.
    2. The tokens of `texts` (`count_tokens`) that `vocabulary` lacks and
       that are seen at least `min_count` times are sorted by decreasing
       count, ties broken by the token string (as `build_vocabulary` does).
    3. They are appended until the vocabulary has `max_size` entries.

    Args:
        vocabulary: the vocabulary to extend (reserved tokens first).
        texts: an iterable of `str`, or a `tf.data.Dataset` of strings.
        max_size: int, the most entries of the result, at least
            `len(vocabulary)`.
        min_count: int, the fewest occurrences a new token needs. Defaults
            to `2`: a token seen once would get a row learned from one
            sentence.

    Returns:
        A `list[str]` that starts with `vocabulary`.

    Example:

    >>> extend_vocabulary(["", "[UNK]", "[START]", "[END]", "Le"],
    ...                   ["Le chat.", "Le chat !", "Un chien."], max_size=6)
    ['', '[UNK]', '[START]', '[END]', 'Le', '.']
    """
    vocabulary = validate_vocabulary(vocabulary)
    if not isinstance(max_size, int) or max_size < len(vocabulary):
        raise ValueError(
            f"`max_size` must be an int >= the vocabulary's {len(vocabulary)} entries. "
            f"Received: max_size={max_size!r}"
        )
    if not isinstance(min_count, int) or min_count < 1:
        raise ValueError(f"`min_count` must be an int >= 1. Received: min_count={min_count!r}")
    new = _ranked_tokens(count_tokens(texts), min_count, known=set(vocabulary))
    return vocabulary + new[: max_size - len(vocabulary)]


def _ranked_tokens(
    counts: collections.Counter, min_count: int, known: set[str] = frozenset()
) -> list[str]:
    """The tokens of `counts` seen at least `min_count` times and not in `known`, by
    decreasing count, ties broken by the token string (deterministic)."""
    return sorted(
        (token for token, n in counts.items() if n >= min_count and token not in known),
        key=lambda token: (-counts[token], token),
    )


def validate_vocabulary(vocabulary) -> list[str]:
    """Checks a vocabulary and returns it as a `list[str]`.

    Raises:
        ValueError: if the reserved tokens are not first and in order, a token
            repeats, or a token (other than padding) is empty or holds
            whitespace (the tokenizer can never produce such a token).
    """
    if isinstance(vocabulary, (str, bytes)):
        raise ValueError(f"`vocabulary` must be a list of tokens. Received: {vocabulary[:50]!r}")
    vocabulary = [t.decode("utf-8") if isinstance(t, bytes) else t for t in vocabulary]
    if any(not isinstance(t, str) for t in vocabulary):
        raise ValueError("`vocabulary` must hold only strings.")
    if tuple(vocabulary[: len(RESERVED_TOKENS)]) != RESERVED_TOKENS:
        raise ValueError(
            f"`vocabulary` must start with the reserved tokens {list(RESERVED_TOKENS)}. "
            f"Received: vocabulary[:4]={vocabulary[:4]}"
        )
    seen: set[str] = set()
    for index, token in enumerate(vocabulary):
        if token in seen:
            raise ValueError(f"`vocabulary` holds {token!r} twice (again at index {index}).")
        seen.add(token)
        if index > 0 and (not token or any(c.isspace() for c in token)):
            raise ValueError(
                "Tokens must be non-empty and hold no whitespace. "
                f"Received: vocabulary[{index}]={token!r}"
            )
    return vocabulary


def save_vocabulary(vocabulary: list[str], path: str | os.PathLike) -> None:
    """Writes a vocabulary to a text file, one token per line.

    Format: UTF-8, `"\\n"` line ends, line `i` (counting from 1) holds the
    token of id `i`. The padding token `""` (id 0) is implied and not written,
    so the file has no blank line an editor could strip; line 1 is `[UNK]`.

    Args:
        vocabulary: the vocabulary list (reserved tokens first).
        path: the file to write.
    """
    vocabulary = validate_vocabulary(vocabulary)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for token in vocabulary[1:]:
            f.write(token + "\n")


def load_vocabulary(path: str | os.PathLike) -> list[str]:
    """Reads a vocabulary written by `save_vocabulary`.

    Args:
        path: the file to read.

    Returns:
        The vocabulary list, `""` (id 0) first.

    Raises:
        ValueError: if the file is not a vocabulary file (naming the path and,
            where it helps, the line).
    """
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final line end
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    for number, line in enumerate(lines, start=1):
        if not line:
            raise ValueError(
                f"{os.fspath(path)!r} is not a vocabulary file: line {number} is empty."
            )
    try:
        return validate_vocabulary([PAD_TOKEN] + lines)
    except ValueError as error:
        raise ValueError(f"{os.fspath(path)!r} is not a vocabulary file: {error}") from None
