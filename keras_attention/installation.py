"""Which distribution installed `keras_attention`, and whether another one did too.

This project is the distribution `keras-attention-seq2seq`. The name
`keras-attention` belongs to an unrelated PyPI project (1.0.0, 2019) that also
installs a top-level `keras_attention` package, and it was this project's own
name up to 0.1.0. Two distributions that provide the same top-level package
cannot share an environment: pip lets the one installed last overwrite the
other's files (both have `keras_attention/__init__.py`), and uninstalling one
deletes files the other needs. The fix is to uninstall the other distribution
and then reinstall this one (`fix()`).

Two checks, one cheap and one thorough:

- `import keras_attention` calls `warn_if_shared()`: it lists the folders on
  `sys.path` for a metadata folder of a distribution named `keras-attention`
  (`keras_attention-*.dist-info` or `*.egg-info`), about 0.5 ms, without
  importing `importlib.metadata` (which alone costs more than the rest of the
  import).
- `keras-attention --version` (`version_report()`) asks
  `importlib.metadata.packages_distributions()` for every distribution that
  provides `keras_attention` (about 0.1 s: it reads all installed metadata),
  and checks that the imported `keras_attention/__init__.py` is this
  distribution's.
"""

from __future__ import annotations

import collections
import os
import sys
import warnings

DISTRIBUTION = "keras-attention-seq2seq"
PACKAGE = "keras_attention"
# The other distribution known to install `keras_attention` (its normalized name).
KNOWN_OTHER = "keras-attention"


class ForeignDistributionWarning(UserWarning):
    """Another installed distribution also provides the top-level `keras_attention`."""


# A namedtuple, not a dataclass: importing `dataclasses` (10 ms) would cost several times
# the rest of `import keras_attention` (about 2 ms).
class ForeignDistribution(collections.namedtuple("ForeignDistribution", "name version location")):
    """An installed distribution other than ours that provides `keras_attention`.

    Attributes:
        name: its name as its metadata spells it, e.g. `keras-attention`.
        version: its version, e.g. `1.0.0`.
        location: the folder it is installed in (a site-packages).
    """

    __slots__ = ()

    def __str__(self) -> str:
        return f"{self.name} {self.version} in {self.location}"


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them: `Keras_Attention` -> `keras-attention`."""
    return "-".join(filter(None, name.replace("_", "-").replace(".", "-").lower().split("-")))


def fix(foreign: list[ForeignDistribution]) -> str:
    """The commands that make `keras_attention` this distribution's alone again."""
    names = " ".join(sorted({normalize(d.name) for d in foreign}))
    return (
        f"pip uninstall {names}, then pip install --force-reinstall --no-deps {DISTRIBUTION} "
        "(the uninstall removes files the two share)"
    )


def installed_version() -> str | None:
    """The version in the installed `keras-attention-seq2seq` metadata; None without any."""
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None


def find_foreign_distributions() -> list[ForeignDistribution]:
    """Every installed distribution, other than ours, that provides `keras_attention`.

    Reads the metadata of all installed distributions
    (`importlib.metadata.packages_distributions()`): about 0.1 s.
    """
    from importlib import metadata

    found = {}
    for name in metadata.packages_distributions().get(PACKAGE, []):
        if normalize(name) != DISTRIBUTION and normalize(name) not in found:
            found[normalize(name)] = _describe(metadata.distribution(name))
    return list(found.values())


def find_known_foreign_distributions(path: list[str] | None = None) -> list[ForeignDistribution]:
    """Installed `keras-attention` distributions that provide `keras_attention`, cheaply.

    Lists each folder of `path` (default `sys.path`) for a metadata folder of a
    distribution named `keras-attention` (`keras_attention-1.0.0.dist-info`,
    `keras_attention.egg-info`, ...); `importlib.metadata` is imported only
    when there is one, to read its name, version and top-level packages.
    """
    candidates = []
    for entry in sys.path if path is None else path:
        try:
            names = os.listdir(entry or ".")
        except OSError:  # a zip file, a folder that does not exist
            continue
        for name in names:
            stem, dot, suffix = name.lower().rpartition(".")
            # name-version.dist-info, name.egg-info or name-version-pyX.Y.egg-info
            if dot and suffix in ("dist-info", "egg-info"):
                if normalize(stem.split("-")[0]) == KNOWN_OTHER:
                    candidates.append(os.path.realpath(os.path.join(entry or ".", name)))
    candidates = list(dict.fromkeys(candidates))  # a folder can be on sys.path twice
    if not candidates:
        return []
    from importlib import metadata

    found = []
    for folder in candidates:
        distribution = metadata.Distribution.at(folder)
        top_level = _top_level_names(distribution)
        if top_level is None or PACKAGE in top_level:
            found.append(_describe(distribution))
    return found


def conflict_message(foreign: list[ForeignDistribution]) -> str:
    """What is wrong and how to fix it, naming the other distributions."""
    others = ", ".join(str(d) for d in foreign)
    message = (
        f"the package `{PACKAGE}` is also installed by {others}, not only by {DISTRIBUTION} "
        "(this project, the keras-attention command). "
    )
    if any(normalize(d.name) == KNOWN_OTHER for d in foreign):
        message += (
            f"{KNOWN_OTHER} is an unrelated PyPI project (and this project's name up to 0.1.0). "
        )
    return message + (
        "The two cannot share an environment: their files overwrite or hide each other's. "
        f"Fix: {fix(foreign)}."
    )


def warn_if_shared() -> None:
    """Warns (`ForeignDistributionWarning`) if `keras-attention` is installed too. Cheap."""
    foreign = find_known_foreign_distributions()
    if foreign:
        warnings.warn(conflict_message(foreign), ForeignDistributionWarning, stacklevel=2)


def version_report() -> tuple[str, list[str]]:
    """`keras-attention --version`'s line, and the problems to print on stderr.

    Returns:
        `(line, problems)`: the line names the distribution, its version and
        the folder `keras_attention` was imported from; the problems: other
        distributions that provide `keras_attention`, or a
        `keras_attention/__init__.py` that is not this distribution's.
    """
    # The package this module was imported from (loaded before any of its modules).
    keras_attention = sys.modules[__name__.rpartition(".")[0]]
    version = installed_version()
    own_version = getattr(keras_attention, "__version__", None)
    if keras_attention.__file__:
        folder = os.path.dirname(keras_attention.__file__)
    else:  # no __init__.py (a namespace package): another distribution's uninstall removed it
        folder = next(iter(keras_attention.__path__))
    problems = []
    foreign = find_foreign_distributions()
    if foreign:
        problems.append(conflict_message(foreign))
    if version is None:
        line = f"{DISTRIBUTION} {own_version} from {folder} (not installed: no metadata found)"
    else:
        line = f"{DISTRIBUTION} {version} from {folder}"
        if own_version != version:
            if not keras_attention.__file__:
                found = "it is missing"
            elif own_version is None:
                found = "it sets no __version__"
            else:
                found = f"its __version__ is {own_version}"
            problems.append(
                f"{os.path.join(folder, '__init__.py')} is not {DISTRIBUTION} {version}'s "
                f"({found}): another distribution replaced or removed it. "
                f"Fix: pip install --force-reinstall --no-deps {DISTRIBUTION}."
            )
    return line, problems


def _describe(distribution) -> ForeignDistribution:
    return ForeignDistribution(
        name=distribution.metadata["Name"] or "?",
        version=distribution.version or "?",
        location=str(distribution.locate_file("")),
    )


def _top_level_names(distribution) -> set[str] | None:
    """The top-level names in `top_level.txt`, else in `RECORD`; None if neither says."""
    text = distribution.read_text("top_level.txt")
    if text is not None:
        return {line.strip() for line in text.splitlines() if line.strip()}
    files = distribution.files
    if not files:
        return None
    return {f.parts[0].removesuffix(".py") for f in files if f.parts and f.parts[0] != ".."}
