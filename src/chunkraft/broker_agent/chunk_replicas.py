"""ChunkReplicas: the inactive chunks this broker keeps, and its logs reconciled with the image.

A chunk stop rolls the log (chunk data lines up with segment boundaries); a chunk this broker is
a replica of but lacks is copied from its ISR (``chunk_copier``) into the partition's log when it
fits at the log's end, else into a log of its own (``<topic>@<start>``); a complete copy reports
IN_SYNC. A chunk delete removes its data outside every range still hosted here. The new leader
of an active chunk first copies the overlap with the previous chunk (its open transactions).
Retention runs here too, and asks to drop a replica whose data it removed entirely (KIP-1114).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from chunkraft.broker_agent.background import logged
from chunkraft.broker_agent.chunk_copier import CopyJob, first_missing_offset, run_copy
from chunkraft.broker_agent.chunk_lookup import (
    TO_THE_END,
    active_start,
    chunk_for_copy,
    chunk_log_topic,
    hosted_ranges,
    parse_chunk_log_topic,
    subtract_ranges,
)
from chunkraft.broker_agent.chunk_reports import ChunkReports
from chunkraft.broker_agent.isr_updates import IsrUpdates
from chunkraft.broker_agent.partition import Partition
from chunkraft.broker_agent.partition_registry import PartitionRegistry
from chunkraft.broker_agent.peer_client import PeerClientLike
from chunkraft.broker_agent.replication_config import ReplicationConfig
from chunkraft.broker_agent.throttle import Throttle
from chunkraft.controller.image import (
    ChunkCreate,
    ChunkDelete,
    ChunkKey,
    MetadataImage,
    TopicIdPartition,
)
from chunkraft.protocol.chunks import ChunkReplicaState
from chunkraft.records import ChunkRecord, PartitionRecord

if TYPE_CHECKING:
    from chunkraft.broker_agent.storage import UnifiedLog

__all__ = ["ChunkReplicas"]

log = logging.getLogger(__name__)


class ChunkReplicas:
    """Chunk stops, creates, copies and deletes on this broker; reconcile and retention.

    Not thread-safe: every method runs on the broker's main event loop; copies run as tasks of
    that loop kept in each Partition's ``copies``.
    """

    def __init__(self, registry: PartitionRegistry, config: ReplicationConfig,
                 peers: PeerClientLike, broker_epoch: Callable[[], int],
                 time_ms: Callable[[], int], isr: IsrUpdates, reports: ChunkReports) -> None:
        self.registry = registry
        self.config = config
        self.peers = peers
        self.broker_epoch = broker_epoch
        self.time_ms = time_ms
        self.isr = isr
        self.reports = reports
        self.throttle = Throttle(config.chunk_copy_throttle_bytes_per_second)

    @property
    def node_id(self) -> int:
        return self.registry.node_id

    # ------------------------------------------------------------------ reconcile, retention

    def reconcile(self, image: MetadataImage) -> None:
        """Removes from disk what no chunk of ``image`` keeps on this broker.

        A log whose topic is gone (or was recreated with another id) goes entirely; in a log this
        broker still hosts, each segment outside every hosted chunk range goes. Segments that
        straddle a kept range stay, so nothing that must be kept is ever deleted.
        """
        logs = self.registry.logs
        for (topic_name, index), log_ in list(logs.logs().items()):
            chunk_log = parse_chunk_log_topic(topic_name)
            if chunk_log is not None:
                owner = image.topics.get_by_name(chunk_log[0])
                chunk = owner.chunk(index, chunk_log[1]) if owner is not None else None
                if owner is None or owner.topic_id != log_.topic_id or chunk is None \
                        or self.node_id not in chunk.replicas:
                    log.info("reconcile: deleting chunk log %s-%d", topic_name, index)
                    logs.delete(topic_name, index)
                continue
            topic = image.topics.get_by_name(topic_name)
            record = topic.partition(index) if topic is not None else None
            chunks = topic.chunks_of(index) if topic is not None else ()
            ranges = hosted_ranges(self.node_id, record, chunks)
            if topic is None or topic.topic_id != log_.topic_id or not ranges:
                log.info("reconcile: deleting %s-%d (not hosted here any more)",
                         topic_name, index)
                self.registry.drop(topic_name, index)
                logs.delete(topic_name, index)
                continue
            for segment in list(log_.segments):
                first, last = segment.base_offset, segment.next_offset - 1
                if last < first:
                    continue
                outside = all(r_last < first or r_first > last for r_first, r_last in ranges)
                if outside:
                    log_.delete_range(first, last)

    def run_retention(self) -> None:
        """Applies retention to every log, then asks to drop each inactive chunk replica whose
        data retention removed entirely (KIP-1114 automatic chunk deletion)."""
        now = self.time_ms()
        for partition in list(self.registry.partitions.values()):
            try:
                for log_ in partition.all_logs():
                    log_.apply_retention(now)
            except Exception:
                log.exception("retention of %s failed", partition.label)
                continue
            _, chunks = self.registry.image_partition(partition)
            for chunk in chunks:
                holder = partition.log_for(chunk.start_offset)
                if self.node_id in chunk.replicas and chunk.end_offset < holder.log_start_offset:
                    self.reports.report(partition.topic, partition.index, chunk.start_offset,
                                        ChunkReplicaState.DROPPED)

    def delete_chunk_logs(self, topic: str, index: int, topic_id: uuid.UUID) -> None:
        """Deletes the partition's chunk logs (on disk too, after a restart)."""
        logs = self.registry.logs
        for (name, log_index), log_ in list(logs.logs().items()):
            parsed = parse_chunk_log_topic(name)
            if log_index == index and parsed is not None and parsed[0] == topic \
                    and log_.topic_id == topic_id:
                logs.delete(name, index)

    # ------------------------------------------------------------------ local changes

    def stop_chunk(self, key: ChunkKey, chunk: ChunkRecord) -> None:
        topic = self.registry.image.topics.get(key.topic_id)
        if topic is None:
            return
        partition = self.registry.partitions.get((topic.name, key.partition_id))
        if partition is None:
            partition = self.registry.partition(
                topic.name, TopicIdPartition(key.topic_id, key.partition_id))
        # Chunk data lines up with segment boundaries, so a later chunk delete removes whole
        # segments of this chunk only.
        if partition.log.log_end_offset > partition.log.log_start_offset:
            partition.log.roll()
        record = topic.partition(key.partition_id)
        if record is None or self.node_id not in record.replicas:
            self.registry.leave_active(partition)
        self._ensure_inactive_chunk(partition, chunk)

    def create_chunk(self, key: ChunkKey, create: ChunkCreate) -> None:
        tp = TopicIdPartition(key.topic_id, key.partition_id)
        partition = self.registry.partition(create.topic_name, tp)
        if create.active:
            # The leader started the overlap copy on becoming leader (``overlap_of``); a
            # follower of the new active chunk gets the overlap from its leader by fetching.
            return
        topic = self.registry.image.topics.get(key.topic_id)
        chunk = topic.chunk(key.partition_id, key.start_offset) if topic is not None else None
        if chunk is not None:
            self._ensure_inactive_chunk(partition, chunk)

    def delete_chunk(self, key: ChunkKey, delete: ChunkDelete) -> None:
        partition = self.registry.partitions.get((delete.topic_name, key.partition_id))
        if partition is None or partition.topic_id != key.topic_id:
            return
        partition.stop_copy(delete.start_offset)
        if delete.active:
            self.registry.leave_active(partition)
        else:
            # A chunk log goes whole; what the partition's log may hold of the chunk (a copy
            # started there before) goes below, like a chunk kept in it.
            partition.chunk_logs.pop(delete.start_offset, None)
            self.registry.logs.delete(chunk_log_topic(partition.topic, delete.start_offset),
                                      partition.index)
        record, chunks = self.registry.image_partition(partition)
        keep = hosted_ranges(self.node_id, record, chunks)
        end = delete.end_offset if delete.end_offset >= 0 else TO_THE_END
        log_ = partition.log
        for first, last in subtract_ranges((delete.start_offset, end), keep):
            last = min(last, log_.log_end_offset - 1)
            if first <= last:
                log_.delete_range(first, last)
        partition.signal.notify()

    # ------------------------------------------------------------------ copies

    def _chunk_log(self, partition: Partition, chunk: ChunkRecord) -> UnifiedLog:
        """Where this broker keeps ``chunk``: the partition's log when it holds the chunk or can
        append it at its end, else a log of its own (the log store appends only at the end, so
        a chunk below offsets the log already has, or below the active chunk this broker
        replicates, cannot go into the partition's log)."""
        start = chunk.start_offset
        known = partition.chunk_logs.get(start)
        if known is not None:
            return known
        name = chunk_log_topic(partition.topic, start)
        logs = self.registry.logs
        existing = logs.get(name, partition.index)
        if existing is not None and existing.topic_id == partition.topic_id:
            partition.chunk_logs[start] = existing
            return existing
        main = partition.log
        missing = self._first_missing(main, chunk)
        if missing > chunk.end_offset:
            return main
        record, _ = self.registry.image_partition(partition)
        active_here = record is not None and self.node_id in record.replicas
        empty = main.log_end_offset == main.log_start_offset
        if not active_here and (empty or main.log_end_offset <= missing):
            return main
        side = logs.get_or_create(name, partition.index, partition.topic_id)
        partition.chunk_logs[start] = side
        return side

    def _first_missing(self, log_: UnifiedLog, chunk: ChunkRecord) -> int:
        """The first offset of the chunk this broker still has to copy into ``log_``.

        A replica in the chunk's ISR had all of it: offsets below the log start were removed by
        retention since (or never reached this log), and are not copied again; retention then
        asks to drop the replica instead (``run_retention``).
        """
        first = chunk.start_offset
        if self.node_id in chunk.isr:
            first = max(first, log_.log_start_offset)
        return first_missing_offset(log_, first, chunk.end_offset)

    def _settle_chunk(self, partition: Partition, log_: UnifiedLog, chunk: ChunkRecord) -> None:
        """A complete chunk copy is committed data: its HW covers it, and when the chunk is the
        end of a log that takes no appends its segment is closed, so retention can remove it."""
        end = chunk.end_offset + 1
        if log_.high_watermark < end <= log_.log_end_offset:
            log_.update_high_watermark(end)
        record, _ = self.registry.image_partition(partition)
        takes_appends = log_ is partition.log and record is not None \
            and self.node_id in record.replicas
        if not takes_appends and log_.log_end_offset == end:
            log_.roll()

    def _ensure_inactive_chunk(self, partition: Partition, chunk: ChunkRecord) -> None:
        """Copies what this broker lacks of the chunk; reports IN_SYNC once it holds all of it."""
        if self.node_id not in chunk.replicas:
            return
        log_ = self._chunk_log(partition, chunk)
        missing = self._first_missing(log_, chunk)
        if missing > chunk.end_offset:
            self._settle_chunk(partition, log_, chunk)
            if self.node_id not in chunk.isr:
                self.reports.report(partition.topic, partition.index, chunk.start_offset,
                                    ChunkReplicaState.IN_SYNC)
            return
        running = partition.copies.get(chunk.start_offset)
        if running is not None and not running.done():
            return
        sources = tuple(b for b in chunk.isr if b != self.node_id)
        start = chunk.start_offset
        current = self.registry.log_of(partition)

        def target() -> UnifiedLog | None:
            if current() is None or partition.log_for(start) is not log_:
                return None
            return log_

        def chunk_start(_: int) -> int:
            return start

        job = self._copy_job(partition, chunk.start_offset, chunk.end_offset, sources,
                             chunk_start, target)

        async def copy_then_report() -> None:
            await run_copy(job, self.peers, self.throttle, partition.signal.notify)
            if target() is not None:
                self._settle_chunk(partition, log_, chunk)
                self.reports.report(partition.topic, partition.index, start,
                                    ChunkReplicaState.IN_SYNC)

        partition.copies[start] = asyncio.get_running_loop().create_task(
            logged(copy_then_report, f"copy of {partition.label}@{start}"))

    def _copy_job(self, partition: Partition, first: int, last: int, sources: tuple[int, ...],
                  chunk_start_for: Callable[[int], int],
                  target: Callable[[], UnifiedLog | None] | None = None) -> CopyJob:
        return CopyJob(
            node_id=self.node_id,
            topic=partition.topic,
            partition=partition.index,
            first=first,
            last=last,
            sources=sources,
            chunk_start_for=chunk_start_for,
            target=target if target is not None else self.registry.log_of(partition),
            broker_epoch=self.broker_epoch,
            fetch_max_bytes=self.config.replica_fetch_max_bytes,
            backoff_s=self.config.replica_fetch_backoff_ms / 1000,
        )

    # ------------------------------------------------------------------ the overlap copy

    def overlap_of(self, partition: Partition, record: PartitionRecord
                   ) -> tuple[int, int, tuple[int, ...]] | None:
        """The part of the previous chunk's range this log must copy before the active chunk
        takes appends: ``(first, last, sources)``, or None when the log holds it (or there is
        no overlap: the cut found LSO = HW)."""
        start = active_start(record)
        _, chunks = self.registry.image_partition(partition)
        previous = None
        for chunk in chunks:
            if chunk.start_offset < start:
                previous = chunk
        if previous is None or previous.end_offset < start:
            return None
        if first_missing_offset(partition.log, start, previous.end_offset) > previous.end_offset:
            return None
        return start, previous.end_offset, tuple(b for b in previous.isr if b != self.node_id)

    def start_overlap_copy(self, partition: Partition, first: int, last: int,
                           sources: tuple[int, ...]) -> None:
        """The new leader of an active chunk copies the overlap with the previous chunk (its
        open transactions) before it accepts appends (DESIGN.md section 3)."""
        running = partition.copies.get(first)
        if running is not None and not running.done():
            return

        def chunk_start(offset: int) -> int:
            _, chunks = self.registry.image_partition(partition)
            found = chunk_for_copy(chunks, offset)
            return found.start_offset if found is not None else -1

        job = self._copy_job(partition, first, last, sources, chunk_start)
        epoch = partition.leader_epoch

        async def copy_then_open() -> None:
            await run_copy(job, self.peers, self.throttle, partition.signal.notify)
            if partition.is_leader and partition.leader_epoch == epoch:
                partition.overlap_pending = False
                partition.leader_epoch_start = partition.log.log_end_offset
                partition.log.maybe_assign_epoch_start_offset(epoch, partition.log.log_end_offset)
                self.isr.advance_high_watermark(partition)
                partition.signal.notify()

        partition.copies[first] = asyncio.get_running_loop().create_task(
            logged(copy_then_open, f"overlap copy of {partition.label}"))
