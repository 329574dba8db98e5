"""CheckedFileJournal: the Raft journal file with every record under one CRC (format 2).

pysyncobj 0.3.17's ``FileJournal`` frames a record as ``u32 size | u64 index | u64 term | command
| u32 size`` with no checksum. chunkraft's CRCs cover only its own payload inside the command, so
a flipped byte in a record's index or term went unseen: once, one flipped term byte made a
follower win an election and overwrite an applied entry elsewhere. This module replaces that
file (``node.py`` hands it to pysyncobj in place of ``FileJournal``) with format 2::

    header  := name[24] "CHUNKRAFT-RAFT-JOURNAL" | u64 first_index | u32 format (2) | u32 zero
               | u64 end | u64 commit_index | u32 crc32c(bytes 0..56)          (60 bytes)
    record  := u32 size | u64 index | u64 term | command | u32 crc32c(size .. command)

little-endian, ``size`` = 16 + the command's length, as in pysyncobj's record; only the trailer
differs: a CRC32C of everything before it, so index, term and payload are checked as a whole.
``end`` is the offset after the last record; bytes after it are ignored. ``first_index`` is
the first record's Raft index (0 with no record), so a record whose CRC fails is named by the
index it should have, even when the flipped byte is in its own index. The u32 at byte 36,
where format 1 keeps its end, is always 0, so a chunkraft of format 1 refuses the file instead
of misreading it. ``commit_index`` is pysyncobj's commit index (format 1 kept it in
``journal.meta``, unchecked: a flipped digit could make a restarted node apply entries that
were never committed).

Writes go through ``os.pwrite``: a record at ``end``, then the header. They are durable after
:meth:`CheckedFileJournal.sync` (``durable_journal.py`` and ``node.py`` decide when). Compaction
(``deleteEntriesTo``) and :func:`convert_format_1` write a whole new file, fsync it, rename it
over the journal and fsync the directory, so a crash leaves the old journal or the new one.

A journal of format 1 (pysyncobj's, written by chunkraft before this module) is converted once
at start by :func:`convert_format_1`, after ``journal_check.py`` has checked it; the two
formats are never mixed in one file, and the running node only reads and writes format 2.
"""

from __future__ import annotations

import logging
import os
import pickle
import struct
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crc32c import crc32c

from chunkraft.errors import JournalCorruptError
from chunkraft.records.files._fsync import fsync_directory

__all__ = [
    "FORMAT",
    "HEADER_SIZE",
    "CheckedFileJournal",
    "JournalRecord",
    "convert_format_1",
    "encode_journal",
    "journal_format",
    "journal_records",
    "read_header",
]

logger = logging.getLogger(__name__)

FORMAT = 2
"""The format this module writes (pysyncobj's own, format 1, is only read, to convert it)."""

_NAME = b"CHUNKRAFT-RAFT-JOURNAL".ljust(24, b"\0")
_HEADER = struct.Struct("<24sQIIQQ")  # name, first index, format, zero, end, commit index
_HEADER_CRC = struct.Struct("<I")
HEADER_SIZE = _HEADER.size + _HEADER_CRC.size
_RECORD_HEAD = struct.Struct("<IQQ")  # size, index, term
_TRAILER = struct.Struct("<I")
_RECORD_OVERHEAD = _RECORD_HEAD.size + _TRAILER.size  # a record's bytes besides its command
_MIN_SIZE = 16  # index and term, with an empty command

# pysyncobj 0.3.x (journal.py): name[24] | version[8] | u32 format (1) | u32 end, then records
# of u32 size | u64 index | u64 term | command | u32 size.
_FORMAT_1_NAME = b"PYSYNCOBJ"
_FORMAT_1_END_AT = 36
_FORMAT_1_FIRST_RECORD = 40


@dataclass(frozen=True, slots=True)
class JournalRecord:
    """One record of a journal file: its byte position, Raft index, term and command."""

    position: int
    index: int
    term: int
    command: bytes


def _encode_header(first_index: int, end: int, commit_index: int) -> bytes:
    head = _HEADER.pack(_NAME, first_index, FORMAT, 0, end, commit_index)
    return head + _HEADER_CRC.pack(crc32c(head))


def _encode_record(command: bytes, index: int, term: int) -> bytes:
    body = _RECORD_HEAD.pack(_MIN_SIZE + len(command), index, term) + command
    return body + _TRAILER.pack(crc32c(body))


def encode_journal(entries: Sequence[tuple[bytes, int, int]], commit_index: int = 1) -> bytes:
    """A whole format-2 journal holding ``entries`` (pysyncobj's (command, index, term))."""
    records = b"".join(_encode_record(command, index, term) for command, index, term in entries)
    first_index = entries[0][1] if entries else 0
    return _encode_header(first_index, HEADER_SIZE + len(records), commit_index) + records


def journal_format(data: bytes, label: str) -> int:
    """1 for pysyncobj's journal, 2 for this module's; JournalCorruptError for anything else."""
    if data[: len(_NAME)] == _NAME:
        return FORMAT
    if data[: len(_FORMAT_1_NAME)] == _FORMAT_1_NAME:
        return 1
    raise JournalCorruptError(
        f"the journal starts with neither chunkraft's name nor pysyncobj's "
        f"({bytes(data[:24])!r})", label, 0)


def read_header(data: bytes, label: str) -> tuple[int, int, int]:
    """(first index, end, commit index) of a format-2 journal; JournalCorruptError if its
    header is bad."""
    if len(data) < HEADER_SIZE:
        raise JournalCorruptError(f"the journal is shorter than its {HEADER_SIZE}-byte header",
                                  label, 0)
    (crc,) = _HEADER_CRC.unpack_from(data, _HEADER.size)
    if crc32c(data[: _HEADER.size]) != crc:
        raise JournalCorruptError("the journal's header fails its CRC32C (its end offset or "
                                  "commit index cannot be trusted)", label, 0)
    _name, first_index, version, _legacy_end, end, commit_index = _HEADER.unpack_from(data, 0)
    if version != FORMAT:
        raise JournalCorruptError(f"journal format {version} is not one this chunkraft reads",
                                  label, 32)
    if not HEADER_SIZE <= end <= len(data):
        raise JournalCorruptError(f"the journal's header says its records end at byte {end}, "
                                  f"the file has {len(data)} bytes", label, 40)
    return first_index, end, commit_index


def _format_2_records(data: bytes, label: str) -> Iterator[JournalRecord]:
    expected, end, _commit_index = read_header(data, label)
    position = HEADER_SIZE
    view = memoryview(data)
    while position < end:
        if position + _RECORD_OVERHEAD > end:
            raise JournalCorruptError("a record's header is cut short by the journal's end",
                                      label, position)
        size, index, term = _RECORD_HEAD.unpack_from(data, position)
        crc_at = position + 4 + size
        if size < _MIN_SIZE or crc_at + 4 > end:
            raise JournalCorruptError(
                f"{_which(index, expected)}: a record of {size} bytes at byte {position} runs "
                "past the journal's end (a damaged size)", label, position)
        (crc,) = _TRAILER.unpack_from(data, crc_at)
        if crc32c(view[position:crc_at]) != crc:
            raise JournalCorruptError(
                f"{_which(index, expected)}: the record at byte {position} fails its CRC32C "
                f"(it reads index {index}, term {term}): a byte of its size, index, term or "
                "command changed after it was written", label, position)
        yield JournalRecord(position, index, term, bytes(view[position + 20 : crc_at]))
        expected = index + 1
        position = crc_at + 4


def _which(stored_index: int, expected: int) -> str:
    """The Raft index a damaged record should have (the header's first index, then one more
    per record), and what its own unchecked index field says if that differs."""
    if stored_index == expected:
        return f"Raft index {expected}"
    return f"Raft index {expected} (stored as {stored_index})"


def _format_1_records(data: bytes, label: str) -> Iterator[JournalRecord]:
    if len(data) < _FORMAT_1_FIRST_RECORD:
        raise JournalCorruptError("the journal is shorter than its header", label, 0)
    (end,) = struct.unpack_from("<I", data, _FORMAT_1_END_AT)
    if not _FORMAT_1_FIRST_RECORD <= end <= len(data):
        raise JournalCorruptError(
            f"the journal's header says its records end at byte {end}, the file has "
            f"{len(data)} bytes", label, _FORMAT_1_END_AT)
    position = _FORMAT_1_FIRST_RECORD
    while position < end:
        if position + 4 > end:
            raise JournalCorruptError("a record's size is cut short", label, position)
        (size,) = struct.unpack_from("<I", data, position)
        record_end = position + 4 + size + 4
        if size < _MIN_SIZE or record_end > end:
            raise JournalCorruptError(f"a record of {size} bytes runs past the journal's end",
                                      label, position)
        (trailer,) = struct.unpack_from("<I", data, position + 4 + size)
        if trailer != size:
            raise JournalCorruptError("a record's trailing size differs from its leading one",
                                      label, position)
        index, term = struct.unpack_from("<QQ", data, position + 4)
        yield JournalRecord(position, index, term, data[position + 20 : position + 4 + size])
        position = record_end


def journal_records(data: bytes, label: str) -> Iterator[JournalRecord]:
    """Every record of the journal ``data`` (either format) in order, each framing-checked
    (and, in format 2, CRC-checked) before it is yielded; raises :class:`JournalCorruptError`
    naming ``label``, the byte and the Raft index at the first that is not whole."""
    if journal_format(data, label) == FORMAT:
        return _format_2_records(data, label)
    return _format_1_records(data, label)


def _write_durably(path: Path, content: bytes) -> int:
    """Writes ``content`` to ``path`` through a temporary file (fsynced, renamed, directory
    fsynced); returns a read-write descriptor of the new file."""
    temporary = path.with_name(path.name + ".tmp")
    fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
        os.replace(temporary, path)
        fsync_directory(path.parent)
    except BaseException:
        os.close(fd)
        raise
    return fd


def convert_format_1(path: str | os.PathLike[str]) -> int | None:
    """Rewrites pysyncobj's journal at ``path`` (format 1) in format 2, durably; returns the
    number of records converted, or None if ``path`` is missing or already in format 2.

    Call it after ``journal_check.check_journal`` has accepted the file: framing problems are
    refused here too, but the entries themselves are copied as they are. The commit index is
    set to 1 ("unknown", pysyncobj's own default): format 1 kept it in ``journal.meta``
    without a checksum, and the leader tells every node its commit index again.
    """
    target = Path(path)
    try:
        data = target.read_bytes()
    except FileNotFoundError:
        return None
    if journal_format(data, str(target)) == FORMAT:
        return None
    entries = [(r.command, r.index, r.term) for r in _format_1_records(data, str(target))]
    os.close(_write_durably(target, encode_journal(entries)))
    logger.info("converted the Raft journal %s from pysyncobj's format (1, no record CRC) to "
                "chunkraft's format %d: %d records, each under its own CRC32C", target, FORMAT,
                len(entries))
    return len(entries)


class CheckedFileJournal:
    """pysyncobj's journal interface on a format-2 file; see the module doc.

    Opening reads and checks the whole file (:class:`JournalCorruptError` naming the file, byte
    and index); a missing or empty file is created with its header, fsynced with its directory.
    Term and vote are kept in memory and in pysyncobj's ``journal.meta`` as pysyncobj does;
    ``durable_journal.DurableJournal`` stores the ones Raft relies on.

    Used from pysyncobj's tick thread, except :meth:`sync`, which any thread may call.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = Path(path)
        self._lock = threading.Lock()  # guards the descriptor against a sync in another thread
        self._path.with_name(self._path.name + ".tmp").unlink(missing_ok=True)
        if not self._path.exists() or self._path.stat().st_size == 0:
            self._fd = _write_durably(self._path, encode_journal([]))
            data = encode_journal([])
        else:
            data = self._path.read_bytes()
            self._fd = os.open(self._path, os.O_RDWR)
        try:
            _first, self._end, self._commit_index = read_header(data, str(self._path))
            self._entries: list[tuple[bytes, int, int]] = [
                (r.command, r.index, r.term) for r in _format_2_records(data, str(self._path))]
        except BaseException:
            os.close(self._fd)
            raise
        self._meta_path = Path(f"{self._path}.meta")
        self._term = 0
        self._voted_for: Any = None

    # ------------------------------------------------------------ the log

    def add(self, command: bytes, index: int, term: int) -> None:
        # As pysyncobj's FileJournal: a str command (never one of ours) is stored as UTF-8.
        command = command.encode() if isinstance(command, str) else bytes(command)
        record = _encode_record(command, index, term)
        os.pwrite(self._fd, record, self._end)
        self._end += len(record)
        self._entries.append((command, index, term))
        self._write_header()

    def clear(self) -> None:
        self._entries = []
        self._end = HEADER_SIZE
        self._write_header()

    def deleteEntriesFrom(self, entryFrom: int) -> None:  # pysyncobj's names
        removed = self._entries[entryFrom:]
        del self._entries[entryFrom:]
        self._end -= sum(_RECORD_OVERHEAD + len(command) for command, _, _ in removed)
        self._write_header()

    def deleteEntriesTo(self, entryTo: int) -> None:
        """Compaction: the entries from ``entryTo`` on, in a new file renamed over the old."""
        kept = self._entries[entryTo:]
        content = encode_journal(kept, self._commit_index)
        fd = _write_durably(self._path, content)
        with self._lock:
            os.close(self._fd)
            self._fd = fd
        self._entries = kept
        self._end = len(content)

    def __getitem__(self, item: Any) -> Any:
        return self._entries[item]

    def __len__(self) -> int:
        return len(self._entries)

    def _write_header(self) -> None:
        first_index = self._entries[0][1] if self._entries else 0
        os.pwrite(self._fd, _encode_header(first_index, self._end, self._commit_index), 0)

    def sync(self, fdatasync: Callable[[int], None] = os.fdatasync) -> None:
        """Makes every write so far durable (thread-safe)."""
        with self._lock:
            if self._fd >= 0:
                fdatasync(self._fd)

    def _destroy(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def flush(self) -> None:
        self.sync()

    # ------------------------------------------------------------ pysyncobj's metadata

    def setRaftCommitIndex(self, raftCommitIndex: int) -> None:
        if raftCommitIndex != self._commit_index:
            self._commit_index = int(raftCommitIndex)
            self._write_header()

    def getRaftCommitIndex(self) -> int:
        return self._commit_index

    def setCurrentTerm(self, term: int, votedForNodeId: Any) -> None:
        self._term, self._voted_for = term, votedForNodeId
        # What pysyncobj's FileJournal stores (a chunkraft without journal.term reads it).
        temporary = self._meta_path.with_name(self._meta_path.name + ".tmp")
        temporary.write_bytes(pickle.dumps({"currentTerm": term,
                                            "votedForNodeId": votedForNodeId}, protocol=2))
        os.replace(temporary, self._meta_path)

    def getCurrentTerm(self) -> int:
        return self._term

    def getVotedForNodeId(self) -> Any:
        return self._voted_for

    def onOneSecondTimer(self) -> None:
        pass
