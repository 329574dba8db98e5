"""CheckedFileJournal (format 2): what it writes reads back whole, damage is refused at open,
compaction and the conversion from pysyncobj's format 1 replace the file atomically."""

from __future__ import annotations

import os
import pickle
import struct
import uuid
from pathlib import Path

import pytest
from pysyncobj.journal import FileJournal

from chunkraft.controller.raft import BatchStatus, encode_entry
from chunkraft.controller.raft.checked_journal import (
    HEADER_SIZE,
    CheckedFileJournal,
    convert_format_1,
    encode_journal,
    journal_format,
    journal_records,
)
from chunkraft.controller.raft.journal_check import check_journal
from chunkraft.controller.raft.node import RaftNode, RaftSettings
from chunkraft.controller.raft.term_vote import TermVote, store_term_vote, term_vote_path
from chunkraft.errors import JournalCorruptError
from chunkraft.local.local_cluster import free_ports
from tests.support.raft import batch, key, topic_record, wait_until

# pysyncobj 0.3.17 leaves files to the garbage collector (MetaStorer.getMeta reads journal.meta
# with open(...).read()); only the format-1 journals built here use it.
pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")



def _command(n: int, records: int = 1) -> bytes:
    """A regular pysyncobj command calling chunkraft's one entry point, as the journal holds."""
    payload = encode_entry([batch([topic_record(n + k) for k in range(records)], key_=key(n))])
    return b"\x00" + pickle.dumps((0, (payload,)), protocol=2)


NO_OP = b"\x01"
ENTRIES = [(NO_OP, 1, 0), (NO_OP, 2, 1), (_command(1), 3, 1), (_command(2), 4, 2),
           (_command(3, records=20), 5, 2)]


def _entries(journal: CheckedFileJournal) -> list[tuple[bytes, int, int]]:
    return [journal[i] for i in range(len(journal))]


def _filled(path: Path) -> CheckedFileJournal:
    journal = CheckedFileJournal(path)
    for entry in ENTRIES:
        journal.add(*entry)
    return journal


def test_a_new_journal_is_a_header_only(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    journal = CheckedFileJournal(path)
    assert len(journal) == 0 and journal.getRaftCommitIndex() == 1
    journal._destroy()
    data = path.read_bytes()
    assert data == encode_journal([]) and len(data) == HEADER_SIZE
    assert journal_format(data, str(path)) == 2


def test_what_is_written_reads_back_after_reopening(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    journal = _filled(path)
    journal.setRaftCommitIndex(4)
    assert _entries(journal) == ENTRIES and journal[-1] == ENTRIES[-1]
    assert journal[1:3] == ENTRIES[1:3]  # pysyncobj slices the log
    journal._destroy()
    reopened = CheckedFileJournal(path)
    assert _entries(reopened) == ENTRIES
    assert reopened.getRaftCommitIndex() == 4  # under the header's CRC, not in journal.meta
    reopened._destroy()
    assert check_journal(path).last_index == 5


def test_truncations_and_clear_read_back_after_reopening(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    journal = _filled(path)
    journal.deleteEntriesFrom(3)
    journal.add(_command(7), 4, 3)
    assert _entries(journal) == [*ENTRIES[:3], (_command(7), 4, 3)]
    journal._destroy()
    reopened = CheckedFileJournal(path)
    assert _entries(reopened) == [*ENTRIES[:3], (_command(7), 4, 3)]
    reopened.clear()
    reopened.add(NO_OP, 9, 3)  # what pysyncobj adds after loading a dump: its two entries
    reopened.add(_command(8), 10, 3)
    reopened._destroy()
    again = CheckedFileJournal(path)
    assert _entries(again) == [(NO_OP, 9, 3), (_command(8), 10, 3)]
    again._destroy()


def test_compaction_writes_a_new_file_and_sync_follows_it(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    journal = _filled(path)
    journal.setRaftCommitIndex(5)
    before = os.stat(path).st_ino
    journal.deleteEntriesTo(3)
    assert _entries(journal) == ENTRIES[3:]
    assert os.stat(path).st_ino != before  # renamed over the old one, never rewritten in place
    assert not path.with_name("journal.tmp").exists()
    journal.add(_command(6), 6, 2)
    synced: list[int] = []
    journal.sync(lambda fd: synced.append(os.fstat(fd).st_ino))
    assert synced == [os.stat(path).st_ino]  # the descriptor is the new file's
    journal._destroy()
    reopened = CheckedFileJournal(path)
    assert _entries(reopened) == [*ENTRIES[3:], (_command(6), 6, 2)]
    assert reopened.getRaftCommitIndex() == 5
    reopened._destroy()


def test_a_leftover_temporary_file_is_removed_at_open(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    _filled(path)._destroy()
    path.with_name("journal.tmp").write_bytes(b"half a compaction")
    journal = CheckedFileJournal(path)
    assert _entries(journal) == ENTRIES and not path.with_name("journal.tmp").exists()
    journal._destroy()


def test_bytes_after_the_end_are_ignored(tmp_path: Path) -> None:
    """A truncation only moves the header's end: the old records stay behind it, unread."""
    path = tmp_path / "journal"
    journal = _filled(path)
    journal.deleteEntriesFrom(2)
    journal._destroy()
    assert len(path.read_bytes()) > len(encode_journal(ENTRIES[:2]))
    assert [(r.command, r.index, r.term) for r in journal_records(path.read_bytes(), "j")] \
        == ENTRIES[:2]


def test_damage_is_refused_at_open_naming_file_byte_and_index(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    _filled(path)._destroy()
    data = path.read_bytes()
    records = list(journal_records(data, str(path)))
    for record in records:
        damaged = bytearray(data)
        damaged[record.position + 12] ^= 0x01  # the lowest byte of the term
        path.write_bytes(bytes(damaged))
        with pytest.raises(JournalCorruptError) as error:
            CheckedFileJournal(path)
        assert error.value.path == str(path) and error.value.position == record.position
        assert f"Raft index {record.index}" in str(error.value)
        assert f"the record at byte {record.position} fails its CRC32C" in str(error.value)
    damaged = bytearray(data)
    damaged[48] ^= 0x04  # the commit index
    path.write_bytes(bytes(damaged))
    with pytest.raises(JournalCorruptError, match="header fails its CRC32C"):
        CheckedFileJournal(path)


def test_a_flipped_index_is_named_by_the_index_the_record_should_have(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    path.write_bytes(encode_journal(ENTRIES))
    record = list(journal_records(path.read_bytes(), "j"))[3]
    damaged = bytearray(path.read_bytes())
    damaged[record.position + 4] ^= 0x40  # index 4 reads 68
    path.write_bytes(bytes(damaged))
    with pytest.raises(JournalCorruptError, match=r"Raft index 4 \(stored as 68\)"):
        check_journal(path)


def _format_1(path: Path, entries: list[tuple[bytes, int, int]]) -> None:
    """A journal as pysyncobj 0.3.17's FileJournal (format 1) writes it."""
    plain = FileJournal(str(path))
    for entry in entries:
        plain.add(*entry)
    plain._destroy()


def test_a_format_1_journal_is_refused_by_the_journal_itself(tmp_path: Path) -> None:
    """The running node never reads format 1: it is converted first, or refused."""
    path = tmp_path / "journal"
    _format_1(path, ENTRIES)
    with pytest.raises(JournalCorruptError, match="header fails its CRC32C"):
        CheckedFileJournal(path)


def test_format_1_is_converted_once_and_durably(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    _format_1(path, ENTRIES)
    assert journal_format(path.read_bytes(), str(path)) == 1
    assert check_journal(path).entries == len(ENTRIES)
    assert convert_format_1(path) == len(ENTRIES)
    data = path.read_bytes()
    assert journal_format(data, str(path)) == 2 and data == encode_journal(ENTRIES)
    assert not path.with_name("journal.tmp").exists()
    assert convert_format_1(path) is None  # already format 2: untouched
    assert path.read_bytes() == data
    assert convert_format_1(tmp_path / "missing") is None
    journal = CheckedFileJournal(path)
    assert _entries(journal) == ENTRIES
    journal._destroy()


def test_a_torn_format_1_journal_is_not_converted(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    _format_1(path, ENTRIES)
    data = bytearray(path.read_bytes())
    data[36:40] = struct.pack("<I", len(data) + 10)
    path.write_bytes(bytes(data))
    with pytest.raises(JournalCorruptError, match="records end at byte"):
        convert_format_1(path)
    assert path.read_bytes() == bytes(data)


def test_a_node_converts_a_format_1_journal_at_start_and_keeps_every_entry(
    tmp_path: Path
) -> None:
    """An upgrade: the journal an older chunkraft wrote (pysyncobj's format) is checked,
    converted, and replayed; the node goes on writing format 2."""
    (port,) = free_ports(1)
    settings = RaftSettings(node_id=1, voters={1: f"127.0.0.1:{port}"}, data_dir=tmp_path,
                            password="test", cluster_id=uuid.uuid4())
    node = RaftNode(settings)
    try:
        wait_until(node.is_leader, 10, "a one-voter node never became leader")
        for n in range(3):
            (outcome,) = node.propose([batch([topic_record(n)], expected=n)]).result(10)
            assert outcome.status is BatchStatus.COMMITTED
        offset = node.state_machine.image.offset
    finally:
        node.close()
    journal = settings.journal_path
    entries = [(r.command, r.index, r.term) for r in journal_records(journal.read_bytes(), "j")]
    journal.unlink()
    _format_1(journal, entries)
    term = entries[-1][2]
    store_term_vote(term_vote_path(journal), TermVote(term, None))

    restarted = RaftNode(settings)
    try:
        assert journal_format(journal.read_bytes(), str(journal)) == 2
        wait_until(restarted.is_leader, 10, "the converted node never became leader")
        wait_until(lambda: restarted.state_machine.image.offset >= offset, 10,
                   "the converted journal was not replayed")
        (outcome,) = restarted.propose([batch([topic_record(9)], expected=offset + 1)]).result(10)
        assert outcome.status is BatchStatus.COMMITTED
    finally:
        restarted.close()
    after = [(r.command, r.index, r.term) for r in journal_records(journal.read_bytes(), "j")]
    assert after[: len(entries)] == entries and len(after) > len(entries)
