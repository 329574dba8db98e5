"""check_journal / check_dump on a real journal written by a one-voter RaftNode (chunkraft's
format 2, every record under a CRC32C), and on the same entries in pysyncobj's format 1, which a
node checks before converting it."""

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
from chunkraft.controller.raft.checked_journal import encode_journal, journal_records
from chunkraft.controller.raft.dump import write_dump
from chunkraft.controller.raft.journal_check import check_dump, check_journal
from chunkraft.controller.raft.node import RaftNode, RaftSettings
from chunkraft.controller.raft.term_vote import TermVote, store_term_vote, term_vote_path
from chunkraft.errors import JournalCorruptError
from chunkraft.local.local_cluster import free_ports
from tests.support.raft import batch, topic_record, wait_until
from tests.unit.controller.raft.test_dump import sample_image

PROPOSED = 6
_FORMAT_1_FIRST_RECORD = 40
_FORMAT_1_END_AT = 36


@dataclass(frozen=True)
class Record:
    """One journal record: where it is, its Raft index and term, and its command."""

    position: int
    size: int
    index: int
    term: int

    @property
    def index_at(self) -> int:
        return self.position + 4

    @property
    def term_at(self) -> int:
        return self.position + 12

    @property
    def command_at(self) -> int:
        return self.position + 20

    @property
    def end(self) -> int:
        """The byte after the record (after its CRC in format 2, its trailing size in 1)."""
        return self.position + 4 + self.size + 4


def records_of(data: bytes) -> list[Record]:
    return [Record(r.position, 16 + len(r.command), r.index, r.term)
            for r in journal_records(data, "journal")]


def command_of(data: bytes, record: Record) -> bytes:
    return data[record.command_at : record.position + 4 + record.size]


def with_records(commands: list[tuple[bytes, int, int]]) -> bytes:
    """A format-2 journal of ``commands`` (command, index, term), every CRC good: what a bug
    (not a flipped byte) could write, so only the log's own checks can refuse it."""
    return encode_journal(commands)


def format_1(commands: list[tuple[bytes, int, int]]) -> bytes:
    """The same entries laid out as pysyncobj 0.3.17's FileJournal writes them (format 1)."""
    body = b"".join(
        struct.pack("<I", len(command) + 16) + struct.pack("<QQ", index, term) + command
        + struct.pack("<I", len(command) + 16)
        for command, index, term in commands
    )
    end = _FORMAT_1_FIRST_RECORD + len(body)
    header = b"PYSYNCOBJ".ljust(24, b"\0") + b"0.3.17".ljust(8, b"\0") + struct.pack("<II", 1, end)
    return header + body + bytes(max(1024 - end, 0))


def entries_of(data: bytes) -> list[tuple[bytes, int, int]]:
    return [(r.command, r.index, r.term) for r in journal_records(data, "journal")]


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


@pytest.fixture(scope="module")
def journal_1(journal: bytes) -> bytes:
    """The fixture's entries in pysyncobj's format 1 (no record CRC), as an older node left it."""
    return format_1(entries_of(journal))


def flip(data: bytes, position: int, mask: int = 0xFF) -> bytes:
    flipped = bytearray(data)
    flipped[position] ^= mask
    return bytes(flipped)


def node_settings(tmp_path: Path) -> RaftSettings:
    (port,) = free_ports(1)
    settings = RaftSettings(node_id=1, voters={1: f"127.0.0.1:{port}"}, data_dir=tmp_path,
                            password="test", cluster_id=uuid.uuid4())
    settings.journal_path.parent.mkdir(parents=True)
    return settings


@pytest.mark.parametrize("fmt", [2, 1])
def test_a_good_journal_passes(journal: bytes, journal_1: bytes, path: Path, fmt: int) -> None:
    data = journal if fmt == 2 else journal_1
    path.write_bytes(data)
    result = check_journal(path)
    records = records_of(data)
    assert result.entries == len(records)
    assert result.chunkraft_entries == PROPOSED
    assert result.first_index == 1
    assert result.last_index == records[-1].index
    # pysyncobj's own no-ops are there too: its first entry and the leader's.
    assert result.entries > PROPOSED


# ---------------------------------------------------------------- format 2: one CRC per record


def test_the_node_writes_format_2_which_a_format_1_reader_refuses(journal: bytes) -> None:
    assert journal.startswith(b"CHUNKRAFT-RAFT-JOURNAL")
    # Where format 1 keeps the end of its records: 0, below its first record, so a chunkraft
    # of format 1 refuses the file ("records end at byte 0") instead of misreading it.
    assert struct.unpack_from("<I", journal, _FORMAT_1_END_AT) == (0,)


def _every_flip_is_refused(journal: bytes, path: Path, record: Record) -> int:
    """Flips the lowest, a middle and the highest bit, and the whole byte, of every byte of
    ``record``, size to CRC; each must be refused naming the file, the record's byte and its
    Raft index. Returns the flips tried."""
    tried = 0
    for position in range(record.position, record.end):
        for mask in (0x01, 0x10, 0x80, 0xFF):
            path.write_bytes(flip(journal, position, mask))
            with pytest.raises(JournalCorruptError) as error:
                check_journal(path)
            assert error.value.path == str(path)
            assert error.value.position == record.position, (position, mask, error.value)
            assert f"Raft index {record.index}" in str(error.value), (position, mask)
            tried += 1
    return tried


def test_every_flipped_byte_of_the_last_record_is_refused(journal: bytes, path: Path) -> None:
    """Size, index, term, command and CRC: whatever byte changes, the record's CRC32C fails
    (the flipped term byte that once reached a quorum included), and the
    report names the file, the record and its index."""
    assert _every_flip_is_refused(journal, path, records_of(journal)[-1]) > 4 * 150


def test_every_flipped_byte_of_a_middle_record_is_refused(journal: bytes, path: Path) -> None:
    records = records_of(journal)
    middle = records[len(records) // 2]
    assert middle in chunkraft_records(journal) and middle != records[-1]
    assert _every_flip_is_refused(journal, path, middle) > 4 * 150


def test_every_bit_flip_in_any_records_index_or_term_is_refused(
    journal: bytes, path: Path
) -> None:
    """Including record 2, whose term 1 could become 0 unseen in format 1 (see below)."""
    records = records_of(journal)
    for record in records:
        for field_at in (record.index_at, record.term_at):
            for position in range(field_at, field_at + 8):
                for bit in range(8):
                    path.write_bytes(flip(journal, position, 1 << bit))
                    with pytest.raises(JournalCorruptError, match="CRC32C") as error:
                        check_journal(path, current_term=records[-1].term)
                    assert error.value.position == record.position


def test_every_flipped_header_byte_is_refused(journal: bytes, path: Path) -> None:
    for position in range(60):
        path.write_bytes(flip(journal, position, 0x01))
        with pytest.raises(JournalCorruptError) as error:
            check_journal(path)
        assert error.value.path == str(path)


@pytest.mark.parametrize("fmt", [2, 1])
def test_every_truncation_inside_the_records_is_refused(
    journal: bytes, journal_1: bytes, path: Path, fmt: int
) -> None:
    data = journal if fmt == 2 else journal_1
    end = records_of(data)[-1].end
    for length in range(0, end, 1 if fmt == 2 else 3):
        path.write_bytes(data[:length])
        with pytest.raises(JournalCorruptError):
            check_journal(path)


@pytest.mark.parametrize("fmt", [2, 1])
def test_a_record_size_past_the_end_is_refused(
    journal: bytes, journal_1: bytes, path: Path, fmt: int
) -> None:
    data = journal if fmt == 2 else journal_1
    record = records_of(data)[2]
    garbled = bytearray(data)
    garbled[record.position + 3] = 0x7F
    path.write_bytes(garbled)
    with pytest.raises(JournalCorruptError, match="runs past") as error:
        check_journal(path)
    assert error.value.position == record.position


def test_a_file_of_neither_format_is_refused(journal: bytes, path: Path) -> None:
    path.write_bytes(b"KAFKA".ljust(24, b"\0") + journal[24:])
    with pytest.raises(JournalCorruptError, match="neither chunkraft's name nor pysyncobj's"):
        check_journal(path)


# ------------------------------------------- the log's own checks, under good CRCs (format 2)


class _PlainData(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> object:
        if (module, name) == ("_codecs", "encode"):
            return codecs.encode
        raise pickle.UnpicklingError(f"{module}.{name}")


def _replaced(journal: bytes, record: Record, command: bytes) -> list[tuple[bytes, int, int]]:
    entries = entries_of(journal)
    number = [r.index for r in records_of(journal)].index(record.index)
    _command, index, term = entries[number]
    entries[number] = (command, index, term)
    return entries


@pytest.mark.parametrize("command_type", [0x01, 0x02, 0x03, 0x80])
def test_a_command_type_other_than_regular_cannot_hide_an_entry(
    journal: bytes, path: Path, command_type: int
) -> None:
    """pysyncobj would skip such a command silently, losing the entry inside it."""
    record = chunkraft_records(journal)[1]
    command = command_of(journal, record)
    path.write_bytes(with_records(_replaced(journal, record,
                                            bytes([command_type]) + command[1:])))
    with pytest.raises(JournalCorruptError, match=f"Raft index {record.index}: .*type"):
        check_journal(path)


def test_a_call_of_another_method_is_refused(journal: bytes, path: Path) -> None:
    """pysyncobj would look up method 1, fail, and retry that entry for ever."""
    record = chunkraft_records(journal)[0]
    command = command_of(journal, record)
    assert command[:5] == b"\x00\x80\x02K\x00"  # BININT1 0: the method id
    path.write_bytes(with_records(_replaced(
        journal, record, command[:5].replace(b"K\x00", b"K\x01") + command[5:])))
    with pytest.raises(JournalCorruptError, match=f"Raft index {record.index}: .*shape"):
        check_journal(path)


def test_a_payload_failing_its_chunkraft_crc_is_refused_under_a_good_record_crc(
    journal: bytes, path: Path
) -> None:
    record = chunkraft_records(journal)[2]
    command = bytearray(command_of(journal, record))
    command[command.index(b'{"ok":true}') + 2] ^= 0x01  # the batch's response: "nk"
    path.write_bytes(with_records(_replaced(journal, record, bytes(command))))
    with pytest.raises(JournalCorruptError, match=f"Raft index {record.index}: .*CRC"):
        check_journal(path)


def test_the_rebuilt_journal_helper_is_faithful(journal: bytes, path: Path) -> None:
    path.write_bytes(with_records(entries_of(journal)))
    assert check_journal(path).chunkraft_entries == PROPOSED
    records = slice(60, records_of(journal)[-1].end)  # after the header (its commit index)
    assert with_records(entries_of(journal))[records] == journal[records]


def test_indexes_must_be_consecutive(journal: bytes, path: Path) -> None:
    entries = entries_of(journal)
    command, index, term = entries[3]
    entries[3] = (command, index + 1, term)
    path.write_bytes(with_records(entries))
    with pytest.raises(JournalCorruptError, match=f"Raft index {index + 1} follows"):
        check_journal(path)


def test_terms_must_not_decrease(journal: bytes, path: Path) -> None:
    entries = entries_of(journal)
    command, index, term = entries[3]
    entries[3] = (command, index, term + 2**40)  # a flipped high byte of the term
    path.write_bytes(with_records(entries))
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
    path.write_bytes(with_records(entries))
    with pytest.raises(JournalCorruptError, match=f"Raft index {last_index + 1}: .*{module}"):
        check_journal(path)
    assert module not in sys.modules
    assert not canary.exists()


# ---------------------------------------------------------------- format 1 (pysyncobj's)


def test_format_1_a_flipped_payload_byte_names_the_raft_index(
    journal_1: bytes, path: Path
) -> None:
    """Without a record CRC, the payload's own CRC still names the entry."""
    record = chunkraft_records(journal_1)[2]
    payload_at = journal_1.index(b"CRE1", record.command_at)
    # The payload is pickled as latin-1 text in UTF-8, then "q\x01X\x06\0\0\0latin1".
    payload_end = journal_1.index(b"latin1", payload_at) - 7
    assert payload_end - payload_at > 50
    for position in range(payload_at, payload_end):
        path.write_bytes(flip(journal_1, position, 1 << (position % 7)))
        with pytest.raises(JournalCorruptError, match=f"Raft index {record.index}:") as error:
            check_journal(path)
        assert error.value.position == record.position
        assert str(path) in str(error.value)


def test_format_1_every_flipped_command_byte_is_refused_or_harmless(
    journal_1: bytes, path: Path
) -> None:
    """Outside the payload, a flip may hit bytes pysyncobj ignores (a memo slot, the pickle's
    protocol number); anything that changes what pysyncobj would run must be refused."""
    record = chunkraft_records(journal_1)[0]
    original = _PlainData(io.BytesIO(command_of(journal_1, record)[1:])).load()
    harmless = 0
    for position in range(record.command_at, record.position + 4 + record.size):
        for mask in (0x01, 0x80, 0xFF):
            flipped = flip(journal_1, position, mask)
            path.write_bytes(flipped)
            try:
                check_journal(path)
            except JournalCorruptError as error:
                assert f"Raft index {record.index}" in str(error)
                continue
            command = command_of(flipped, record)
            assert command[0] == 0
            assert _PlainData(io.BytesIO(command[1:])).load() == original
            harmless += 1
    assert harmless < 40  # memo slots and the protocol byte only


def test_format_1_a_garbled_trailer_is_refused(journal_1: bytes, path: Path) -> None:
    record = records_of(journal_1)[3]
    path.write_bytes(flip(journal_1, record.end - 4, 0x04))
    with pytest.raises(JournalCorruptError, match="trailing size") as error:
        check_journal(path)
    assert error.value.position == record.position


def test_format_1_a_header_pointing_past_the_file_is_refused(
    journal_1: bytes, path: Path
) -> None:
    garbled = bytearray(journal_1)
    garbled[_FORMAT_1_END_AT : _FORMAT_1_END_AT + 4] = struct.pack("<I", len(journal_1) + 1)
    path.write_bytes(garbled)
    with pytest.raises(JournalCorruptError, match="records end at byte"):
        check_journal(path)


@pytest.mark.parametrize("fmt", [2, 1])
def test_a_node_refuses_to_start_on_a_corrupt_journal(
    journal: bytes, journal_1: bytes, tmp_path: Path, fmt: int
) -> None:
    data = journal if fmt == 2 else journal_1
    settings = node_settings(tmp_path)
    record = chunkraft_records(data)[-1]
    settings.journal_path.write_bytes(flip(data, record.end - 10, 0x01))
    with pytest.raises(JournalCorruptError, match=f"Raft index {record.index}"):
        RaftNode(settings)


def test_a_dump_good_passes_and_a_bad_one_is_a_journal_error(tmp_path: Path) -> None:
    path = tmp_path / "dump"
    write_dump(path, image=sample_image(), cluster_id=uuid.uuid4(), keys=[],
               last_entry=(b"\x01", 2, 1), previous_entry=(b"\x01", 1, 0), members=[])
    check_dump(path)
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x01
    path.write_bytes(data)
    with pytest.raises(JournalCorruptError, match="dump is unusable"):
        check_dump(path)


# ---------------------------------------------------------------- terms


def flip_term_byte(journal: bytes, record: Record, byte: int, mask: int = 0xFF) -> bytes:
    """``journal`` with byte ``byte`` (0 = lowest) of ``record``'s u64 term XORed by ``mask``."""
    return flip(journal, record.term_at + byte, mask)


def test_the_flipped_term_byte_is_refused_naming_file_record_and_index(
    journal: bytes, path: Path
) -> None:
    """The issue's exact damage: the term's second-highest byte of the last record flipped.
    The record's CRC fails before its term is even read as one."""
    record = records_of(journal)[-1]
    path.write_bytes(flip_term_byte(journal, record, 6))
    huge = record.term ^ (0xFF << 48)
    for current_term in (record.term, None):
        with pytest.raises(JournalCorruptError) as error:
            check_journal(path, current_term=current_term)
        assert error.value.path == str(path)
        assert error.value.position == record.position
        assert (f"Raft index {record.index}: the record at byte {record.position} fails its "
                f"CRC32C (it reads index {record.index}, term {huge})") in str(error.value)


def test_format_1_the_flipped_term_byte_is_refused_naming_file_byte_and_index(
    journal_1: bytes, path: Path
) -> None:
    """Without a record CRC (a journal not converted yet) the term checks refuse it."""
    record = records_of(journal_1)[-1]
    path.write_bytes(flip_term_byte(journal_1, record, 6))
    with pytest.raises(JournalCorruptError) as error:
        check_journal(path, current_term=record.term)
    assert error.value.path == str(path)
    assert error.value.position == record.term_at  # the term field itself
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
    path.write_bytes(with_records(entries))
    with pytest.raises(JournalCorruptError,
                       match=f"Raft index {index} .* stored current term {current}"):
        check_journal(path, current_term=current)


def test_a_lowered_term_is_refused(journal: bytes, path: Path) -> None:
    entries = entries_of(journal)
    command, index, term = entries[-1]
    assert term > 0 and entries[-2][2] == term
    entries[-1] = (command, index, term - 1)
    path.write_bytes(with_records(entries))
    with pytest.raises(JournalCorruptError, match=f"Raft index {index} has term {term - 1}"):
        check_journal(path, current_term=term)


def test_a_duplicated_or_missing_index_is_refused(journal: bytes, path: Path) -> None:
    entries = entries_of(journal)
    duplicated = [*entries[:4], entries[3], *entries[4:]]
    path.write_bytes(with_records(duplicated))
    with pytest.raises(JournalCorruptError, match=f"Raft index {entries[3][1]} follows"):
        check_journal(path, current_term=entries[-1][2])
    missing = [*entries[:3], *entries[4:]]
    path.write_bytes(with_records(missing))
    with pytest.raises(JournalCorruptError, match=f"Raft index {entries[4][1]} follows"):
        check_journal(path, current_term=entries[-1][2])


def test_format_1_every_bit_flip_in_any_records_term_is_refused(
    journal_1: bytes, path: Path
) -> None:
    """Format 1 has no record CRC; its term checks alone refuse all 64 single-bit flips of the
    term of every record after the first term change (a raised term is above the stored term or
    the next entry's, a lowered one below the previous entry's). Record 2 is left out on
    purpose: its term 1 can become 0, the term of record 1, and only format 2's CRC sees that
    (``test_every_bit_flip_in_any_records_index_or_term_is_refused``)."""
    records = records_of(journal_1)
    current = records[-1].term
    assert records[1].term != records[0].term
    assert all(record.term == current for record in records[1:])
    for record in records[2:]:
        for byte in range(8):
            for bit in range(8):
                path.write_bytes(flip_term_byte(journal_1, record, byte, 1 << bit))
                with pytest.raises(JournalCorruptError, match="term"):
                    check_journal(path, current_term=current)


@pytest.mark.parametrize("fmt", [2, 1])
def test_a_node_refuses_to_start_on_a_term_above_its_stored_term(
    journal: bytes, journal_1: bytes, tmp_path: Path, fmt: int
) -> None:
    data = journal if fmt == 2 else journal_1
    settings = node_settings(tmp_path)
    record = records_of(data)[-1]
    store_term_vote(term_vote_path(settings.journal_path), TermVote(record.term, None))
    settings.journal_path.write_bytes(flip_term_byte(data, record, 6))
    reported_at = record.position if fmt == 2 else record.term_at
    with pytest.raises(JournalCorruptError,
                       match=f"Raft index {record.index}.*at byte {reported_at}"):
        RaftNode(settings)


@pytest.mark.parametrize("where", ["last", "middle"])
@pytest.mark.parametrize("field", ["index", "term", "payload"])
def test_a_flipped_byte_stops_the_node_at_start_naming_file_byte_and_index(
    journal: bytes, tmp_path: Path, where: str, field: str
) -> None:
    """The flipped-byte test, for the index, the term and the payload of the last record
    and of a middle one: the node refuses to start, naming the journal, the record's byte and
    its Raft index, and its journal is left as it was."""
    records = records_of(journal)
    record = records[-1] if where == "last" else records[len(records) // 2]
    assert record in chunkraft_records(journal)
    flipped_at = {"index": record.index_at + 1, "term": record.term_at + 6,
                  "payload": journal.index(b"CRE1", record.command_at) + 30}[field]
    settings = node_settings(tmp_path)
    store_term_vote(term_vote_path(settings.journal_path), TermVote(records[-1].term, None))
    damaged = flip(journal, flipped_at, 0x10)
    settings.journal_path.write_bytes(damaged)
    with pytest.raises(JournalCorruptError) as error:
        RaftNode(settings)
    assert error.value.path == str(settings.journal_path)
    assert error.value.position == record.position
    message = str(error.value)
    assert f"Raft index {record.index}" in message and f"at byte {record.position}" in message
    assert str(settings.journal_path) in message
    assert settings.journal_path.read_bytes() == damaged


def _appended(journal: bytes, command: bytes) -> list[tuple[bytes, int, int]]:
    entries = entries_of(journal)
    _last, index, term = entries[-1]
    return [*entries, (command, index + 1, term)]


def test_a_membership_change_is_an_entry_of_the_log(journal: bytes, path: Path) -> None:
    """``chunkraft quorum add-controller`` writes ``[operation, address]`` (membership.py)."""
    for operation in ("add", "rem"):
        change = bytes([2]) + pickle.dumps([operation, "10.0.0.4:9093"], protocol=2)
        path.write_bytes(with_records(_appended(journal, change)))
        checked = check_journal(path)
        assert checked.entries == len(entries_of(journal)) + 1
        assert checked.chunkraft_entries == PROPOSED


@pytest.mark.parametrize("change", [["add", "10.0.0.4"], ["join", "10.0.0.4:9093"],
                                    ["add", "10.0.0.4:9093", "extra"], ("add", 4)])
def test_a_malformed_membership_change_is_refused(journal: bytes, path: Path,
                                                  change: object) -> None:
    last = entries_of(journal)[-1][1] + 1
    path.write_bytes(with_records(_appended(journal, bytes([2]) + pickle.dumps(change))))
    with pytest.raises(JournalCorruptError, match=f"Raft index {last}"):
        check_journal(path)


def test_a_membership_change_naming_a_class_is_refused(journal: bytes, path: Path) -> None:
    """pysyncobj's own form pickles a TCPNode: never what chunkraft writes, never unpickled."""
    from pysyncobj.node import TCPNode

    node = TCPNode("10.0.0.4:9093")
    command = bytes([2]) + pickle.dumps(["add", node.id, node])
    path.write_bytes(with_records(_appended(journal, command)))
    with pytest.raises(JournalCorruptError, match="refers to pysyncobj"):
        check_journal(path)
