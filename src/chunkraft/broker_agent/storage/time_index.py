"""A segment's sparse time index (.timeindex): max timestamp so far -> offset.

As Kafka's ``TimeIndex``: 12-byte entries ``timestamp int64, relative offset int32``, appended
only when the segment's largest timestamp so far grew, so timestamps and offsets both increase.
Looking up a timestamp gives an offset from which a scan finds the first record at or after it.
Not thread-safe.
"""

from __future__ import annotations

import bisect
import struct
from pathlib import Path

from chunkraft.broker_agent.storage.index_file import IndexFile

__all__ = ["TimeIndex"]

_ENTRY = struct.Struct(">qi")


class TimeIndex(IndexFile):
    """Sparse map from timestamps to offsets in one segment."""

    def __init__(self, path: Path, base_offset: int) -> None:
        """Load the time index of the segment that starts at ``base_offset``."""
        super().__init__(path, _ENTRY)
        self.base_offset = base_offset

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add ``(timestamp, offset)`` when the timestamp is larger than the last entry's."""
        if self.keys and timestamp <= self.keys[-1]:
            return
        if self.keys and offset - self.base_offset < self.values[-1]:
            return
        self.append(timestamp, offset - self.base_offset)

    def lookup(self, timestamp: int) -> int:
        """Offset of the last entry whose timestamp is at most ``timestamp``, else the base offset.

        An entry's offset is the batch that first reached that timestamp, so every record before
        it is older than ``timestamp``: a scan for the first record at or after ``timestamp`` can
        start there.
        """
        i = bisect.bisect_right(self.keys, timestamp)
        if i == 0:
            return self.base_offset
        return self.base_offset + self.values[i - 1]

    def last_entry(self) -> tuple[int, int] | None:
        """``(timestamp, offset)`` of the last entry, if any."""
        if not self.keys:
            return None
        return self.keys[-1], self.base_offset + self.values[-1]

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries for ``offset`` or beyond."""
        rel = offset - self.base_offset
        n = len(self.values)
        while n and self.values[n - 1] >= rel:
            n -= 1
        self.truncate_entries(n)
