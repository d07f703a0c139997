"""`VersionDirectory`: version numbering, refusal to overwrite, atomic commit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from keras_attention.export import VersionDirectory


def test_versions_are_the_integer_named_directories(tmp_path):
    for name in ("1", "007", "12", "latest", ".tmp-export-abc", "3a"):
        (tmp_path / name).mkdir()
    (tmp_path / "99").write_text("a file, not a version")
    versions = VersionDirectory(tmp_path)
    assert versions.versions() == [1, 7, 12]
    assert versions.latest() == 12 and versions.next_version() == 13


def test_empty_or_missing_base_starts_at_one(tmp_path):
    assert VersionDirectory(tmp_path / "missing").next_version() == 1
    assert VersionDirectory(tmp_path).latest() is None


def test_commit_picks_the_next_version_and_renames(tmp_path):
    versions = VersionDirectory(tmp_path / "base")
    with versions.staging() as staging:
        assert staging.parent == tmp_path / "base" and staging.name.startswith(".tmp-export-")
        (staging / "saved_model.pb").write_text("one")
        recorded = []
        version, path = versions.commit(
            staging, before_rename=lambda staged, v: recorded.append((staged, v))
        )
    assert (version, path) == (1, tmp_path / "base" / "1")
    assert recorded == [(staging, 1)]
    assert (path / "saved_model.pb").read_text() == "one"
    assert not staging.exists()
    assert sorted(os.listdir(tmp_path / "base")) == ["1"], "no lock file left behind"
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o777 & ~umask


def test_existing_version_is_never_overwritten(tmp_path):
    (tmp_path / "007").mkdir()
    (tmp_path / "007" / "saved_model.pb").write_text("old")
    versions = VersionDirectory(tmp_path)
    with pytest.raises(FileExistsError, match="Version 7 already exists.*omit it to get 8"):
        versions.check_available(7)
    with versions.staging() as staging:
        (staging / "saved_model.pb").write_text("new")
        with pytest.raises(FileExistsError):
            versions.commit(staging, version=7)
    assert (tmp_path / "007" / "saved_model.pb").read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["007"]  # staging and lock file removed


def test_explicit_version(tmp_path):
    versions = VersionDirectory(tmp_path)
    with versions.staging() as staging:
        assert versions.commit(staging, version=5)[0] == 5
    assert versions.next_version() == 6


@pytest.mark.parametrize("version", [0, -1, 1.0, "2", True])
def test_version_must_be_a_positive_int(tmp_path, version):
    with pytest.raises(ValueError, match=f"Received: version={version!r}"):
        VersionDirectory(tmp_path).path(version)


def test_staging_is_removed_on_error(tmp_path):
    versions = VersionDirectory(tmp_path)
    with pytest.raises(RuntimeError), versions.staging() as staging:
        (staging / "partial").write_text("half")
        raise RuntimeError("export failed")
    assert os.listdir(tmp_path) == []


def test_staging_must_belong_to_the_base(tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    with pytest.raises(ValueError, match="must be inside"):
        VersionDirectory(tmp_path / "base").commit(other)


def test_concurrent_exporters_get_distinct_versions(tmp_path):
    versions = VersionDirectory(tmp_path)
    results, errors = [], []
    barrier = threading.Barrier(6)

    def export(index):
        try:
            with versions.staging() as staging:
                (staging / "saved_model.pb").write_text(str(index))
                barrier.wait()
                results.append(versions.commit(staging)[0])
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=export, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(results) == [1, 2, 3, 4, 5, 6]
    assert sorted(os.listdir(tmp_path)) == ["1", "2", "3", "4", "5", "6"]


def _age(path, seconds):
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_stale_unlocked_staging_is_removed_by_the_next_export(tmp_path):
    """An export killed with SIGKILL leaves its staging directory; the next one cleans it."""
    script = (
        "import sys, time\n"
        "from keras_attention.export.version_directory import VersionDirectory\n"
        "with VersionDirectory(sys.argv[1]).staging() as staging:\n"
        "    (staging / 'saved_model.pb').write_text('half')\n"
        "    print(staging, flush=True)\n"
        "    time.sleep(120)\n"
    )
    exporter = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=os.getcwd()),
    )
    try:
        killed = tmp_path / os.path.basename(exporter.stdout.readline().strip())
        assert killed.name.startswith(".tmp-export-")
        young = tmp_path / ".tmp-export-young"
        young.mkdir()
        _age(killed, 7200)
        versions = VersionDirectory(tmp_path)
        assert versions.remove_stale_staging() == [], "an old staging dir still locked is in use"
        exporter.send_signal(signal.SIGKILL)
        exporter.wait()
        assert killed.is_dir(), "SIGKILL leaves the staging directory behind"
        with versions.staging() as staging:
            assert not killed.exists(), "the next export removes it"
            assert young.is_dir(), "a staging directory younger than an hour is kept"
            versions.commit(staging)
    finally:
        if exporter.poll() is None:
            exporter.kill()
            exporter.wait()
    assert sorted(os.listdir(tmp_path)) == [".tmp-export-young", "1"]
    _age(young, 3601)
    assert versions.remove_stale_staging() == [young]
