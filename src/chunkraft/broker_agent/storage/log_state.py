"""The state every part of a partition replica's log shares: its segments, offsets and files.

:class:`LogState` holds the segments, the offsets (log start, LEO, high watermark, recovery point),
the epoch cache and producer state, and the steps the other parts build on: rolling a segment,
checkpointing, flushing and closing. Recovery (``log_recovery``), truncation and retention
(``log_truncation``), reads (``log_reads``) and appends (``unified_log``) each add their methods
in a subclass; :class:`~chunkraft.broker_agent.storage.unified_log.UnifiedLog` is all of them.

The names of the files a partition directory holds besides its segments are declared here once.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

from chunkraft.broker_agent.storage.checkpoint import (
    fsync_dir,
    write_atomic_at,
    write_offset,
)
from chunkraft.broker_agent.storage.config import LogConfig, SegmentInfo
from chunkraft.broker_agent.storage.leader_epoch import LeaderEpochCache
from chunkraft.broker_agent.storage.producer_state import ProducerEntry, ProducerStateManager
from chunkraft.broker_agent.storage.segment import MAX_RELATIVE_OFFSET, LogSegment

__all__ = [
    "HIGH_WATERMARK_CHECKPOINT",
    "LEADER_EPOCH_CHECKPOINT",
    "LOG_START_CHECKPOINT",
    "PARTITION_METADATA",
    "RECOVERY_POINT_CHECKPOINT",
    "LogState",
]

PARTITION_METADATA = "partition.metadata"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset"
HIGH_WATERMARK_CHECKPOINT = "high-watermark"
RECOVERY_POINT_CHECKPOINT = "recovery-point"


class LogState:
    """One partition replica's segments and offsets, and the steps that keep them on disk.

    Offsets: ``log_start_offset`` is the first readable offset, ``log_end_offset`` (LEO) the next
    offset to write, ``high_watermark`` the first not yet replicated to the ISR, all exclusive
    upper bounds as in Kafka. The base of :class:`UnifiedLog`, not used alone: open a log with
    ``UnifiedLog.open``; the constructor is private. Not thread-safe.
    """

    def __init__(
        self,
        directory: Path,
        topic_id: uuid.UUID,
        config: LogConfig,
        clock: Callable[[], int],
    ) -> None:
        self.dir = directory
        self.topic_id = topic_id
        self.config = config
        self._clock = clock
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        self.log_start_offset = 0
        self.high_watermark = 0
        self._hw_checkpointed = -1
        self._recovery_point = 0
        self.epoch_cache = LeaderEpochCache(directory / LEADER_EPOCH_CHECKPOINT)
        self.producers = ProducerStateManager(directory)
        self._unflushed_messages = 0
        self._last_flush_ms = clock()
        self._closed = False

    # ================================================================== offsets

    @property
    def log_end_offset(self) -> int:
        """The next offset to be written (exclusive end of the log)."""
        return self._segments[-1].next_offset

    @property
    def latest_epoch(self) -> int:
        """The newest leader epoch in the epoch cache, -1 when none."""
        return self.epoch_cache.latest_epoch

    def first_unstable_offset(self) -> int | None:
        """First offset of the oldest open (or not yet replicated) transaction, if any."""
        return self.producers.first_unstable_offset()

    @property
    def last_stable_offset(self) -> int:
        """``min(first unstable offset, high watermark)``: read_committed consumers stop here."""
        first = self.producers.first_unstable_offset()
        return self.high_watermark if first is None else min(first, self.high_watermark)

    def _clamp(self, offset: int) -> int:
        return min(max(offset, self.log_start_offset), self.log_end_offset)

    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark, clamped to ``[log_start_offset, LEO]``; returns it."""
        self.high_watermark = self._clamp(offset)
        self.producers.on_high_watermark(self.high_watermark)
        return self.high_watermark

    def checkpoint_high_watermark(self) -> None:
        """Persist the high watermark (atomically) when it changed since the last call."""
        if self.high_watermark != self._hw_checkpointed:
            write_offset(self.dir / HIGH_WATERMARK_CHECKPOINT, self.high_watermark)
            self._hw_checkpointed = self.high_watermark

    def high_watermark_checkpoint_due(self) -> int | None:
        """The high watermark to persist, or None when the checkpoint holds it (or the log is
        closed). With :meth:`write_high_watermark_at` and
        :meth:`high_watermark_checkpointed`, the checkpoint of
        :meth:`checkpoint_high_watermark` in three steps, so the file I/O can run off the event
        loop: the value is read on the loop, written anywhere, and recorded on the loop."""
        if self._closed or self.high_watermark == self._hw_checkpointed:
            return None
        return self.high_watermark

    @staticmethod
    def write_high_watermark_at(dir_fd: int, value: int) -> None:
        """Writes a high-watermark checkpoint of ``value`` into the log directory open as
        ``dir_fd``; touches no state of the log, so any thread may call it (one at a time per
        directory)."""
        write_atomic_at(dir_fd, HIGH_WATERMARK_CHECKPOINT, f"{value}\n")

    def high_watermark_checkpointed(self, value: int) -> None:
        """Records that the checkpoint now holds ``value`` (call on the log's thread)."""
        if not self._closed:
            self._hw_checkpointed = value

    def maybe_assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        """Record that ``leader_epoch`` starts at ``start_offset`` (a new leader calls this)."""
        self.epoch_cache.assign(leader_epoch, start_offset)

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """``(epoch, end offset)`` with Kafka's ``LeaderEpochFileCache.endOffsetFor`` meaning."""
        return self.epoch_cache.end_offset_for(leader_epoch, self.log_end_offset)

    def producer_state(self, producer_id: int) -> ProducerEntry | None:
        """The producer's entry (live object: do not change it), or None."""
        return self.producers.entries.get(producer_id)

    @property
    def size_in_bytes(self) -> int:
        """Bytes of all segment .log files."""
        return sum(s.size for s in self._segments)

    @property
    def segments(self) -> list[SegmentInfo]:
        """The segments, oldest first."""
        return [
            SegmentInfo(s.base_offset, s.next_offset, s.size, s.max_timestamp)
            for s in self._segments
        ]

    # ================================================================== appending
    # ================================================================== segments

    def _append_segment(self, segment: LogSegment) -> None:
        self._segments.append(segment)
        self._bases.append(segment.base_offset)

    def _maybe_roll(self, first_offset: int, last_offset: int, size: int, max_ts: int) -> None:
        """Start a new segment when the batches would not fit or would start after a gap."""
        active = self._segments[-1]
        if active.size == 0:
            if first_offset != active.base_offset:
                # An empty segment at the wrong base (a gap, or a fresh log): replace it.
                self._replace_empty_active(first_offset)
            return
        config = self.config
        first_ts = active.first_batch_timestamp
        if (
            first_offset > active.next_offset
            or active.size + size > config.segment_bytes
            or last_offset - active.base_offset > MAX_RELATIVE_OFFSET
            or (first_ts is not None and max_ts - first_ts > config.segment_ms)
        ):
            self._roll(first_offset)

    def _replace_empty_active(self, base: int) -> None:
        old = self._segments.pop()
        self._bases.pop()
        old.delete()
        self._append_segment(LogSegment(self.dir, base, self.config.index_interval_bytes))
        if len(self._segments) == 1 and base > self.log_start_offset:
            # An empty log written from ``base`` on holds nothing below it (a reopen agrees).
            self.log_start_offset = base
            write_offset(self.dir / LOG_START_CHECKPOINT, base)
            self.high_watermark = max(self.high_watermark, base)

    def _roll(self, new_base: int) -> None:
        old = self._segments[-1]
        old.on_become_inactive()
        self._append_segment(LogSegment(self.dir, new_base, self.config.index_interval_bytes))
        # The old segment is durable: snapshot the producer state where the new one begins and
        # move the recovery point, so a restart checks only the new segment.
        self.producers.take_snapshot(new_base)
        self._set_recovery_point(new_base)

    def roll(self) -> None:
        """Close the active segment now; the next append starts a new one at the LEO.

        Called on chunk stop, so a chunk's data lines up with segment boundaries. A no-op when
        the active segment is empty.
        """
        if self._segments[-1].size:
            self._roll(self.log_end_offset)

    def _after_append(self, records: int, now: int) -> None:
        self._unflushed_messages += records
        if self._unflushed_messages >= self.config.flush_interval_messages:
            self.flush(now)

    # ================================================================== flushing and closing

    def _set_recovery_point(self, offset: int) -> None:
        if offset != self._recovery_point:
            write_offset(self.dir / RECOVERY_POINT_CHECKPOINT, offset)
            self._recovery_point = offset

    def flush(self, now_ms: int | None = None) -> None:
        """fsync the data and indexes of every segment, then move the recovery point to LEO."""
        for segment in self._segments:
            segment.flush()
        self._set_recovery_point(self.log_end_offset)
        self._unflushed_messages = 0
        self._last_flush_ms = self._clock() if now_ms is None else now_ms

    def maybe_flush(self, now_ms: int | None = None) -> bool:
        """Flush when ``flush_interval_messages`` or ``flush_interval_ms`` says so."""
        now = self._clock() if now_ms is None else now_ms
        if self._unflushed_messages and (
            self._unflushed_messages >= self.config.flush_interval_messages
            or now - self._last_flush_ms >= self.config.flush_interval_ms
        ):
            self.flush(now)
            return True
        return False

    def close(self) -> None:
        """Flush, snapshot producer state at the LEO, checkpoint, close the files."""
        if self._closed:
            return
        self.flush()
        self.producers.take_snapshot(self.log_end_offset)
        self.checkpoint_high_watermark()
        for segment in self._segments:
            segment.close()
        self._closed = True

    def close_files(self) -> None:
        """Close the files without flushing (the log is about to be deleted)."""
        for segment in self._segments:
            segment.close_without_flush()
        self._closed = True

    def delete(self) -> None:
        """Close the files without flushing and remove the whole directory."""
        self.close_files()
        shutil.rmtree(self.dir, ignore_errors=True)
        parent = self.dir.parent
        if parent.exists():
            fsync_dir(parent)
