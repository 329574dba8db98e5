"""Reading a partition replica's log: whole batches across segments and gaps, aborted
transactions for read_committed, and the offset of a timestamp (ListOffsets).
"""

from __future__ import annotations

import bisect

from chunkraft.broker_agent.storage.config import AbortedTransaction, ReadResult
from chunkraft.broker_agent.storage.errors import OffsetOutOfRangeError
from chunkraft.broker_agent.storage.log_state import LogState
from chunkraft.dataplane.record_batch import decode_records

__all__ = ["LogReads"]


class LogReads(LogState):
    """:class:`LogState` plus the reads; none of them changes the log. Not thread-safe."""

    def _check_readable(self, offset: int) -> None:
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(offset, self.log_start_offset, self.log_end_offset)

    def _segment_index(self, offset: int) -> int:
        """Index of the segment holding ``offset``, or of the first after it (0 at least)."""
        return max(bisect.bisect_right(self._bases, offset) - 1, 0)

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset_exclusive: int,
        *,
        min_one_batch: bool = True,
    ) -> ReadResult:
        """Whole batches from the one holding ``start_offset``, as stored on disk.

        Batches are returned while their last offset is below ``max_offset_exclusive`` and the
        total stays within ``max_bytes``; with ``min_one_batch`` the first qualifying batch is
        returned whatever its size. A start inside a batch returns that whole batch (its base may
        be below the start); a start in a gap continues at the next segment; reads may cross
        segments. Raises OffsetOutOfRangeError for a start below the log start or above the LEO.
        """
        self._check_readable(start_offset)
        parts: list[bytes] = []
        total = 0
        first = -1
        next_offset = start_offset
        segments = self._segments
        i = self._segment_index(start_offset)
        while i < len(segments):
            segment = segments[i]
            start = max(start_offset, segment.base_offset)
            if start >= segment.next_offset:
                i += 1
                continue
            got = segment.read(
                start, max_bytes - total, max_offset_exclusive, min_one_batch and not parts
            )
            if got is None:
                break
            data, got_first, got_next = got
            parts.append(data)
            if first < 0:
                first = got_first
            next_offset = got_next
            total += len(data)
            if (
                total >= max_bytes
                or got_next >= max_offset_exclusive
                or got_next < segment.next_offset
            ):
                break
            i += 1
        if not parts:
            return ReadResult(b"", start_offset, start_offset)
        return ReadResult(parts[0] if len(parts) == 1 else b"".join(parts), first, next_offset)

    def aborted_transactions(
        self, start_offset: int, upper_offset: int
    ) -> list[AbortedTransaction]:
        """Aborted transactions whose range meets ``[start_offset, upper_offset)``.

        A read_committed fetch of ``start_offset`` up to ``upper_offset`` (its LSO) needs these to
        drop aborted records; markers may lie beyond ``upper_offset``.
        """
        out: list[AbortedTransaction] = []
        for segment in self._segments[self._segment_index(start_offset) :]:
            for t in segment.txn_index.collect(start_offset, upper_offset):
                out.append(AbortedTransaction(t.producer_id, t.first_offset))
        return out

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record at or after ``timestamp``, or None.

        Kafka's ListOffsets by timestamp: records below the log start offset are skipped.
        """
        for segment in self._segments:
            if segment.max_timestamp < timestamp or segment.next_offset <= self.log_start_offset:
                continue
            start = max(segment.time_index.lookup(timestamp), self.log_start_offset)
            for header, view in segment.iter_headers(start):
                if header.max_timestamp < timestamp or header.is_control:
                    continue
                for record in decode_records(view):
                    if record.timestamp >= timestamp and record.offset >= self.log_start_offset:
                        return record.offset, record.timestamp
        return None

    def max_timestamp_record(self, upper_offset: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record with the largest timestamp below
        ``upper_offset`` (and at or above the log start), or None: ListOffsets' MAX_TIMESTAMP.
        Segments and batches whose maximum cannot beat the best so far are skipped unread."""
        best: tuple[int, int] | None = None
        for segment in self._segments:
            if (segment.next_offset <= self.log_start_offset
                    or segment.base_offset >= upper_offset
                    or (best is not None and segment.max_timestamp <= best[1])):
                continue
            start = max(segment.base_offset, self.log_start_offset)
            for header, view in segment.iter_headers(start):
                if header.base_offset >= upper_offset:
                    break
                if header.is_control or (best is not None and header.max_timestamp <= best[1]):
                    continue
                for record in decode_records(view):
                    if (self.log_start_offset <= record.offset < upper_offset
                            and (best is None or record.timestamp > best[1])):
                        best = (record.offset, record.timestamp)
        return best
