"""A segment's sparse offset index (.index): relative offset -> byte position of a batch.

One entry per ``index.interval.bytes`` of appended data, as Kafka's ``OffsetIndex``: 8 bytes each,
``relative offset int32, position int32``, relative to the segment's base offset. A lookup gives
the position of the last indexed batch at or before an offset; the reader scans forward from
there, at most about one interval. Not thread-safe.
"""

from __future__ import annotations

import bisect
import struct
from pathlib import Path

from chunkraft.broker_agent.storage.index_file import IndexFile

__all__ = ["OffsetIndex"]

_ENTRY = struct.Struct(">ii")


class OffsetIndex(IndexFile):
    """Sparse map from offsets to positions in a segment's .log file."""

    def __init__(self, path: Path, base_offset: int) -> None:
        """Load the index of the segment that starts at ``base_offset``."""
        super().__init__(path, _ENTRY)
        self.base_offset = base_offset

    def append_entry(self, offset: int, position: int) -> None:
        """Index the batch starting at ``position`` whose base offset is ``offset``."""
        self.append(offset - self.base_offset, position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """``(offset, position)`` of the last entry at or before ``offset``, else the file start."""
        i = bisect.bisect_right(self.keys, offset - self.base_offset)
        if i == 0:
            return self.base_offset, 0
        return self.base_offset + self.keys[i - 1], self.values[i - 1]

    def last_entry(self) -> tuple[int, int]:
        """``(offset, position)`` of the last entry, or ``(base_offset, 0)``."""
        if not self.keys:
            return self.base_offset, 0
        return self.base_offset + self.keys[-1], self.values[-1]

    def truncate_to_position(self, position: int) -> None:
        """Drop entries pointing at ``position`` or beyond."""
        self.truncate_entries(bisect.bisect_left(self.values, position))

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries for ``offset`` or beyond."""
        self.truncate_entries(bisect.bisect_left(self.keys, offset - self.base_offset))

    def is_sane(self, file_size: int) -> bool:
        """Whether keys and positions increase strictly and every position lies in the file."""
        keys, values = self.keys, self.values
        for i in range(1, len(keys)):
            if keys[i] <= keys[i - 1] or values[i] <= values[i - 1]:
                return False
        return not values or (values[0] >= 0 and keys[0] >= 0 and values[-1] < file_size)
