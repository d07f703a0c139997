"""Which files a training corpus is made of: one syntax for the command line and the library.

A corpus is one of two forms, each one file or several shards:

- **TSV**: `source<TAB>target` lines (an optional third column is ignored),
  plain or gzip-compressed;
- **aligned plain text**: a source file and a target file with one sentence
  per line, line `n` of one the translation of line `n` of the other (the
  form OPUS and WMT ship: `train.en`, `train.fr`).

Several corpora can be mixed with weights: training draws its pairs from
corpus `i` with probability `weight_i / sum(weights)`.

The spelling of one corpus (`--data SPEC`, `TrainConfig.data` entries):

- `PATH`: a TSV file, or a glob of TSV shards (`'wmt/part-*.tsv.gz'`);
- `path=PATH,weight=W,name=N`: the same with a weight (and a name);
- `src=PATH,tgt=PATH,weight=W,name=N`: aligned plain-text files; each
  of `src` and `tgt` may be a glob, and shard `i` of `src` (in sorted order)
  pairs with shard `i` of `tgt`;
- `FILE.toml`: a data file holding several corpora, one table each:

  ```toml
  [corpus.general]
  src = "opus/train.*.en"
  tgt = "opus/train.*.fr"
  weight = 0.7

  [corpus.in_domain]
  path = "support-tickets.tsv"
  weight = 0.3
  ```

  Relative paths in a data file are relative to the file.

Nothing here reads a corpus line; `corpus_scan` checks the files.
"""

from __future__ import annotations

import dataclasses
import glob
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import tomllib

from keras_attention.data.corpus import BUNDLED_CORPUS, CorpusError

SPEC_KEYS = ("path", "src", "tgt", "weight", "name")
"""The keys of a `key=value,...` corpus spelling and of a data file's corpus table."""


@dataclasses.dataclass(frozen=True)
class CorpusFiles:
    """The files of one corpus and its weight in the mix.

    Attributes:
        name: how messages and the run's data summary name it.
        tsv: TSV shards (empty for an aligned corpus).
        source: aligned source shards (empty for a TSV corpus).
        target: aligned target shards, `target[i]` pairing with `source[i]`.
        weight: a positive number, its share of the training mix relative to
            the other corpora's weights.
    """

    name: str
    tsv: tuple[str, ...] = ()
    source: tuple[str, ...] = ()
    target: tuple[str, ...] = ()
    weight: float = 1.0

    @property
    def aligned(self) -> bool:
        """Whether the corpus is aligned plain-text files (not TSV)."""
        return bool(self.source)

    @property
    def files(self) -> tuple[str, ...]:
        """Every file of the corpus (TSV shards, or source then target shards)."""
        return self.tsv or self.source + self.target

    @property
    def shards(self) -> list[tuple[str, ...]]:
        """One tuple per shard: `(tsv,)` or `(source, target)`."""
        if self.aligned:
            return list(zip(self.source, self.target, strict=True))
        return [(path,) for path in self.tsv]


def _expand(pattern: str, base: Path | None, what: str) -> tuple[str, ...]:
    """The files `pattern` names (a path or a glob), sorted; a clear error when none."""
    path = Path(pattern).expanduser()
    if base is not None and not path.is_absolute():
        path = base / path
    text = str(path)
    if glob.has_magic(text):
        found = sorted(p for p in glob.glob(text, recursive=True) if os.path.isfile(p))
        if not found:
            raise CorpusError(f"{what} {pattern!r} matches no file.")
        return tuple(found)
    if not path.exists():
        raise CorpusError(f"{what} {text!r} does not exist.")
    if not path.is_file():
        raise CorpusError(f"{what} {text!r} is not a file.")
    return (text,)


def _weight(value, where: str) -> float:
    try:
        weight = float(value)
    except (TypeError, ValueError):
        weight = math.nan
    if isinstance(value, bool) or not math.isfinite(weight) or weight <= 0:
        raise CorpusError(f"{where}: the weight must be a positive number. Received: {value!r}")
    return weight


def corpus_from_fields(fields: dict, where: str, base: Path | None = None) -> CorpusFiles:
    """A `CorpusFiles` from `path`/`src`/`tgt`/`weight`/`name` values (`SPEC_KEYS`).

    Args:
        fields: the values, strings or (from a data file) numbers.
        where: how error messages name the spelling (the spec, or the data
            file and table).
        base: the directory relative paths are relative to (`None`: the
            working directory).

    Raises:
        CorpusError: an unknown key, neither `path` nor both `src` and `tgt`,
            a pattern that matches no file, `src` and `tgt` with different
            numbers of shards, or a weight that is not a positive number.
    """
    unknown = sorted(set(fields) - set(SPEC_KEYS))
    if unknown:
        raise CorpusError(
            f"{where}: unknown key {unknown[0]!r} (the keys are {', '.join(SPEC_KEYS)})."
        )
    weight = _weight(fields.get("weight", 1.0), where)
    if "path" in fields:
        if "src" in fields or "tgt" in fields:
            raise CorpusError(f"{where}: give `path` (a TSV corpus) or `src` and `tgt`, not both.")
        tsv = _expand(str(fields["path"]), base, "Corpus file")
        return CorpusFiles(name=str(fields.get("name", fields["path"])), tsv=tsv, weight=weight)
    if "src" not in fields or "tgt" not in fields:
        raise CorpusError(f"{where}: an aligned corpus needs both `src` and `tgt`.")
    source = _expand(str(fields["src"]), base, "Source file")
    target = _expand(str(fields["tgt"]), base, "Target file")
    if len(source) != len(target):
        raise CorpusError(
            f"{where}: `src` matches {len(source)} files but `tgt` {len(target)}; shard i of "
            "one pairs with shard i of the other, so they need as many."
        )
    name = str(fields.get("name", f"{fields['src']} | {fields['tgt']}"))
    return CorpusFiles(name=name, source=source, target=target, weight=weight)


def parse_corpus_spec(spec: str) -> list[CorpusFiles]:
    """The corpora one `--data` value names (several for a `.toml` data file).

    Raises:
        CorpusError: see `corpus_from_fields` and `read_data_file`.

    Example:

    >>> [corpus.name for corpus in parse_corpus_spec(str(BUNDLED_CORPUS))] == [str(BUNDLED_CORPUS)]
    True
    """
    if not isinstance(spec, str) or not spec.strip():
        raise CorpusError(f"A corpus spec must be a non-empty string. Received: {spec!r}")
    if spec.endswith(".toml") and "=" not in spec:
        return read_data_file(spec)
    if "=" not in spec:
        return [corpus_from_fields({"path": spec}, f"--data {spec!r}")]
    fields = {}
    for item in spec.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CorpusError(
                f"--data {spec!r}: {item!r} is not key=value (write PATH, or "
                "path=PATH,weight=W, or src=PATH,tgt=PATH,weight=W)."
            )
        fields[key.strip()] = value.strip()
    return [corpus_from_fields(fields, f"--data {spec!r}")]


def read_data_file(path: str | os.PathLike) -> list[CorpusFiles]:
    """The corpora of a TOML data file (`[corpus.NAME]` tables, see the module docstring).

    Raises:
        CorpusError: the file is missing or not TOML, holds no `[corpus.NAME]`
            table, or a table is wrong (`corpus_from_fields`).
    """
    path = Path(path)
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise CorpusError(f"Data file {str(path)!r} cannot be read: {error}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise CorpusError(f"Data file {str(path)!r} is not TOML: {error}") from None
    tables = document.get("corpus")
    if not isinstance(tables, dict) or not tables:
        raise CorpusError(f"Data file {str(path)!r} holds no [corpus.NAME] table.")
    corpora = []
    for name, table in tables.items():
        where = f"Data file {str(path)!r}, [corpus.{name}]"
        if not isinstance(table, dict):
            raise CorpusError(f"{where} is not a table.")
        corpora.append(corpus_from_fields({"name": name, **table}, where, base=path.parent))
    return corpora


def corpus_list(data: str | Sequence[str] | None) -> list[CorpusFiles]:
    """The corpora of `TrainConfig.data`: `None` is the bundled corpus; specs otherwise.

    Raises:
        CorpusError: a bad spec, or two corpora with the same name.
    """
    specs: Iterable[str] = (
        [str(BUNDLED_CORPUS)] if not data else [data] if isinstance(data, str) else data
    )
    corpora = [corpus for spec in specs for corpus in parse_corpus_spec(spec)]
    names = [corpus.name for corpus in corpora]
    for name in names:
        if names.count(name) > 1:
            raise CorpusError(f"Two corpora are named {name!r}: give each a distinct name=.")
    return corpora
