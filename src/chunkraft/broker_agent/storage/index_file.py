"""The shared mechanics of a segment's sparse index files (.index, .timeindex).

An index is a sorted list of fixed-size big-endian entries kept in memory; the file is a copy of
the list written at :meth:`IndexFile.flush` (segment roll, log flush, close). Entries not yet
flushed are lost in a crash, which is fine: recovery rebuilds the index of everything past the
log's recovery point from the batches themselves, and a flush always writes the index before the
recovery point moves. Not thread-safe.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

__all__ = ["IndexFile"]


class IndexFile:
    """Sorted ``(key, value)`` integer entries persisted as ``struct`` records in ``path``."""

    def __init__(self, path: Path, entry: struct.Struct) -> None:
        """Load ``path`` if it exists; a torn trailing partial entry is ignored."""
        self.path = path
        self._entry = entry
        self.keys: list[int] = []
        self.values: list[int] = []
        self._persisted = 0  # entries the file holds, all equal to the first ones in memory
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            data = b""
        whole = len(data) - len(data) % entry.size
        for key, value in entry.iter_unpack(data[:whole]):
            self.keys.append(key)
            self.values.append(value)
        self._persisted = len(self.keys)
        if whole != len(data):
            self._persisted = -1  # the file must be rewritten: it ends with a partial entry

    def __len__(self) -> int:
        return len(self.keys)

    def append(self, key: int, value: int) -> None:
        """Add an entry after the last one (the caller keeps keys increasing)."""
        self.keys.append(key)
        self.values.append(value)

    def truncate_entries(self, count: int) -> None:
        """Keep only the first ``count`` entries."""
        if count >= len(self.keys):
            return
        del self.keys[count:]
        del self.values[count:]
        if self._persisted > count:
            self._persisted = -1

    def is_dirty(self) -> bool:
        """Whether the file differs from the entries in memory."""
        return self._persisted != len(self.keys)

    def flush(self) -> None:
        """Write the entries the file lacks (rewriting it after a truncation) and fsync."""
        if self._persisted == len(self.keys):
            return  # an index with no entries needs no file: a missing file loads empty
        pack = self._entry.pack
        if self._persisted < 0:
            start = 0
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        else:
            start = self._persisted
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
        pairs = zip(self.keys[start:], self.values[start:], strict=True)
        data = b"".join(pack(k, v) for k, v in pairs)
        fd = os.open(self.path, flags, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        self._persisted = len(self.keys)

    def reset(self) -> None:
        """Drop every entry (the index is about to be rebuilt)."""
        self.keys.clear()
        self.values.clear()
        self._persisted = -1

    def delete(self) -> None:
        """Remove the file."""
        self.path.unlink(missing_ok=True)
