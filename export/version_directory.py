"""`VersionDirectory`: TF Serving's `base_path/<version>/` layout, written atomically."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

logger = logging.getLogger(__name__)

STAGING_PREFIX = ".tmp-export-"
"""Prefix of the staging directories: not an integer, so TF Serving ignores them."""

LOCK_FILE = ".export.lock"
"""The lock file that serializes exporters writing into the same base directory.

It exists only while an exporter commits a version; the holder removes it."""

STALE_STAGING_SECONDS = 3600.0
"""Age after which an unlocked staging directory counts as left by a dead export."""

_VERSION_NAME = re.compile(r"^[0-9]+$")


class VersionDirectory:
    """The base directory of a model served by TensorFlow Serving.

    TF Serving polls `base_path` and loads the integer-named subdirectories
    (`1/`, `2/`, ...) as versions; every other name is ignored. A version
    must appear complete or not at all, so a new one is written like this:

    1. `staging()` creates `BASE/.tmp-export-XXXXXXXX/` (a name TF Serving
       ignores) and yields it; the caller writes the whole SavedModel there.
    2. `commit()` takes an exclusive `flock` on `BASE/.export.lock` (so two
       exporters never pick the same number), chooses the version (the next
       integer unless one was given), refuses to overwrite an existing one,
       flushes the staged files to disk and `os.rename`s the staging
       directory to `BASE/<version>` — one atomic step on a POSIX file
       system, so a poller sees either nothing or the finished version.
    3. If anything fails, the staging directory is removed.

    An exporter holds an `flock` on its staging directory while it writes,
    and the lock file is removed after each commit. A staging directory left
    by an export that was killed (older than `STALE_STAGING_SECONDS` and not
    locked) is removed by the next `staging()`.

    A version number counts as taken when any integer-named directory has
    that value (`007` and `7` are the same version for TF Serving).

    Args:
        base: the base directory (`--model_base_path` of the server). It is
            created on first use.

    Example:

    ```python
    versions = VersionDirectory("/models/translator")
    with versions.staging() as staging:
        write_saved_model(staging)
        version, path = versions.commit(staging)
    ```
    """

    def __init__(self, base: str | os.PathLike):
        self.base = Path(base)

    def __repr__(self) -> str:
        return f"VersionDirectory({str(self.base)!r})"

    def versions(self) -> list[int]:
        """The version numbers present (integer-named subdirectories), sorted."""
        if not self.base.is_dir():
            return []
        return sorted(
            {
                int(entry.name)
                for entry in self.base.iterdir()
                if _VERSION_NAME.match(entry.name) and entry.is_dir()
            }
        )

    def latest(self) -> int | None:
        """The highest version present, or `None`."""
        versions = self.versions()
        return versions[-1] if versions else None

    def next_version(self) -> int:
        """The version an export without an explicit number gets: latest + 1, or 1."""
        latest = self.latest()
        return 1 if latest is None else latest + 1

    def path(self, version: int) -> Path:
        """`BASE/<version>`."""
        return self.base / str(check_version(version))

    def check_available(self, version: int) -> None:
        """Raises `FileExistsError` if `version` already exists."""
        version = check_version(version)
        if version in self.versions():
            raise FileExistsError(
                f"Version {version} already exists in {str(self.base)!r}; versions are never "
                f"overwritten. Use another --model-version or omit it to get {self.next_version()}."
            )

    @contextlib.contextmanager
    def staging(self) -> Iterator[Path]:
        """Yields a fresh staging directory inside the base; removes it unless committed.

        The directory is `flock`ed for as long as the caller writes to it, so
        `remove_stale_staging` (run here first) never takes a live one.
        """
        self.base.mkdir(parents=True, exist_ok=True)
        self.remove_stale_staging()
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=self.base))
        fd = os.open(staging, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            yield staging
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
            os.close(fd)

    def remove_stale_staging(self, max_age_seconds: float = STALE_STAGING_SECONDS) -> list[Path]:
        """Removes `.tmp-export-*` directories older than `max_age_seconds` and not locked.

        Such directories are left by an export that was killed before it
        could clean up. Returns the directories removed.
        """
        if not self.base.is_dir():
            return []
        removed = []
        now = time.time()
        for entry in self.base.iterdir():
            if not entry.name.startswith(STAGING_PREFIX) or entry.is_symlink():
                continue
            try:
                if not entry.is_dir() or now - entry.stat().st_mtime < max_age_seconds:
                    continue
                fd = os.open(entry, os.O_RDONLY)
            except OSError:
                continue  # gone meanwhile
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # an export is writing to it
            else:
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
                logger.info("Removed stale staging directory %s", entry)
            finally:
                os.close(fd)
        return removed

    def commit(
        self,
        staging: str | os.PathLike,
        version: int | None = None,
        before_rename: Callable[[Path, int], None] | None = None,
    ) -> tuple[int, Path]:
        """Moves a finished staging directory into place as a version.

        Args:
            staging: a directory made by `staging()`.
            version: the version number, or `None` for the next one.
            before_rename: optional `fn(staging, version)` called under the
                lock once the version is chosen (to record it in a manifest).

        Returns:
            `(version, path)` of the new version.

        Raises:
            FileExistsError: the version exists already.
        """
        staging = Path(staging)
        if staging.parent.resolve() != self.base.resolve():
            raise ValueError(
                f"The staging directory must be inside {str(self.base)!r}. "
                f"Received: staging={str(staging)!r}"
            )
        with self._lock():
            if version is None:
                version = self.next_version()
            else:
                self.check_available(version)
            if before_rename is not None:
                before_rename(staging, version)
            _make_readable(staging)
            _sync_tree(staging)
            target = self.path(version)
            os.rename(staging, target)
            _sync_directory(self.base)
        logger.info("Wrote version %d to %s", version, target)
        return version, target

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        """Holds the exclusive lock on `BASE/.export.lock`, and removes the file after.

        A waiter that wakes up holding a file its previous holder has
        already removed (or replaced) tries again with the current one, so
        removing the file never lets two exporters in at once.
        """
        self.base.mkdir(parents=True, exist_ok=True)
        path = self.base / LOCK_FILE
        while True:
            lock = open(path, "a")  # noqa: SIM115 - held across the yield below
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                current = os.stat(path).st_ino == os.fstat(lock.fileno()).st_ino
            except FileNotFoundError:
                current = False
            if current:
                break
            lock.close()
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            fcntl.flock(lock, fcntl.LOCK_UN)
            lock.close()


def check_version(version: int) -> int:
    """Returns `version` as an `int` >= 1, or raises `ValueError` naming it."""
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"`version` must be an integer >= 1. Received: version={version!r}")
    return version


def _make_readable(root: Path) -> None:
    """Gives the staged tree the permissions of a normally created directory.

    `mkdtemp` creates the staging directory with mode 0700; a model server
    running as another user (a container) must be able to read the version.
    """
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(root, 0o777 & ~umask)


def _sync_tree(root: Path) -> None:
    """fsyncs every file and directory under `root` (the version survives a crash)."""
    for directory, _, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(directory, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _sync_directory(Path(directory))


def _sync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
