"""check_journal / check_dump on a real pysyncobj journal written by a one-voter RaftNode."""

from __future__ import annotations

import codecs
import io
import pickle
import struct
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from chunkraft.controller.raft import BatchStatus
from chunkraft.controller.raft.dump import write_dump
from chunkraft.controller.raft.journal_check import check_dump, check_journal
from chunkraft.controller.raft.node import RaftNode, RaftSettings
from chunkraft.controller.raft.term_vote import TermVote, store_term_vote, term_vote_path
from chunkraft.deploy.local_cluster import free_ports
from chunkraft.errors import JournalCorruptError
from tests.support.raft import batch, topic_record, wait_until
from tests.unit.controller.raft.test_dump import sample_image

PROPOSED = 6
_FIRST_RECORD_AT = 40
_END_AT = 36


@dataclass(frozen=True)
class Record:
    """One journal record: where it is, its Raft index and term, and its command."""

    position: int
    size: int
    index: int
    term: int

    @property
    def command_at(self) -> int:
        return self.position + 20

    @property
    def end(self) -> int:
        return self.position + 4 + self.size + 4


def records_of(data: bytes) -> list[Record]:
    (end,) = struct.unpack_from("<I", data, _END_AT)
    position, found = _FIRST_RECORD_AT, []
    while position < end:
        (size,) = struct.unpack_from("<I", data, position)
        index, term = struct.unpack_from("<QQ", data, position + 4)
        found.append(Record(position, size, index, term))
        position += size + 8
    return found


def command_of(data: bytes, record: Record) -> bytes:
    return data[record.command_at : record.position + 4 + record.size]


def with_records(data: bytes, commands: list[tuple[bytes, int, int]]) -> bytes:
    """``data``'s header, then ``commands`` (command, index, term) laid out as pysyncobj does."""
    body = b"".join(
        struct.pack("<I", len(command) + 16) + struct.pack("<QQ", index, term) + command
        + struct.pack("<I", len(command) + 16)
        for command, index, term in commands
    )
    end = _FIRST_RECORD_AT + len(body)
    header = data[:_END_AT] + struct.pack("<I", end)
    return header + body + bytes(max(1024 - end, 0))


def entries_of(data: bytes) -> list[tuple[bytes, int, int]]:
    return [(command_of(data, r), r.index, r.term) for r in records_of(data)]


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The bytes of a journal holding PROPOSED chunkraft entries (one topic each)."""
    data_dir = tmp_path_factory.mktemp("journal")
    (port,) = free_ports(1)
    settings = RaftSettings(node_id=1, voters={1: f"127.0.0.1:{port}"}, data_dir=data_dir,
                            password="test", cluster_id=uuid.uuid4())
    node = RaftNode(settings)
    try:
        wait_until(node.is_leader, 10, "a one-voter node never became leader")
        for n in range(PROPOSED):
            (outcome,) = node.propose([batch([topic_record(n)], expected=n)]).result(10)
            assert outcome.status is BatchStatus.COMMITTED
    finally:
        node.close()
    return settings.journal_path.read_bytes()


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "journal"


def chunkraft_records(data: bytes) -> list[Record]:
    return [r for r in records_of(data) if b"CRE1" in command_of(data, r)]


def test_a_good_journal_passes(journal: bytes, path: Path) -> None:
    path.write_bytes(journal)
    result = check_journal(path)
    records = records_of(journal)
    assert result.entries == len(records)
    assert result.chunkraft_entries == PROPOSED
    assert result.first_index == 1
    assert result.last_index == records[-1].index
    # pysyncobj's own no-ops are there too: its first entry and the leader's.
    assert result.entries > PROPOSED


def test_a_flipped_payload_byte_names_the_raft_index(journal: bytes, path: Path) -> None:
    record = chunkraft_records(journal)[2]
    payload_at = journal.index(b"CRE1", record.command_at)
    # The payload is pickled as latin-1 text in UTF-8, then "q\x01X\x06\0\0\0latin1".
    payload_end = journal.index(b"latin1", payload_at) - 7
    assert payload_end - payload_at > 50
    for position in range(payload_at, payload_end):
        flipped = bytearray(journal)
        flipped[position] ^= 1 << (position % 7)
        path.write_bytes(flipped)
        with pytest.raises(JournalCorruptError, match=f"Raft index {record.index}:") as error:
            check_journal(path)
        assert error.value.position == record.position
        assert str(path) in str(error.value)


class _PlainData(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> object:
        if (module, name) == ("_codecs", "encode"):
            return codecs.encode
        raise pickle.UnpicklingError(f"{module}.{name}")


def test_every_flipped_command_byte_is_refused_or_harmless(journal: bytes, path: Path) -> None:
    """Outside the payload, a flip may hit bytes pysyncobj ignores (a memo slot, the pickle's
    protocol number); anything that changes what pysyncobj would run must be refused."""
    record = chunkraft_records(journal)[0]
    original = _PlainData(io.BytesIO(command_of(journal, record)[1:])).load()
    harmless = 0
    for position in range(record.command_at, record.position + 4 + record.size):
        for mask in (0x01, 0x80, 0xFF):
            flipped = bytearray(journal)
            flipped[position] ^= mask
            path.write_bytes(flipped)
            try:
                check_journal(path)
            except JournalCorruptError as error:
                assert f"Raft index {record.index}" in str(error)
                continue
            command = command_of(bytes(flipped), record)
            assert command[0] == 0
            assert _PlainData(io.BytesIO(command[1:])).load() == original
            harmless += 1
    assert harmless < 40  # memo slots and the protocol byte only


@pytest.mark.parametrize("command_type", [0x01, 0x02, 0x03, 0x80])
def test_a_command_type_other_than_regular_cannot_hide_an_entry(
    journal: bytes, path: Path, command_type: int
) -> None:
    """pysyncobj would skip such a command silently, losing the entry inside it."""
    record = chunkraft_records(journal)[1]
    flipped = bytearray(journal)
    flipped[record.command_at] = command_type
    path.write_bytes(flipped)
    with pytest.raises(JournalCorruptError, match=f"Raft index {record.index}: .*type"):
        check_journal(path)


def test_a_call_of_another_method_is_refused(journal: bytes, path: Path) -> None:
    """pysyncobj would look up method 1, fail, and retry that entry for ever."""
    entries = entries_of(journal)
    record = chunkraft_records(journal)[0]
    number = [r.index for r in records_of(journal)].index(record.index)
    command, index, term = entries[number]
    assert command[:5] == b"\x00\x80\x02K\x00"  # BININT1 0: the method id
    entries[number] = (command[:5].replace(b"K\x00", b"K\x01") + command[5:], index, term)
    path.write_bytes(with_records(journal, entries))
    with pytest.raises(JournalCorruptError, match=f"Raft index {index}: .*shape"):
        check_journal(path)


def test_the_rebuilt_journal_helper_is_faithful(journal: bytes, path: Path) -> None:
    path.write_bytes(with_records(journal, entries_of(journal)))
    assert check_journal(path).chunkraft_entries == PROPOSED


def test_every_truncation_inside_the_records_is_refused(journal: bytes, path: Path) -> None:
    end = records_of(journal)[-1].end
    for length in [*range(0, _FIRST_RECORD_AT + 1), *range(_FIRST_RECORD_AT + 1, end, 3)]:
        path.write_bytes(journal[:length])
        with pytest.raises(JournalCorruptError):
            check_journal(path)


def test_a_garbled_trailer_is_refused(journal: bytes, path: Path) -> None:
    record = records_of(journal)[3]
    garbled = bytearray(journal)
    garbled[record.end - 4] ^= 0x04
    path.write_bytes(garbled)
    with pytest.raises(JournalCorruptError, match="trailing size") as error:
        check_journal(path)
    assert error.value.position == record.position


def test_a_record_size_past_the_end_is_refused(journal: bytes, path: Path) -> None:
    record = records_of(journal)[2]
    garbled = bytearray(journal)
    garbled[record.position + 3] = 0x7F
    path.write_bytes(garbled)
    with pytest.raises(JournalCorruptError, match="runs past"):
        check_journal(path)


def test_a_header_pointing_past_the_file_is_refused(journal: bytes, path: Path) -> None:
    garbled = bytearray(journal)
    garbled[_END_AT : _END_AT + 4] = struct.pack("<I", len(journal) + 1)
    path.write_bytes(garbled)
    with pytest.raises(JournalCorruptError, match="records end at byte"):
        check_journal(path)


def test_indexes_must_be_consecutive(journal: bytes, path: Path) -> None:
    entries = entries_of(journal)
    command, index, term = entries[3]
    entries[3] = (command, index + 1, term)
    path.write_bytes(with_records(journal, entries))
    with pytest.raises(JournalCorruptError, match=f"Raft index {index + 1} follows"):
        check_journal(path)


def test_terms_must_not_decrease(journal: bytes, path: Path) -> None:
    entries = entries_of(journal)
    command, index, term = entries[3]
    entries[3] = (command, index, term + 2**40)  # a flipped high byte of the term
    path.write_bytes(with_records(journal, entries))
    with pytest.raises(JournalCorruptError, match="term"):
        check_journal(path)


def test_a_command_naming_a_class_is_refused_without_importing_it(
    journal: bytes, path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = tmp_path / "imported"
    module = "chunkraft_journal_canary"
    (tmp_path / f"{module}.py").write_text(
        f"import pathlib\npathlib.Path({str(canary)!r}).touch()\nclass Payload: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    # What pickle.dumps((0, (Payload(),)), protocol=2) writes, spelled out by hand.
    command = (b"\x00\x80\x02K\x00c" + module.encode() + b"\nPayload\n)\x81\x85\x86.")
    entries = entries_of(journal)
    last_index, last_term = entries[-1][1], entries[-1][2]
    entries.append((command, last_index + 1, last_term))
    path.write_bytes(with_records(journal, entries))
    with pytest.raises(JournalCorruptError, match=f"Raft index {last_index + 1}: .*{module}"):
        check_journal(path)
    assert module not in sys.modules
    assert not canary.exists()


def test_a_good_dump_passes_and_a_bad_one_is_a_journal_error(tmp_path: Path) -> None:
    path = tmp_path / "dump"
    write_dump(path, image=sample_image(), cluster_id=uuid.uuid4(), keys=[],
               last_entry=(b"\x01", 2, 1), previous_entry=(b"\x01", 1, 0), members=[])
    check_dump(path)
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x01
    path.write_bytes(data)
    with pytest.raises(JournalCorruptError, match="dump is unusable"):
        check_dump(path)


def test_a_node_refuses_to_start_on_a_corrupt_journal(journal: bytes, tmp_path: Path) -> None:
    (port,) = free_ports(1)
    settings = RaftSettings(node_id=1, voters={1: f"127.0.0.1:{port}"}, data_dir=tmp_path,
                            password="test", cluster_id=uuid.uuid4())
    settings.journal_path.parent.mkdir(parents=True)
    record = chunkraft_records(journal)[-1]
    garbled = bytearray(journal)
    garbled[record.end - 10] ^= 0x01
    settings.journal_path.write_bytes(garbled)
    with pytest.raises(JournalCorruptError, match=f"Raft index {record.index}"):
        RaftNode(settings)


# ---------------------------------------------------------------- terms (issue 24)


def flip_term_byte(journal: bytes, record: Record, byte: int, mask: int = 0xFF) -> bytearray:
    """``journal`` with byte ``byte`` (0 = lowest) of ``record``'s u64 term XORed by ``mask``."""
    flipped = bytearray(journal)
    flipped[record.position + 12 + byte] ^= mask
    return flipped


def test_the_issue_24_flip_is_refused_naming_file_byte_and_index(
    journal: bytes, path: Path
) -> None:
    """The issue's exact damage: the term's second-highest byte of the last record flipped."""
    record = records_of(journal)[-1]
    path.write_bytes(flip_term_byte(journal, record, 6))
    with pytest.raises(JournalCorruptError) as error:
        check_journal(path, current_term=record.term)
    assert error.value.path == str(path)
    assert error.value.position == record.position + 12  # the term field itself
    assert f"Raft index {record.index} (the record at byte {record.position})" in str(error.value)
    assert "largest term an epoch can hold" in str(error.value)
    # Refused on the epoch range alone, even without a stored term to compare with.
    with pytest.raises(JournalCorruptError, match=f"Raft index {record.index}"):
        check_journal(path)


def test_a_term_above_the_stored_current_term_is_refused(journal: bytes, path: Path) -> None:
    entries = entries_of(journal)
    current = entries[-1][2]
    path.write_bytes(journal)
    check_journal(path, current_term=current)  # the real journal and its own term pass
    command, index, _term = entries[-1]
    entries[-1] = (command, index, current + 1)  # raised, still a valid epoch
    path.write_bytes(with_records(journal, entries))
    with pytest.raises(JournalCorruptError,
                       match=f"Raft index {index} .* stored current term {current}"):
        check_journal(path, current_term=current)


def test_a_lowered_term_is_refused(journal: bytes, path: Path) -> None:
    entries = entries_of(journal)
    command, index, term = entries[-1]
    assert term > 0 and entries[-2][2] == term
    entries[-1] = (command, index, term - 1)
    path.write_bytes(with_records(journal, entries))
    with pytest.raises(JournalCorruptError, match=f"Raft index {index} has term {term - 1}"):
        check_journal(path, current_term=term)


def test_a_duplicated_or_missing_index_is_refused(journal: bytes, path: Path) -> None:
    entries = entries_of(journal)
    duplicated = [*entries[:4], entries[3], *entries[4:]]
    path.write_bytes(with_records(journal, duplicated))
    with pytest.raises(JournalCorruptError, match=f"Raft index {entries[3][1]} follows"):
        check_journal(path, current_term=entries[-1][2])
    missing = [*entries[:3], *entries[4:]]
    path.write_bytes(with_records(journal, missing))
    with pytest.raises(JournalCorruptError, match=f"Raft index {entries[4][1]} follows"):
        check_journal(path, current_term=entries[-1][2])


def test_every_bit_flip_in_any_records_term_is_refused(journal: bytes, path: Path) -> None:
    """All 64 single-bit flips of the term of every record after the first term change: none
    passes the start-up check (a raised term is above the stored term or the next entry's, a
    lowered one below the previous entry's). Record 2 is left out on purpose: its term 1 can
    become 0, the term of record 1, and nothing but a CRC over the record would see that."""
    records = records_of(journal)
    current = records[-1].term
    assert records[1].term != records[0].term
    assert all(record.term == current for record in records[1:])
    for record in records[2:]:
        for byte in range(8):
            for bit in range(8):
                path.write_bytes(flip_term_byte(journal, record, byte, 1 << bit))
                with pytest.raises(JournalCorruptError, match="term"):
                    check_journal(path, current_term=current)


def test_a_node_refuses_to_start_on_a_term_above_its_stored_term(
    journal: bytes, tmp_path: Path
) -> None:
    (port,) = free_ports(1)
    settings = RaftSettings(node_id=1, voters={1: f"127.0.0.1:{port}"}, data_dir=tmp_path,
                            password="test", cluster_id=uuid.uuid4())
    settings.journal_path.parent.mkdir(parents=True)
    record = records_of(journal)[-1]
    store_term_vote(term_vote_path(settings.journal_path), TermVote(record.term, None))
    settings.journal_path.write_bytes(flip_term_byte(journal, record, 6))
    with pytest.raises(JournalCorruptError,
                       match=f"Raft index {record.index} .*at byte {record.position + 12}"):
        RaftNode(settings)
