"""Glossaries: source terms whose target phrases a translation must contain.

A glossary file is UTF-8 text, one entry a line, `SOURCE<TAB>TARGET` (blank lines and
lines starting with `#` are skipped). An entry applies to a sentence only when its
source term occurs in it: as whole words, ignoring case. The target phrases of the
entries that apply become the sentence's constraints (`translate(constraints=...)`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence


def read_glossary(path: str | os.PathLike) -> list[tuple[str, str]]:
    """The `(source, target)` entries of a glossary file.

    Raises:
        ValueError: a line that is not `SOURCE<TAB>TARGET` with both non-blank,
            naming the file and the line.
    """
    entries = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            line = line.rstrip("\r\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) != 2 or not fields[0].strip() or not fields[1].strip():
                raise ValueError(
                    f"{path}:{number}: a glossary line must be SOURCE<TAB>TARGET, both "
                    f"non-blank. Received: {line!r}"
                )
            entries.append((fields[0].strip(), fields[1].strip()))
    return entries


def occurs(term: str, text: str) -> bool:
    """Whether `term` occurs in `text` as whole words, ignoring case.

    >>> occurs("pull request", "Open a Pull Request now.")
    True
    >>> occurs("cat", "a catalogue")
    False
    """
    pattern = r"(?<!\w)" + r"\s+".join(map(re.escape, term.split())) + r"(?!\w)"
    return re.search(pattern, text, flags=re.IGNORECASE) is not None


def sentence_constraints(
    texts: Sequence[str], phrases: Iterable[str] = (), glossary: Iterable[tuple[str, str]] = ()
) -> list[list[str]]:
    """Each text's constraints: `phrases` (for every text) and the targets of the
    `glossary` entries whose source occurs in it, each phrase once, in order.

    >>> sentence_constraints(["I like cats", "Dogs bark"], ["!"], [("cats", "chats")])
    [['!', 'chats'], ['!']]
    """
    phrases, glossary = list(phrases), list(glossary)
    rows = []
    for text in texts:
        row = phrases + [target for source, target in glossary if occurs(source, text)]
        rows.append(list(dict.fromkeys(p for p in row if p.strip())))
    return rows
