"""prepare_journal_file: the journal is whole or absent after a power cut, never empty."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chunkraft.chaos.lazyfs_model import LazyModel, materialize
from chunkraft.controller.raft.checked_journal import CheckedFileJournal, journal_format
from chunkraft.controller.raft.journal_check import check_journal
from chunkraft.controller.raft.journal_file import EMPTY_JOURNAL, prepare_journal_file


def test_the_empty_journal_is_what_the_journal_file_itself_writes(tmp_path: Path) -> None:
    created = CheckedFileJournal(tmp_path / "journal")
    created._destroy()
    assert (tmp_path / "journal").read_bytes() == EMPTY_JOURNAL
    assert journal_format(EMPTY_JOURNAL, "journal") == 2


def test_a_missing_journal_is_written_synced_renamed_and_its_directory_synced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append(f"fsync {os.readlink(f'/proc/self/fd/{fd}')}")
        real_fsync(fd)

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        calls.append(f"rename {Path(src).name} -> {Path(dst).name}")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    journal = tmp_path / "data" / "raft" / "journal"
    (tmp_path / "data").mkdir()

    assert prepare_journal_file(journal) is True

    assert journal.read_bytes() == EMPTY_JOURNAL
    assert calls == [
        f"fsync {tmp_path / 'data'}",                       # the new raft/ entry
        f"fsync {journal.with_name('journal.new')}",        # the header's bytes
        "rename journal.new -> journal",
        f"fsync {journal.parent}",                          # the journal's entry
    ]
    assert check_journal(journal).entries == 0


def test_an_empty_journal_is_replaced_and_one_with_bytes_is_left_alone(
        tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    journal.write_bytes(b"")
    assert prepare_journal_file(journal) is True
    assert journal.read_bytes() == EMPTY_JOURNAL

    written = CheckedFileJournal(journal)
    written.add(b"\x01", 1, 1)
    written._destroy()
    before = journal.read_bytes()
    assert prepare_journal_file(journal) is False
    assert journal.read_bytes() == before


def _through_the_model(tmp_path: Path, prepare: bool) -> Path:
    """What a power cut leaves of a raft dir after pysyncobj's journal creation and the
    term/vote store (its directory fsync), with or without prepare_journal_file first."""
    model = LazyModel(tmp_path / "state")
    model.mkdir("/raft")
    model.fsyncdir("/")
    if prepare:
        # prepare_journal_file's calls, in its order.
        handle = model.create("/raft/journal.new")
        model.write(handle, EMPTY_JOURNAL, 0)
        model.fsync(None, handle)
        model.release(handle)
        model.rename("/raft/journal.new", "/raft/journal")
        model.fsyncdir("/raft")
    else:
        handle = model.create("/raft/journal")  # pysyncobj: open('wb'), write, no sync
        model.write(handle, EMPTY_JOURNAL, 0)
        model.release(handle)
    if prepare:
        handle = model.open("/raft/journal")  # pysyncobj: the file exists, r+b, no write
        model.release(handle)
    term = model.create("/raft/journal.term.tmp")  # store_term_vote: fsync, rename, dir fsync
    model.write(term, b"term", 0)
    model.fsync(None, term)
    model.release(term)
    model.rename("/raft/journal.term.tmp", "/raft/journal.term")
    model.fsyncdir("/raft")
    out = tmp_path / "after-cut"
    materialize(tmp_path / "state", out)
    model.close()
    return out / "raft" / "journal"


def test_without_it_a_cut_before_the_first_sync_leaves_an_empty_journal(
        tmp_path: Path) -> None:
    assert _through_the_model(tmp_path / "without", prepare=False).read_bytes() == b""
    assert _through_the_model(tmp_path / "with", prepare=True).read_bytes() == EMPTY_JOURNAL

