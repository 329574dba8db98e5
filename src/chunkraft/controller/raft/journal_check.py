"""Checks the Raft journal and dump before a node starts on them.

Every journal record carries a CRC32C over its size, index, term and command
(``checked_journal.py``, format 2); a record that fails it is refused before anything else is
read from it. The CRC says the record is as written, not that what was written makes sense, so
the node also checks the log as a whole: every record whole, with consecutive indexes and terms
that never decrease; every command pysyncobj's one-byte no-op or a regular command that
unpickles to a call of our one entry point with plain data only (no class is ever loaded), and
every chunkraft entry passing its own CRCs; the dump whole with its header and batch CRCs good.
chunkraft never writes membership or code-version commands (dynamic membership is off), so
those are refused too: a command pysyncobj would skip must not hide an entry. A journal still in
pysyncobj's format 1 (no record CRC) gets every check but the CRC, then is converted.

Terms get two more checks (a flipped term byte once reached a quorum), which hold whatever the
CRC says (a format-1 journal has none, and a bug could write a bad term under a good CRC).
pysyncobj starts with ``currentTerm = max(stored term, last entry's term)``, so one flipped byte
in the last record's term made a follower's log look the most up to date: it won the next
election, overwrote an applied entry elsewhere, and pushed the quorum to a term no epoch field
can hold. A node only ever appends entries of a term it has first stored as its current term
(``DurableJournal.setCurrentTerm`` is durable before the entry arrives), so an entry whose term
exceeds the stored current term (``journal.term``) is damage, as is any term above
:data:`~.entry.MAX_EPOCH`.

Anything else stops the start with a report naming the file, the byte and the Raft index.
"""

from __future__ import annotations

import codecs
import io
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chunkraft.controller.raft.checked_journal import journal_records
from chunkraft.controller.raft.dump import read_dump_header
from chunkraft.controller.raft.entry import MAX_EPOCH, decode_entry
from chunkraft.controller.raft.membership import (
    MEMBERSHIP_COMMAND_TYPE,
    OPERATIONS,
    check_raft_address,
)
from chunkraft.errors import ChunkraftError, JournalCorruptError, LogFileError, SnapshotError
from chunkraft.records.files import read_embedded_snapshot_batches

__all__ = ["JournalCheck", "check_dump", "check_journal"]

# Both journal formats start a record with u32 size | u64 index | u64 term (checked_journal.py).
_TERM_AT = 12
_REGULAR_COMMAND = 0
_NO_OP_COMMAND = b"\x01"
# pysyncobj numbers replicated methods by their sorted names; chunkraft has exactly one.
_ENTRY_POINT_ID = 0


class _DataOnlyUnpickler(pickle.Unpickler):
    """Unpickles tuples, bytes, numbers and strings only: a command naming any class is bad.

    pysyncobj pickles with protocol 2, which spells bytes as ``_codecs.encode(text, "latin1")``;
    that one function is harmless and is the only one allowed.
    """

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("_codecs", "encode"):
            return codecs.encode
        raise pickle.UnpicklingError(f"a journal command refers to {module}.{name}")


@dataclass(frozen=True, slots=True)
class JournalCheck:
    """What a journal holds: its entries and the chunkraft entries among them."""

    entries: int
    chunkraft_entries: int
    first_index: int
    last_index: int


def _payload_of(command: bytes) -> bytes | None:
    """Our entry payload inside a regular pysyncobj command, or None for pysyncobj's no-op
    and for a membership change (checked here: ``[operation, "host:port"]``, ``membership.py``)."""
    if command == _NO_OP_COMMAND:
        return None
    if command[:1] == bytes([MEMBERSHIP_COMMAND_TYPE]):
        change = _DataOnlyUnpickler(io.BytesIO(command[1:])).load()
        if not (isinstance(change, list) and len(change) == 2 and change[0] in OPERATIONS
                and isinstance(change[1], str)):
            raise pickle.UnpicklingError(f"a command of type 02 (a membership change) holds "
                                         f"{type(change).__name__}, not [operation, address]")
        check_raft_address(change[1])
        return None
    if not command or command[0] != _REGULAR_COMMAND:
        # pysyncobj skips a no-op or an unknown type whatever follows: never let one pass.
        raise ValueError(f"a command of type {command[:1].hex() or 'none'} ({len(command)} "
                         "bytes) is not one chunkraft writes")
    decoded = _DataOnlyUnpickler(io.BytesIO(command[1:])).load()
    # (method id, (payload,)): our one entry point takes the payload as its only argument.
    if (isinstance(decoded, tuple) and len(decoded) == 2 and type(decoded[0]) is int
            and decoded[0] == _ENTRY_POINT_ID and isinstance(decoded[1], tuple)
            and len(decoded[1]) == 1 and isinstance(decoded[1][0], bytes)):
        return decoded[1][0]
    raise pickle.UnpicklingError(f"unexpected command shape {type(decoded).__name__}")


def check_journal(path: str | os.PathLike[str], current_term: int | None = None
                  ) -> JournalCheck:
    """Reads the whole journal at ``path`` (format 2, or pysyncobj's format 1 before its
    conversion); raises :class:`JournalCorruptError` at the first record that is torn, fails
    its record CRC (format 2), is out of order, fails a chunkraft CRC, has a term above
    :data:`~.entry.MAX_EPOCH` or (when given) above ``current_term``, the node's stored term."""
    label = str(path)
    highest = MAX_EPOCH if current_term is None else min(current_term, MAX_EPOCH)
    entries = ours = 0
    first = last = -1
    last_term = 0
    for record in journal_records(Path(path).read_bytes(), label):
        position, index, term = record.position, record.index, record.term
        if last != -1 and index != last + 1:
            raise JournalCorruptError(f"Raft index {index} follows index {last}", label, position)
        if term > highest:
            # Byte of the term field itself, so the report points at what changed.
            raise JournalCorruptError(
                f"Raft index {index} (the record at byte {position}) has term {term}, above "
                + (f"the largest term an epoch can hold ({MAX_EPOCH})" if term > MAX_EPOCH
                   else f"this node's stored current term {current_term} (journal.term)")
                + ": a damaged term would make this node's log look newer than it is",
                label, position + _TERM_AT)
        if term < last_term:
            raise JournalCorruptError(f"Raft index {index} has term {term}, below the term "
                                      f"{last_term} of the entry before it", label, position)
        try:
            payload = _payload_of(record.command)
            if payload is not None:
                decode_entry(payload)
                ours += 1
        except Exception as error:
            # A garbled pickle raises almost anything (KeyError for a bad memo index, TypeError,
            # LookupError, OverflowError, MemoryError for an absurd length): all mean corrupt.
            raise JournalCorruptError(f"Raft index {index}: {error!r}", label, position) from error
        if first == -1:
            first = index
        last = index
        last_term = term
        entries += 1
    return JournalCheck(entries, ours, first, last)


def check_dump(path: str | os.PathLike[str]) -> None:
    """Checks the dump at ``path`` whole without building its image (the load does that next):
    header CRC, then every batch's CRC, offsets, epoch, cluster id and the end marker.

    Raises :class:`JournalCorruptError` if it is bad.
    """
    try:
        header = read_dump_header(path)
        for batch in read_embedded_snapshot_batches(
                Path(path), start=header.snapshot_start, epoch=header.epoch):
            if batch.cluster_id != header.cluster_id:
                raise SnapshotError(
                    f"snapshot batch of cluster {batch.cluster_id} in a dump of cluster "
                    f"{header.cluster_id}", str(path), batch.position)
    except (ChunkraftError, OSError) as error:
        if isinstance(error, LogFileError):  # its message already names the file and byte
            raise JournalCorruptError(f"the Raft dump is unusable: {error.message}", error.path,
                                      error.position) from error
        raise JournalCorruptError(f"the Raft dump is unusable: {error}", str(path), 0) from error
