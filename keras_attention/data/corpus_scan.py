"""Checking a corpus's files before training: readable, UTF-8, aligned; their line counts.

One pass over each file's bytes in large blocks (no Python object per line),
so a corpus of tens of millions of lines is checked in seconds to minutes
with constant memory; progress is logged every few seconds.
"""

from __future__ import annotations

import dataclasses
import gzip
import os
import zlib
from collections.abc import Sequence

from keras_attention.data import progress
from keras_attention.data.corpus import CorpusError
from keras_attention.data.corpus_files import CorpusFiles

_GZIP_MAGIC = b"\x1f\x8b"
_BLOCK = 1 << 22  # bytes read at a time


def is_gzip(path: str) -> bool:
    """Whether `path` starts with the gzip magic bytes (whatever its name)."""
    with open(path, "rb") as f:
        return f.read(2) == _GZIP_MAGIC


@dataclasses.dataclass(frozen=True)
class FileScan:
    """One checked file: its path, line count, size and whether it is gzip-compressed.

    `bytes` counts the file's text (uncompressed); `disk_bytes` and
    `modified_ns` (its size and modification time on disk when scanned) tell
    whether it changed since (`unchanged`).
    """

    path: str
    lines: int
    bytes: int
    gzip: bool
    disk_bytes: int = -1
    modified_ns: int = -1

    def unchanged(self) -> bool:
        """Whether the file on disk still has the size and modification time it was scanned with."""
        try:
            status = os.stat(self.path)
        except OSError:
            return False
        return (status.st_size, status.st_mtime_ns) == (self.disk_bytes, self.modified_ns)


@dataclasses.dataclass(frozen=True)
class CorpusScan:
    """A checked corpus: its files and the lines (pairs) it holds.

    `lines` counts lines of the TSV shards, or of the source shards of an
    aligned corpus (equal to the target's: `scan_corpus` checks it).
    Blank and malformed lines are among them; the pipeline skips those.
    """

    corpus: CorpusFiles
    files: tuple[FileScan, ...]
    lines: int

    def summary(self) -> dict:
        """A JSON-able record of the corpus: its name, weight, lines and files."""
        return {
            "name": self.corpus.name,
            "weight": self.corpus.weight,
            "lines": self.lines,
            "files": [dataclasses.asdict(f) for f in self.files],
        }


def scan_file(path: str, progress: _Progress | None = None) -> FileScan:
    """Counts the lines of `path` and checks that it is readable UTF-8.

    Raises:
        CorpusError: the file cannot be read (or gunzipped), or is not UTF-8
            (naming the line and the byte offset within it).
    """
    lines = 0
    compressed = False
    size = 0
    try:
        status = os.stat(path)
        compressed = is_gzip(path)
        opener = gzip.open if compressed else open
        carry = b""
        with opener(path, "rb") as f:
            while block := f.read(_BLOCK):
                size += len(block)
                end = block.rfind(b"\n") + 1
                if not end:  # no line ends in this block
                    carry += block
                    continue
                complete, carry = carry + block[:end], block[end:]
                _check_utf8(complete, path, lines)
                lines += complete.count(b"\n")
                if progress:
                    progress.update(len(block))
        if carry:
            _check_utf8(carry, path, lines)
            lines += 1
    except (OSError, EOFError, zlib.error) as error:
        raise CorpusError(f"Corpus file {path!r} cannot be read: {error}") from None
    return FileScan(
        path=path,
        lines=lines,
        bytes=size,
        gzip=compressed,
        disk_bytes=status.st_size,
        modified_ns=status.st_mtime_ns,
    )


def _check_utf8(data: bytes, path: str, lines_before: int) -> None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        line_start = data.rfind(b"\n", 0, error.start) + 1
        line = lines_before + data.count(b"\n", 0, error.start) + 1
        raise CorpusError(
            f"Corpus file {path!r} is not UTF-8: line {line}, byte {error.start - line_start}: "
            f"{error.reason}."
        ) from None


class _Progress:
    """Logs how many bytes of how many a scan has read, every few seconds."""

    def __init__(self, total: int):
        self.total = total
        self.done = 0
        self.every = progress.Every()

    def update(self, read: int) -> None:
        self.done += read
        if self.every():
            progress.logger.info(
                "Checking the corpus files: %.0f of %.0f MB read (%.0f s)",
                self.done / 1e6,
                self.total / 1e6,
                self.every.elapsed,
            )


def scan_corpus(corpus: CorpusFiles, progress: _Progress | None = None) -> CorpusScan:
    """Checks every file of `corpus` (`scan_file`) and, for an aligned one, its line counts.

    Raises:
        CorpusError: a file is unreadable or not UTF-8; an aligned shard's
            source and target have different line counts (naming both files
            and the first line that has no partner); or the corpus has no line.
    """
    scans = tuple(scan_file(path, progress) for path in corpus.files)
    if corpus.aligned:
        half = len(corpus.source)
        for source, target in zip(scans[:half], scans[half:], strict=True):
            if source.lines != target.lines:
                shorter = min(source.lines, target.lines)
                raise CorpusError(
                    f"Aligned files {source.path!r} ({source.lines} lines) and {target.path!r} "
                    f"({target.lines} lines) have different line counts: line {shorter + 1} of "
                    "the longer one has no partner."
                )
        lines = sum(scan.lines for scan in scans[:half])
    else:
        lines = sum(scan.lines for scan in scans)
    if not lines:
        raise CorpusError(f"Corpus {corpus.name!r} is empty: its files hold no line.")
    return CorpusScan(corpus=corpus, files=scans, lines=lines)


def scan_corpora(corpora: Sequence[CorpusFiles]) -> list[CorpusScan]:
    """`scan_corpus` of each corpus, with one progress log over all their bytes."""
    total = sum(os.path.getsize(path) for corpus in corpora for path in corpus.files)
    progress = _Progress(total)
    return [scan_corpus(corpus, progress) for corpus in corpora]
