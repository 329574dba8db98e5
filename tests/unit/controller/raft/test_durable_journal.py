"""DurableJournal: durable term/vote before setCurrentTerm returns, fdatasync on demand."""

from __future__ import annotations

from pathlib import Path

import pytest
from pysyncobj.journal import FileJournal, MetaStorer

from chunkraft.controller.raft.checked_journal import CheckedFileJournal, convert_format_1
from chunkraft.controller.raft.durable_journal import DurableJournal
from chunkraft.controller.raft.safe_journal import ConflictOnlyJournal
from chunkraft.controller.raft.term_vote import TermVote, read_term_vote, term_vote_path
from chunkraft.errors import JournalCorruptError

# pysyncobj 0.3.17 leaves files to the garbage collector (MetaStorer.getMeta reads journal.meta
# with open(...).read()).
pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


class _Syncs:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, fd: int) -> None:
        self.calls += 1


def _open(path: Path, syncs: _Syncs | None = None) -> DurableJournal:
    return DurableJournal(CheckedFileJournal(path), str(path), syncs or _Syncs())


def test_the_term_and_vote_are_on_disk_when_set_current_term_returns(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    journal = _open(path)
    journal.setCurrentTerm(3, "127.0.0.1:9002")
    assert read_term_vote(term_vote_path(path)) == TermVote(3, "127.0.0.1:9002")
    assert (journal.getCurrentTerm(), journal.getVotedForNodeId()) == (3, "127.0.0.1:9002")
    journal._destroy()
    reopened = _open(path)
    assert (reopened.getCurrentTerm(), reopened.getVotedForNodeId()) == (3, "127.0.0.1:9002")
    reopened._destroy()


def test_a_flipped_meta_byte_no_longer_forgets_the_vote(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    journal = _open(path)
    journal.setCurrentTerm(8, "127.0.0.1:9003")
    journal._destroy()
    meta = Path(f"{path}.meta")
    data = bytearray(meta.read_bytes())
    data[len(data) // 2] ^= 0xFF
    meta.write_bytes(bytes(data))
    # What pysyncobj alone would use: its MetaStorer reads any damage as "no term".
    assert MetaStorer(f"{path}.meta").getMeta().get("currentTerm", 0) == 0
    reopened = _open(path)
    assert (reopened.getCurrentTerm(), reopened.getVotedForNodeId()) == (8, "127.0.0.1:9003")
    reopened._destroy()


def test_a_corrupt_term_file_is_refused_at_open(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    journal = _open(path)
    journal.setCurrentTerm(2, None)
    journal._destroy()
    term_file = term_vote_path(path)
    data = bytearray(term_file.read_bytes())
    data[-1] ^= 0x01
    term_file.write_bytes(bytes(data))
    with pytest.raises(JournalCorruptError, match="CRC"):
        _open(path)


def test_an_older_nodes_meta_is_moved_to_the_term_file_at_open(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    plain = FileJournal(str(path))
    plain.setCurrentTerm(6, "127.0.0.1:9001")
    plain.add(b"x", 1, 6)
    plain._destroy()
    assert convert_format_1(path) == 1  # what a node does at start, after checking the journal
    journal = _open(path)
    assert journal[0] == (b"x", 1, 6)
    assert read_term_vote(term_vote_path(path)) == TermVote(6, "127.0.0.1:9001")
    assert journal.getCurrentTerm() == 6
    journal._destroy()


def test_writes_mark_the_journal_unsynced_and_one_sync_covers_them(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    syncs = _Syncs()
    journal = _open(path, syncs)
    assert not journal.unsynced
    journal.sync()
    assert syncs.calls == 0  # nothing written: no disk wait
    for index in range(1, 6):
        journal.add(b"x", index, 1)
    assert journal.unsynced
    journal.sync()
    journal.sync()
    assert (syncs.calls, journal.syncs, journal.unsynced) == (1, 1, False)
    journal.deleteEntriesFrom(3)
    assert journal.unsynced
    journal.sync()
    assert syncs.calls == 2 and len(journal) == 3
    journal._destroy()


def test_a_failed_sync_leaves_the_journal_unsynced(tmp_path: Path) -> None:
    def failing(fd: int) -> None:
        raise OSError(5, "EIO")

    journal = DurableJournal(CheckedFileJournal(tmp_path / "journal"),
                             str(tmp_path / "journal"), failing)
    journal.add(b"x", 1, 1)
    with pytest.raises(OSError):
        journal.sync()
    assert journal.unsynced
    journal._destroy()


def test_a_conflict_only_journal_settles_its_truncation_before_syncing(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    syncs = _Syncs()
    inner = _open(path, syncs)
    for index, term in ((1, 1), (2, 1), (3, 1)):
        inner.add(b"x", index, term)
    inner.setCurrentTerm(2, None)
    inner.sync()
    journal = ConflictOnlyJournal(inner)
    journal.deleteEntriesFrom(1)  # a term-2 leader's message after entry 1, with no entries
    assert not inner.unsynced  # lazily noted only
    journal.sync()  # settles: entries 2 and 3 (term 1) go, and that truncation is synced
    assert len(inner) == 1 and not inner.unsynced and syncs.calls == 2
    journal._destroy()
