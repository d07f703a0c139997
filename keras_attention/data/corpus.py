"""Loading a parallel corpus of `source<TAB>target` lines."""

from __future__ import annotations

import dataclasses
import gzip
import importlib.resources
import logging
import os
import re
import unicodedata
import zlib
from pathlib import Path

logger = logging.getLogger(__name__)

BUNDLED_CORPUS = Path(str(importlib.resources.files(__package__).joinpath("fra-eng.tsv.gz")))
"""The English→French Tatoeba corpus shipped with the package (167,130 pairs,
CC-BY 2.0; attribution in `fra-eng.ABOUT.txt` beside it)."""

_GZIP_MAGIC = b"\x1f\x8b"
_MAX_REPORTED_LINES = 10
_APOSTROPHES = re.compile("[\u2019\u02bc]")
_INVISIBLE = re.compile("[\u200b\u2060\ufeff\u00ad]")
# Unicode categories Z* (spaces, line and paragraph separators) and Cc
# (control characters, tab and newline included).
_SPACES = re.compile(
    "[\u0000-\u001f\u007f-\u009f\u0020\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+"
)


class CorpusError(ValueError):
    """A corpus file that cannot be used: missing, empty, not UTF-8, not TSV."""


@dataclasses.dataclass
class Corpus:
    """Sentence pairs read from a corpus file.

    Attributes:
        pairs: the `(source, target)` pairs, normalized (`normalize_text`), in
            file order.
        path: the file they were read from.
        skipped: how many malformed lines were skipped (wrong number of
            columns, or an empty side). Blank lines are not counted.
        skipped_lines: the line numbers (from 1) of the first skipped lines
            (at most 10).
    """

    pairs: list[tuple[str, str]]
    path: str
    skipped: int = 0
    skipped_lines: list[int] = dataclasses.field(default_factory=list)

    def __len__(self) -> int:
        return len(self.pairs)


def normalize_text(text: str) -> str:
    """Normalizes one sentence in Python, as `keras_attention.text.normalize` does in the graph.

    1. NFKC normalization (U+00A0, U+202F and U+2009, the no-break and thin
       spaces French typography puts before `! ? :`, become plain spaces;
       `…` becomes `...`).
    2. `’` (U+2019) and `ʼ` (U+02BC) become the ASCII apostrophe.
    3. Zero-width space, word joiner, BOM and soft hyphen are removed.
    4. Runs of spaces and control characters become one space; the ends are
       stripped.

    Example:

    >>> normalize_text("Va\u202f!  L\u2019homme")
    "Va ! L'homme"
    """
    if not text.isascii():  # the three steps below never change ASCII text
        text = unicodedata.normalize("NFKC", text)
        text = _APOSTROPHES.sub("'", text)
        text = _INVISIBLE.sub("", text)
    return _SPACES.sub(" ", text).strip(" ")


def _open_lines(path: Path):
    """Opens `path` as binary lines, gunzipping when it starts with the gzip magic."""
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == _GZIP_MAGIC:
        return gzip.open(path, "rb")
    return open(path, "rb")


def load_corpus(path: str | os.PathLike | None = None, max_pairs: int | None = None) -> Corpus:
    """Reads a parallel corpus of `source<TAB>target` lines.

    Each line holds a source sentence, a tab and its translation, and
    optionally a third, tab-separated column (the attribution column of newer
    Tatoeba / manythings.org files), which is ignored. The file is UTF-8,
    plain or gzip-compressed (detected from its first bytes, whatever its
    name). Both sides go through `normalize_text`.

    Blank lines are ignored. A malformed line (not 2 or 3 columns, or a side
    that is empty after normalization) is skipped, counted, and its number
    kept (the first 10) and logged in a warning. The file is refused with a
    `CorpusError` when it is missing, not UTF-8 (naming the line), not
    gzip-readable, has no tab at all, has no valid pair, or has more
    malformed lines than valid pairs.

    Args:
        path: the corpus file; `None` reads the bundled English→French
            corpus (`BUNDLED_CORPUS`).
        max_pairs: int or `None`; stop after this many pairs, in file order.
            (`split_corpus` samples randomly; the bundled file is sorted by
            length, so its first pairs are the shortest.)

    Returns:
        A `Corpus`.

    Raises:
        CorpusError: see above; the message names the path and the problem.
        ValueError: for a bad `max_pairs`.

    Example:

    >>> corpus = load_corpus()
    >>> len(corpus.pairs), corpus.pairs[0]
    (167130, ('Go.', 'Va !'))
    """
    if max_pairs is not None and (
        isinstance(max_pairs, bool) or not isinstance(max_pairs, int) or max_pairs < 1
    ):
        raise ValueError(
            f"`max_pairs` must be a positive int or None. Received: max_pairs={max_pairs!r}"
        )
    path = BUNDLED_CORPUS if path is None else Path(path)
    if not path.exists():
        raise CorpusError(f"Corpus file {str(path)!r} does not exist.")
    if not path.is_file():
        raise CorpusError(f"Corpus path {str(path)!r} is not a file.")

    pairs: list[tuple[str, str]] = []
    skipped_lines: list[int] = []
    skipped = 0
    lines_with_tab = 0
    number = 0
    try:
        with _open_lines(path) as f:
            for number, raw in enumerate(f, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise CorpusError(
                        f"Corpus file {str(path)!r} is not UTF-8: line {number}, "
                        f"byte {error.start}: {error.reason}."
                    ) from None
                line = line.rstrip("\r\n")
                if number == 1:
                    line = line.removeprefix("\ufeff")
                if not line.strip():
                    continue
                columns = line.split("\t")
                lines_with_tab += len(columns) > 1
                if len(columns) in (2, 3):
                    source, target = normalize_text(columns[0]), normalize_text(columns[1])
                    if source and target:
                        pairs.append((source, target))
                        if max_pairs is not None and len(pairs) >= max_pairs:
                            break
                        continue
                skipped += 1
                if len(skipped_lines) < _MAX_REPORTED_LINES:
                    skipped_lines.append(number)
    except (OSError, EOFError, zlib.error) as error:
        raise CorpusError(f"Corpus file {str(path)!r} cannot be read: {error}") from None

    if not pairs and not skipped:
        raise CorpusError(f"Corpus file {str(path)!r} is empty: it holds no sentence pair.")
    if not lines_with_tab:
        raise CorpusError(
            f"Corpus file {str(path)!r} is not a tab-separated source<TAB>target file: "
            "no line holds a tab."
        )
    if skipped > len(pairs):
        raise CorpusError(
            f"Corpus file {str(path)!r} is not a source<TAB>target file: {skipped} of "
            f"{skipped + len(pairs)} lines are malformed (first at lines {skipped_lines})."
        )
    if skipped:
        logger.warning(
            "%s: skipped %d malformed lines (not 2 or 3 tab-separated columns, or an empty "
            "side); first at lines %s",
            path,
            skipped,
            skipped_lines,
        )
    return Corpus(pairs=pairs, path=str(path), skipped=skipped, skipped_lines=skipped_lines)
