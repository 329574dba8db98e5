"""Moving a partition replica's log bounds: truncation, chunk range deletion, retention, gaps.

Every operation here drops data or offsets and keeps the epoch cache, the producer state, the
checkpoints and the high watermark consistent with what is left.
"""

from __future__ import annotations

from chunkraft.broker_agent.storage.checkpoint import fsync_dir, write_offset
from chunkraft.broker_agent.storage.log_recovery import LogRecovery
from chunkraft.broker_agent.storage.log_state import LOG_START_CHECKPOINT
from chunkraft.broker_agent.storage.segment import LogSegment

__all__ = ["LogTruncation"]


class LogTruncation(LogRecovery):
    """:class:`LogRecovery` plus truncation (a follower's, or a replica emptied for a chunk),
    deletion of a chunk's offset range, retention by time and size, and starting past a gap.
    Not thread-safe."""

    def start_at(self, offset: int) -> None:
        """Make ``offset`` the next offset, leaving a gap above the LEO for offsets that live in
        chunks held elsewhere; nothing happens when the LEO is already at or past it.

        An empty log restarts at ``offset``; a log holding older chunks gets an empty active
        segment based at ``offset`` (the same steps a follower append takes for a gap) and
        forgets its producers' state, which the chunks in the gap carried on.
        """
        if self.log_end_offset >= offset:
            return
        if self.log_end_offset == self.log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return
        self.roll()
        self._replace_empty_active(offset)
        # What producers wrote below the gap went on in chunks held elsewhere (later sequences,
        # the markers of their transactions): start their state afresh, as a new replica does,
        # or this log would refuse their next sequence and keep its LSO at an old transaction.
        self.producers.clear()
        self.producers.take_snapshot(offset)
        self._set_recovery_point(offset)

    # ================================================================== truncation and deletion

    def truncate_to(self, offset: int) -> bool:
        """Drop every batch whose last offset is >= ``offset``; returns whether anything changed.

        A batch holding ``offset`` goes whole. Below the log start the log is emptied and starts
        at ``offset``. The epoch cache, producer state (replayed from a snapshot at or below the
        new end) and aborted-transaction index follow; the high watermark is lowered if needed.
        """
        if offset >= self.log_end_offset:
            return False
        if offset < self.log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        while len(self._segments) > 1 and self._segments[-1].base_offset >= offset:
            self._segments.pop().delete()
            self._bases.pop()
        last = self._segments[-1]
        if last.base_offset >= offset:
            # Only the first segment is left and all of it goes: start empty where it began.
            self._replace_empty_active(offset)
        else:
            last.truncate_to(offset)
        leo = self.log_end_offset
        self.epoch_cache.truncate_from_end(leo)
        self.producers.delete_snapshots_above(leo)
        self._rebuild_producer_state()
        self.high_watermark = min(self.high_watermark, leo)
        self.producers.on_high_watermark(self.high_watermark)
        if self._recovery_point > leo:
            self._set_recovery_point(leo)
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Empty the log; its log start, LEO and high watermark all become ``offset``.

        For a new replica of a chunk that starts at ``offset``. Producer state, snapshots and the
        epoch cache are cleared.
        """
        for segment in self._segments:
            segment.delete()
        self._segments.clear()
        self._bases.clear()
        self._append_segment(LogSegment(self.dir, offset, self.config.index_interval_bytes))
        self.epoch_cache.clear()
        self.producers.clear()
        self.producers.delete_all_snapshots()
        self.log_start_offset = offset
        write_offset(self.dir / LOG_START_CHECKPOINT, offset)
        self.high_watermark = offset
        self._set_recovery_point(offset)

    def delete_range(self, first: int, last: int) -> int:
        """Delete a chunk's data ``[first, last]`` (inclusive); returns bytes deleted.

        Removes the segments entirely inside the range (rolling first when that includes the
        active segment). When the range starts at or below the log start, the log start moves
        past ``last``; segments straddling it stay but are unreadable below it. A range reaching
        the LEO empties the log at ``last + 1``.
        """
        if first <= self.log_start_offset and last + 1 >= self.log_end_offset:
            removed = self.size_in_bytes
            self.truncate_fully_and_start_at(last + 1)
            return removed
        active = self._segments[-1]
        if active.size and active.base_offset >= first and active.next_offset <= last + 1:
            self._roll(self.log_end_offset)
        removed = 0
        keep: list[LogSegment] = []
        for segment in self._segments[:-1]:
            if segment.base_offset >= first and segment.next_offset <= last + 1:
                removed += segment.size
                segment.delete()
            else:
                keep.append(segment)
        keep.append(self._segments[-1])
        self._segments = keep
        self._bases = [s.base_offset for s in keep]
        if first <= self.log_start_offset:
            removed += self._advance_log_start(last + 1)
        fsync_dir(self.dir)
        return removed

    def _advance_log_start(self, offset: int) -> int:
        """Move the log start up to ``offset``, deleting non-active segments wholly below it."""
        if offset <= self.log_start_offset:
            return 0
        removed = 0
        while len(self._segments) > 1 and self._segments[0].next_offset <= offset:
            segment = self._segments.pop(0)
            self._bases.pop(0)
            removed += segment.size
            segment.delete()
        # Never below the first segment (as a reopen computes it): a start in a gap moves up.
        start = max(offset, self._segments[0].base_offset)
        self.log_start_offset = min(start, self.log_end_offset)
        write_offset(self.dir / LOG_START_CHECKPOINT, self.log_start_offset)
        self.epoch_cache.truncate_from_start(self.log_start_offset)
        self.producers.delete_snapshots_below(self._segments[0].base_offset)
        self.high_watermark = max(self.high_watermark, self.log_start_offset)
        return removed

    def apply_retention(self, now_ms: int | None = None) -> int:
        """Delete old non-active segments by time and size; returns bytes deleted.

        Time: a segment whose largest timestamp is more than ``retention_ms`` old. Size: the
        oldest segments while the log exceeds ``retention_bytes`` by at least their size. Only a
        prefix of segments wholly below the high watermark goes, and the log start moves to the
        first remaining segment. Idle producers past ``producer_id_expiration_ms`` are forgotten.
        """
        now = self._clock() if now_ms is None else now_ms
        config = self.config
        excess = self.size_in_bytes - config.retention_bytes if config.retention_bytes >= 0 else -1
        count = 0
        for segment in self._segments[:-1]:
            if segment.next_offset > self.high_watermark:
                break
            by_time = config.retention_ms >= 0 and now - segment.max_timestamp > config.retention_ms
            by_size = excess >= segment.size
            if not (by_time or by_size):
                break
            excess -= segment.size
            count += 1
        self.producers.remove_expired(now, config.producer_id_expiration_ms)
        if not count:
            return 0
        return self._advance_log_start(self._segments[count].base_offset)
