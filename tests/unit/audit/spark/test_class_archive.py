"""ClassArchive: when the driver JVM maps the archive, when it writes one, and publication.

No JVM here: tests/integration/test_audit_class_archive.py runs ``chunkraft audit`` with it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from chunkraft.audit.spark.class_archive import (
    CACHE_DIR_ENV,
    DISABLE_ENV,
    ClassArchive,
    cache_dir,
)

KEY = "0123456789abcdef"


def archive(tmp_path: Path) -> ClassArchive:
    return ClassArchive(tmp_path / "spark-cds", KEY)


def write_pending(store: ClassArchive, size: int = 4096) -> None:
    store.directory.mkdir(parents=True, exist_ok=True)
    store.pending.write_bytes(b"\x01" * size)


def test_the_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"
    monkeypatch.delenv(CACHE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "chunkraft"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == Path.home() / ".cache" / "chunkraft"


@pytest.mark.parametrize("value", ["0", "false", "off", "no"])
def test_it_can_be_turned_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(DISABLE_ENV, value)
    assert ClassArchive.for_this_installation() is None


def test_this_installation_has_a_stable_key(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    monkeypatch.setenv(DISABLE_ENV, "1")
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path))
    first, second = ClassArchive.for_this_installation(), ClassArchive.for_this_installation()
    assert first is not None and first == second  # PySpark and Java 17 are installed here
    assert first.directory == tmp_path / "spark-cds" and len(first.key) == 16


def test_without_an_archive_the_jvm_writes_a_pending_one(tmp_path: Path) -> None:
    store = archive(tmp_path)
    mode, options = store.java_options()
    assert mode == "written"
    assert options[0] == f"-XX:ArchiveClassesAtExit={store.pending}"
    assert str(os.getpid()) in store.pending.name
    assert store.directory.is_dir()
    assert not any(o.startswith("-XX:SharedArchiveFile") for o in options)


def test_a_published_archive_is_mapped_and_verified(tmp_path: Path) -> None:
    store = archive(tmp_path)
    write_pending(store)
    assert store.publish()
    assert not store.pending.exists() and store.path.stat().st_size == 4096
    assert json.loads((store.directory / f"{KEY}.json").read_text())["size"] == 4096
    assert store.usable()
    mode, options = store.java_options()
    assert mode == "mapped"
    assert options[0] == f"-XX:SharedArchiveFile={store.path}"
    assert "-XX:+VerifySharedSpaces" in options
    assert any(o.startswith(f"-XX:ErrorFile={store.directory}/") for o in options)


def test_a_torn_archive_is_never_mapped(tmp_path: Path) -> None:
    """HotSpot crashes on a truncated archive: its size must match the record."""
    store = archive(tmp_path)
    write_pending(store)
    assert store.publish()
    with store.path.open("r+b") as torn:
        torn.truncate(1000)
    assert not store.usable()
    assert store.java_options().options[0].startswith("-XX:ArchiveClassesAtExit=")


@pytest.mark.parametrize("record", ["", "{", '{"size": "4096"}', '{"size": 0}', "[]"])
def test_a_bad_record_means_no_archive(tmp_path: Path, record: str) -> None:
    store = archive(tmp_path)
    write_pending(store)
    assert store.publish()
    (store.directory / f"{KEY}.json").write_text(record)
    assert not store.usable()


def test_an_archive_without_its_record_is_not_used(tmp_path: Path) -> None:
    store = archive(tmp_path)
    store.directory.mkdir(parents=True)
    store.path.write_bytes(b"x" * 100)
    assert not store.usable()


def test_nothing_to_publish_publishes_nothing(tmp_path: Path) -> None:
    store = archive(tmp_path)
    assert not store.publish()  # no pending file
    write_pending(store, size=0)  # a JVM that wrote nothing
    assert not store.publish()
    assert not store.pending.exists() and not store.path.exists()


def test_discard_removes_the_archive_and_its_record(tmp_path: Path) -> None:
    store = archive(tmp_path)
    write_pending(store)
    assert store.publish()
    store.discard()
    assert not store.path.exists() and not (store.directory / f"{KEY}.json").exists()
    store.discard()  # twice is fine


def test_stale_pending_archives_of_dead_runs_are_removed(tmp_path: Path) -> None:
    store = archive(tmp_path)
    store.directory.mkdir(parents=True)
    stale, fresh = store.directory / f"{KEY}.1.pending", store.directory / f"{KEY}.2.pending"
    stale.write_bytes(b"x")
    fresh.write_bytes(b"x")
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    store.java_options()
    assert not stale.exists() and fresh.exists()


def test_publishing_removes_other_installations_old_archives(tmp_path: Path) -> None:
    store = archive(tmp_path)
    store.directory.mkdir(parents=True)
    old = [store.directory / "aaaaaaaaaaaaaaaa.jsa", store.directory / "aaaaaaaaaaaaaaaa.json"]
    recent = store.directory / "bbbbbbbbbbbbbbbb.jsa"
    for path in [*old, recent]:
        path.write_bytes(b"x")
    eight_days_ago = time.time() - 8 * 86400
    for path in old:
        os.utime(path, (eight_days_ago, eight_days_ago))
    write_pending(store)
    assert store.publish()
    assert not any(p.exists() for p in old) and recent.exists() and store.usable()


def test_an_unwritable_cache_means_no_archive(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert ClassArchive(blocker / "spark-cds", KEY).java_options() == ("off", ())
