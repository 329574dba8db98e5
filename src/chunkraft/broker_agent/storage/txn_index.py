"""A segment's aborted-transaction index (.txnindex).

One 24-byte entry ``producer_id int64, first_offset int64, last_offset int64`` per aborted
transaction whose ABORT marker (at ``last_offset``) lies in the segment, in marker order, as
Kafka's ``TransactionIndex``. Entries live in memory and reach the file at :meth:`TxnIndex.flush`;
recovery regenerates those past the producer-state snapshot it starts from, so unflushed entries
are never needed after a crash. Not thread-safe.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import NamedTuple

__all__ = ["AbortedTxn", "TxnIndex"]

_ENTRY = struct.Struct(">qqq")


class AbortedTxn(NamedTuple):
    """An aborted transaction: its producer, first data offset and ABORT marker offset."""

    producer_id: int
    first_offset: int
    last_offset: int


class TxnIndex:
    """The aborted transactions whose markers are in one segment."""

    def __init__(self, path: Path) -> None:
        """Load ``path`` if it exists, ignoring a torn trailing partial entry."""
        self.path = path
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            data = b""
        whole = len(data) - len(data) % _ENTRY.size
        self.entries: list[AbortedTxn] = [AbortedTxn(*e) for e in _ENTRY.iter_unpack(data[:whole])]
        self._persisted = len(self.entries) if whole == len(data) else -1

    def append(self, txn: AbortedTxn) -> None:
        """Add an entry (markers are appended in offset order)."""
        self.entries.append(txn)

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries whose marker is at ``offset`` or beyond."""
        n = len(self.entries)
        while n and self.entries[n - 1].last_offset >= offset:
            n -= 1
        if n < len(self.entries):
            del self.entries[n:]
            if self._persisted > n:
                self._persisted = -1

    def collect(self, start_offset: int, upper_offset: int) -> list[AbortedTxn]:
        """Entries whose range ``[first, last]`` meets ``[start_offset, upper_offset)``."""
        return [
            t
            for t in self.entries
            if t.last_offset >= start_offset and t.first_offset < upper_offset
        ]

    def flush(self) -> None:
        """Write what the file lacks (rewriting it after a truncation) and fsync."""
        if self._persisted == len(self.entries):
            return  # a segment without aborted transactions needs no file at all
        if self._persisted < 0:
            start, flags = 0, os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        else:
            start, flags = self._persisted, os.O_WRONLY | os.O_CREAT | os.O_APPEND
        data = b"".join(_ENTRY.pack(*t) for t in self.entries[start:])
        fd = os.open(self.path, flags, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        self._persisted = len(self.entries)

    def delete(self) -> None:
        """Remove the file."""
        self.path.unlink(missing_ok=True)
