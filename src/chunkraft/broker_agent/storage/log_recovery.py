"""Opening a partition replica's log: its directory checked, its files recovered and replayed.

Recovery CRC-checks every batch from the recovery point on (and always the last segment's tail),
cuts the first torn or corrupt batch and everything after it, rebuilds the indexes and epoch
cache entries of what it checked, then the producer state from the newest snapshot.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Self

from chunkraft.broker_agent.storage.checkpoint import read_offset, read_text, write_atomic
from chunkraft.broker_agent.storage.config import LogConfig, wall_clock_ms
from chunkraft.broker_agent.storage.errors import InconsistentTopicIdError
from chunkraft.broker_agent.storage.log_batches import control_marker
from chunkraft.broker_agent.storage.log_state import (
    HIGH_WATERMARK_CHECKPOINT,
    LOG_START_CHECKPOINT,
    PARTITION_METADATA,
    RECOVERY_POINT_CHECKPOINT,
    LogState,
)
from chunkraft.broker_agent.storage.producer_state import ProducerAppend
from chunkraft.broker_agent.storage.segment import LogSegment
from chunkraft.broker_agent.storage.txn_index import AbortedTxn
from chunkraft.dataplane.record_batch import BatchHeader, CorruptBatchError

__all__ = ["LogRecovery"]

_logger = logging.getLogger(__name__)


class LogRecovery(LogState):
    """:class:`LogState` plus opening: ``open`` creates or recovers a log directory, and the
    producer state replay that truncation reuses. Not thread-safe."""

    @classmethod
    def open(
        cls,
        directory: Path,
        topic_id: uuid.UUID,
        config: LogConfig,
        *,
        now_ms: Callable[[], int] = wall_clock_ms,
    ) -> Self:
        """Open the log in ``directory``, creating it when missing, recovering it otherwise.

        Recovery CRC-checks every batch from the recovery point on, cuts the first torn or
        corrupt batch and everything after it, rebuilds the indexes of what it checked, the
        epoch cache entries of those batches, and the producer state from the newest snapshot.
        Raises InconsistentTopicIdError when the directory belongs to another topic id.
        """
        directory.mkdir(parents=True, exist_ok=True)
        meta = directory / PARTITION_METADATA
        text = read_text(meta)
        if text is None:
            write_atomic(meta, f"version: 0\ntopic_id: {topic_id}\n")
        else:
            found = _topic_id_of(text)
            if found != str(topic_id):
                raise InconsistentTopicIdError(found or "<unreadable>", str(topic_id))
        log = cls(directory, topic_id, config, now_ms)
        log._load()
        return log

    def _load(self) -> None:
        directory = self.dir
        for tmp in directory.glob("*.tmp"):
            tmp.unlink(missing_ok=True)
        bases = sorted(int(p.name[:-4]) for p in directory.glob("*.log") if p.name[:-4].isdigit())
        # Index files without their .log are leftovers of a deletion cut short.
        for suffix in (".index", ".timeindex", ".txnindex"):
            for p in directory.glob("*" + suffix):
                stem = p.name[: -len(suffix)]
                if stem.isdigit() and int(stem) not in bases:
                    p.unlink(missing_ok=True)
        self._recovery_point = read_offset(directory / RECOVERY_POINT_CHECKPOINT) or 0
        checkpointed_start = read_offset(directory / LOG_START_CHECKPOINT)
        cut_any = False
        truncated = False
        interval = self.config.index_interval_bytes
        for base in bases:
            segment = LogSegment(directory, base, interval)
            if truncated or (self._segments and base < self._segments[-1].next_offset):
                # After a cut (or an impossible overlap) later segments cannot be trusted.
                segment.delete()
                continue
            check_from = self._recovery_point
            if base == bases[-1]:
                # The last segment's tail is always CRC-checked (about one index interval): a
                # clean shutdown does not protect the last batch from a bit flip.
                check_from = min(check_from, segment.index.last_entry()[0])
            cut = segment.recover(check_from, self._assign_epoch_from)
            cut_any = cut_any or cut > 0
            truncated = cut > 0
            if truncated:
                # An operator should see what recovery removed, and from where.
                _logger.warning(
                    "recovery of %s: cut %d bytes of a torn or corrupt tail from "
                    "segment %d; the log now ends at offset %d",
                    directory.name,
                    cut,
                    base,
                    segment.next_offset,
                )
            if segment.size == 0 and self._segments:
                segment.delete()  # an empty segment after another one holds nothing
                continue
            if self._segments and self._segments[-1].size == 0:
                # An empty segment followed by another one holds nothing either.
                self._segments.pop().delete()
                self._bases.pop()
            self._append_segment(segment)
        if not self._segments:
            start = checkpointed_start if checkpointed_start is not None else 0
            self._append_segment(LogSegment(directory, start, interval))
        leo = self.log_end_offset
        first_base = self._segments[0].base_offset
        start = max(checkpointed_start or 0, first_base)
        self.log_start_offset = min(start, leo)
        self.epoch_cache.truncate_from_end(leo)
        self.epoch_cache.truncate_from_start(self.log_start_offset)
        self._rebuild_producer_state()
        hw = read_offset(directory / HIGH_WATERMARK_CHECKPOINT)
        self.high_watermark = self._clamp(hw if hw is not None else self.log_start_offset)
        self._hw_checkpointed = hw if hw is not None else -1
        self.producers.on_high_watermark(self.high_watermark)
        if cut_any or self._recovery_point != leo:
            self.flush()

    def _append_segment(self, segment: LogSegment) -> None:
        self._segments.append(segment)
        self._bases.append(segment.base_offset)

    def _assign_epoch_from(self, header: BatchHeader, _view: memoryview) -> None:
        epoch = header.partition_leader_epoch
        if epoch >= 0 and epoch > self.epoch_cache.latest_epoch:
            self.epoch_cache.assign(epoch, header.base_offset)

    def _rebuild_producer_state(self) -> None:
        """Load the newest snapshot at or below LEO, then replay the batch headers after it.

        Aborted-transaction index entries at or after the snapshot are regenerated by the replay
        (they may not have reached the disk before a crash), the older ones are kept.
        """
        leo = self.log_end_offset
        snapshot = self.producers.load_snapshot(leo)
        start = snapshot if snapshot is not None else 0
        for segment in self._segments:
            segment.txn_index.truncate_to_offset(start)
        staging = self.producers.begin(verify=False)
        for segment in self._segments:
            if segment.next_offset <= start:
                continue
            for header, view in segment.iter_headers(start):
                marker = None
                if header.is_control and header.producer_id >= 0:
                    try:
                        marker = control_marker(view)
                    except CorruptBatchError:
                        continue  # a CRC-valid control batch without a readable marker
                self._stage(staging, header, marker, segment)
        staging.commit()

    def _stage(
        self,
        staging: ProducerAppend,
        header: BatchHeader,
        marker: tuple[bool, int] | None,
        segment: LogSegment | None,
    ) -> AbortedTxn | None:
        """Apply a written or replicated batch to ``staging``; returns an aborted txn entry.

        ``marker`` is ``(is_commit, coordinator_epoch)`` for a control batch. With ``segment``
        the aborted entry is also added to that segment's transaction index.
        """
        if header.producer_id < 0:
            return None
        if not header.is_control:
            staging.append_data(header, header.base_offset, header.last_offset)
            return None
        if marker is None:
            return None
        commit, coordinator_epoch = marker
        txn = staging.append_marker(
            header.producer_id,
            header.producer_epoch,
            coordinator_epoch,
            commit,
            header.base_offset,
            header.max_timestamp,
        )
        if not txn.is_aborted:
            return None
        entry = AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset)
        if segment is not None:
            segment.txn_index.append(entry)
        return entry


def _topic_id_of(text: str) -> str | None:
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "topic_id":
            return value.strip()
    return None

