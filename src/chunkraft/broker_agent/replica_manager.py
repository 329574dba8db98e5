"""The ReplicaManager: makes this broker's replicas what the metadata says they are.

Its only input for replica changes is ``delta.topics_delta.local_changes(node_id)``
(``controller/image/local_changes.py``), applied in the order the KIP gives: deletes, leaders,
followers, chunk stops, chunk creates, chunk deletes. Everything it keeps is derived from the
image and the logs on disk, so applying the same delta twice, or the first delta after a restart
(an empty image to the current one), leaves the same state: a copy is finished when the log
holds the chunk's range, a delete checks the topic id, and the first delta also removes what
no chunk of the image keeps on this broker.

It also serves the data plane (produce, fetch, list offsets, OffsetsForLeaderEpoch, transaction
markers, chunk rolls; see ``produce_path``, ``fetch_path``, ``chunk_roll``) and runs the
background work: follower fetchers, chunk copies, ISR checks, retention with automatic chunk
deletion, flushes and high-watermark checkpoints. Everything runs on the broker's one event
loop: not thread-safe, and it needs no locks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from chunkraft.broker_agent import chunk_roll, fetch_path, produce_path
from chunkraft.broker_agent.chunk_copier import (
    CopyJob,
    first_missing_offset,
    run_copy,
)
from chunkraft.broker_agent.chunk_lookup import (
    TO_THE_END,
    active_start,
    chunk_for_copy,
    chunk_log_topic,
    hosted_ranges,
    parse_chunk_log_topic,
    subtract_ranges,
)
from chunkraft.broker_agent.isr import IsrTracker
from chunkraft.broker_agent.partition import Partition, Role
from chunkraft.broker_agent.peer_client import ControllerChannelLike, PeerClientLike
from chunkraft.broker_agent.replica_fetcher import FollowerJob, LeaderFetcher
from chunkraft.broker_agent.replication_config import ReplicationConfig
from chunkraft.broker_agent.throttle import Throttle
from chunkraft.controller.image import (
    ChunkCreate,
    ChunkDelete,
    ChunkKey,
    LocalPartition,
    MetadataDelta,
    MetadataImage,
    TopicIdPartition,
)
from chunkraft.error_codes import Errors
from chunkraft.protocol.brokers import (
    AlterPartitionBrokerState,
    AlterPartitionPartitionData,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionTopicData,
)
from chunkraft.protocol.chunks import (
    ChunkReplicaState,
    ChunkReplicaStateItem,
    ChunkReplicaStateRequest,
    ChunkReplicaStateResponse,
)
from chunkraft.protocol.data_plane import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    ProduceRequest,
    ProduceResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from chunkraft.records import ChunkRecord, PartitionRecord
from chunkraft.records.uuids import kafka_uuid_str

if TYPE_CHECKING:
    from chunkraft.broker_agent.storage import LogManager, UnifiedLog

__all__ = ["ReplicaManager"]

log = logging.getLogger(__name__)

ALTER_PARTITION_PATH = "/controller/v1/alter-partition"
CHUNK_REPLICA_STATE_PATH = "/controller/v1/chunk-replica-state"
CREATE_CHUNKS_PATH = "/controller/v1/create-chunks"


def _now_ms() -> int:
    return int(time.time() * 1000)


ReportKey = tuple[str, int, int, ChunkReplicaState]
"""(topic, partition, chunk start offset, state) of a ChunkReplicaState report to send."""


class ReplicaManager:
    """This broker's replicas: applies metadata deltas, serves the data plane, replicates.

    ``broker_epoch()`` is the current registration epoch (-1 before registering); ``time_ms``
    the wall clock in milliseconds (tests pass a fake). ``caught_up()`` says the image has
    reached the controller's committed metadata (the metadata follower's ``caught_up``): only
    then is :meth:`reconcile` safe, since an image still replaying the log may not yet show a
    topic or a chunk moved here whose data is on disk. Without it, reconcile runs only when
    called. See the module docstring for the contract; every method must be called on the
    broker's event loop.
    """

    def __init__(
        self,
        node_id: int,
        logs: LogManager,
        config: ReplicationConfig,
        controller: ControllerChannelLike,
        peers: PeerClientLike,
        broker_epoch: Callable[[], int],
        *,
        time_ms: Callable[[], int] = _now_ms,
        caught_up: Callable[[], bool] | None = None,
    ) -> None:
        self.node_id = node_id
        self.logs = logs
        self.config = config
        self.controller = controller
        self.peers = peers
        self.broker_epoch = broker_epoch
        self.time_ms = time_ms
        self.caught_up = caught_up
        self.image = MetadataImage.EMPTY
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.throttle = Throttle(config.chunk_copy_throttle_bytes_per_second)
        self._reconciled = False
        self._reports: set[ReportKey] = set()
        self._reporter: asyncio.Task[None] | None = None
        self._background: list[asyncio.Task[None]] = []
        self._alters: set[asyncio.Task[None]] = set()
        self._fetchers: dict[int, LeaderFetcher] = {}  # one per leader broker followed
        self._stopped = False

    # ------------------------------------------------------------------ metadata

    async def on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """The metadata follower's listener: same as :meth:`apply_delta`."""
        await self.apply_delta(delta, image)

    async def apply_delta(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """Applies what ``delta`` (which produced ``image``) asks of this broker's replicas.

        Idempotent: the same delta again, or the first delta after a restart, gives the same
        state. Once the image has caught up (``caught_up()``), the logs on disk are reconciled
        with it, once (see :meth:`reconcile`).
        """
        changes = delta.topics_delta.local_changes(self.node_id)
        self.image = image
        try:
            self._maybe_reconcile()
        except Exception:
            log.exception("reconciling the logs with the image failed")
        # One failing partition (a disk error) must not keep the others from their changes.
        _each("delete", changes.deletes.items(), lambda tp, name: self._delete_partition(name, tp))
        _each("lead", changes.leaders.items(), self._become_leader)
        _each("follow", changes.followers.items(), self._become_follower)
        _each("stop chunk", changes.chunk_stops.items(), self._stop_chunk)
        _each("create chunk", changes.chunk_creates.items(), self._create_chunk)
        _each("delete chunk", changes.chunk_deletes.items(), self._delete_chunk)

    def _maybe_reconcile(self) -> None:
        if not self._reconciled and self.caught_up is not None and self.caught_up():
            self._reconciled = True
            self.reconcile(self.image)

    def reconcile(self, image: MetadataImage) -> None:
        """Removes from disk what no chunk of ``image`` keeps on this broker.

        A log whose topic is gone (or was recreated with another id) goes entirely; in a log this
        broker still hosts, each segment outside every hosted chunk range goes. Segments that
        straddle a kept range stay, so nothing that must be kept is ever deleted.
        """
        for (topic_name, index), log_ in list(self.logs.logs().items()):
            chunk_log = parse_chunk_log_topic(topic_name)
            if chunk_log is not None:
                owner = image.topics.get_by_name(chunk_log[0])
                chunk = owner.chunk(index, chunk_log[1]) if owner is not None else None
                if owner is None or owner.topic_id != log_.topic_id or chunk is None \
                        or self.node_id not in chunk.replicas:
                    log.info("reconcile: deleting chunk log %s-%d", topic_name, index)
                    self.logs.delete(topic_name, index)
                continue
            topic = image.topics.get_by_name(topic_name)
            record = topic.partition(index) if topic is not None else None
            chunks = topic.chunks_of(index) if topic is not None else ()
            ranges = hosted_ranges(self.node_id, record, chunks)
            if topic is None or topic.topic_id != log_.topic_id or not ranges:
                log.info("reconcile: deleting %s-%d (not hosted here any more)",
                         topic_name, index)
                self._drop_partition_state(topic_name, index)
                self.logs.delete(topic_name, index)
                continue
            for segment in list(log_.segments):
                first, last = segment.base_offset, segment.next_offset - 1
                if last < first:
                    continue
                outside = all(r_last < first or r_first > last for r_first, r_last in ranges)
                if outside:
                    log_.delete_range(first, last)

    # ------------------------------------------------------------------ partitions

    def _drop_partition_state(self, topic: str, index: int) -> None:
        partition = self.partitions.pop((topic, index), None)
        if partition is not None:
            partition.close()

    def _delete_chunk_logs(self, topic: str, index: int, topic_id: uuid.UUID) -> None:
        """Deletes the partition's chunk logs (on disk too, after a restart)."""
        for (name, log_index), log_ in list(self.logs.logs().items()):
            parsed = parse_chunk_log_topic(name)
            if log_index == index and parsed is not None and parsed[0] == topic \
                    and log_.topic_id == topic_id:
                self.logs.delete(name, index)

    def _partition(self, topic: str, tp: TopicIdPartition) -> Partition:
        """This broker's Partition for ``tp``, with its log (created or reopened)."""
        partition = self.partitions.get((topic, tp.partition_id))
        if partition is not None and partition.topic_id == tp.topic_id and not partition.closed:
            return partition
        if partition is not None:
            partition.close()
        log_ = self.logs.get_or_create(topic, tp.partition_id, tp.topic_id)
        partition = Partition(topic, tp.topic_id, tp.partition_id, log_)
        self.partitions[(topic, tp.partition_id)] = partition
        return partition

    def _log_of(self, partition: Partition) -> Callable[[], UnifiedLog | None]:
        def current() -> UnifiedLog | None:
            if partition.closed or self.partitions.get((partition.topic, partition.index)) \
                    is not partition:
                return None
            return partition.log
        return current

    def _delete_partition(self, topic: str, tp: TopicIdPartition) -> None:
        partition = self.partitions.get((topic, tp.partition_id))
        if partition is not None and partition.topic_id != tp.topic_id:
            return  # the name now belongs to a recreated topic: not ours to delete
        log_ = self.logs.get(topic, tp.partition_id)
        if log_ is not None and log_.topic_id != tp.topic_id:
            return
        self._drop_partition_state(topic, tp.partition_id)
        self._delete_chunk_logs(topic, tp.partition_id, tp.topic_id)
        if log_ is not None:
            self.logs.delete(topic, tp.partition_id)

    def _position_for_active(self, partition: Partition, record: PartitionRecord) -> None:
        """The next append of a log short of the active chunk's start lands at that start.

        The offsets in between belong to chunks held elsewhere (a gap): an empty log simply
        starts there; a log holding older chunks gets an empty segment at the start.
        """
        partition.log.start_at(active_start(record))

    def _overlap_of(self, partition: Partition, record: PartitionRecord
                    ) -> tuple[int, int, tuple[int, ...]] | None:
        """The part of the previous chunk's range this log must copy before the active chunk
        takes appends: ``(first, last, sources)``, or None when the log holds it (or there is
        no overlap: the cut found LSO = HW)."""
        start = active_start(record)
        _, chunks = self._image_partition(partition)
        previous = None
        for chunk in chunks:
            if chunk.start_offset < start:
                previous = chunk
        if previous is None or previous.end_offset < start:
            return None
        if first_missing_offset(partition.log, start, previous.end_offset) > previous.end_offset:
            return None
        return start, previous.end_offset, tuple(b for b in previous.isr if b != self.node_id)

    def _become_leader(self, tp: TopicIdPartition, local: LocalPartition) -> None:
        partition = self._partition(local.topic_name, tp)
        record = local.partition
        current = partition.record
        if current is not None and partition.is_leader and current.leader_epoch == \
                record.leader_epoch:
            # Same leader epoch: an ISR or replica change (maybe our own AlterPartition).
            assert partition.tracker is not None
            if record.partition_epoch >= current.partition_epoch:
                partition.record = record
                partition.tracker.set_replicas(record.replicas, self.time_ms())
                partition.tracker.set_isr(record.isr)
                partition.alter_in_flight = False
            self._advance_high_watermark(partition)
            partition.signal.notify()
            return
        if not partition.is_leader:
            partition.leadership += 1
        partition.stop_fetcher()
        partition.record = record
        partition.role = Role.LEADER
        partition.tracker = IsrTracker(self.node_id, record.replicas, record.isr, self.time_ms())
        partition.alter_in_flight = False
        partition.appends_paused = False
        self._position_for_active(partition, record)
        # Derived from the image, not the delta: after a restart in the middle of the copy
        # the first delta has no chunk create, and the leader must still finish it.
        overlap = self._overlap_of(partition, record)
        partition.overlap_pending = overlap is not None
        partition.leader_epoch_start = partition.log.log_end_offset
        if overlap is not None:
            self._start_overlap_copy(partition, *overlap)
        else:
            # Kafka's new leader records its epoch's start at the LEO: OffsetsForLeaderEpoch
            # then answers followers of an older epoch with where that epoch ended here.
            partition.log.maybe_assign_epoch_start_offset(record.leader_epoch,
                                                          partition.log.log_end_offset)
        self._advance_high_watermark(partition)
        partition.signal.notify()

    def _become_follower(self, tp: TopicIdPartition, local: LocalPartition) -> None:
        partition = self._partition(local.topic_name, tp)
        record = local.partition
        partition.role = Role.FOLLOWER
        partition.tracker = None
        partition.overlap_pending = False
        partition.appends_paused = False
        partition.alter_in_flight = False
        partition.record = record
        self._position_for_active(partition, record)
        leader = record.leader
        running = partition.fetcher is not None and not partition.fetcher.done()
        if running and partition.fetcher_leader == leader and \
                partition.fetcher_epoch == record.leader_epoch:
            partition.signal.notify()
            return
        partition.stop_fetcher()
        if leader >= 0 and leader != self.node_id:
            self._start_fetcher(partition, record)
        partition.signal.notify()

    def _start_fetcher(self, partition: Partition, record: PartitionRecord) -> None:
        job = FollowerJob(
            node_id=self.node_id,
            topic=partition.topic,
            partition=partition.index,
            leader=record.leader,
            leader_epoch=record.leader_epoch,
            start_offset=active_start(record),
            target=self._log_of(partition),
            broker_epoch=self.broker_epoch,
            on_progress=partition.signal.notify,
            fetch_wait_ms=self.config.replica_fetch_wait_max_ms,
            fetch_max_bytes=self.config.replica_fetch_max_bytes,
            backoff_s=self.config.replica_fetch_backoff_ms / 1000,
        )
        fetcher = self._fetchers.get(record.leader)
        if fetcher is None:
            fetcher = self._fetchers[record.leader] = LeaderFetcher(
                record.leader, self.node_id, self.peers, self.broker_epoch,
                fetch_wait_ms=self.config.replica_fetch_wait_max_ms,
                fetch_max_bytes=self.config.replica_fetch_max_bytes,
                backoff_s=self.config.replica_fetch_backoff_ms / 1000)
        partition.fetcher = fetcher.add(job)
        partition.fetcher_leader = record.leader
        partition.fetcher_epoch = record.leader_epoch

    def _leave_active(self, partition: Partition) -> None:
        """This broker is no replica of the active chunk any more; its data stays."""
        partition.stop_fetcher()
        partition.role = Role.NONE
        partition.record = None
        partition.tracker = None
        partition.appends_paused = False
        partition.overlap_pending = False
        partition.signal.notify()

    # ------------------------------------------------------------------ chunks

    def _image_partition(self, partition: Partition) -> tuple[PartitionRecord | None,
                                                              tuple[ChunkRecord, ...]]:
        topic = self.image.topics.get(partition.topic_id)
        if topic is None:
            return None, ()
        return topic.partition(partition.index), topic.chunks_of(partition.index)

    def _stop_chunk(self, key: ChunkKey, chunk: ChunkRecord) -> None:
        topic = self.image.topics.get(key.topic_id)
        if topic is None:
            return
        partition = self.partitions.get((topic.name, key.partition_id))
        if partition is None:
            partition = self._partition(topic.name, TopicIdPartition(key.topic_id,
                                                                     key.partition_id))
        # Chunk data lines up with segment boundaries, so a later chunk delete removes whole
        # segments of this chunk only.
        if partition.log.log_end_offset > partition.log.log_start_offset:
            partition.log.roll()
        record = topic.partition(key.partition_id)
        if record is None or self.node_id not in record.replicas:
            self._leave_active(partition)
        self._ensure_inactive_chunk(partition, chunk)

    def _create_chunk(self, key: ChunkKey, create: ChunkCreate) -> None:
        tp = TopicIdPartition(key.topic_id, key.partition_id)
        partition = self._partition(create.topic_name, tp)
        if create.active:
            # The leader started the overlap copy on becoming leader (``_overlap_of``); a
            # follower of the new active chunk gets the overlap from its leader by fetching.
            return
        topic = self.image.topics.get(key.topic_id)
        chunk = topic.chunk(key.partition_id, key.start_offset) if topic is not None else None
        if chunk is not None:
            self._ensure_inactive_chunk(partition, chunk)

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
        existing = self.logs.get(name, partition.index)
        if existing is not None and existing.topic_id == partition.topic_id:
            partition.chunk_logs[start] = existing
            return existing
        main = partition.log
        missing = self._first_missing(main, chunk)
        if missing > chunk.end_offset:
            return main
        record, _ = self._image_partition(partition)
        active_here = record is not None and self.node_id in record.replicas
        empty = main.log_end_offset == main.log_start_offset
        if not active_here and (empty or main.log_end_offset <= missing):
            return main
        side = self.logs.get_or_create(name, partition.index, partition.topic_id)
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
        record, _ = self._image_partition(partition)
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
                self._report(partition.topic, partition.index, chunk.start_offset,
                             ChunkReplicaState.IN_SYNC)
            return
        running = partition.copies.get(chunk.start_offset)
        if running is not None and not running.done():
            return
        sources = tuple(b for b in chunk.isr if b != self.node_id)
        start = chunk.start_offset
        current = self._log_of(partition)

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
                self._report(partition.topic, partition.index, start, ChunkReplicaState.IN_SYNC)

        partition.copies[start] = asyncio.get_running_loop().create_task(
            _logged(copy_then_report, f"copy of {partition.label}@{start}"))

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
            target=target if target is not None else self._log_of(partition),
            broker_epoch=self.broker_epoch,
            fetch_max_bytes=self.config.replica_fetch_max_bytes,
            backoff_s=self.config.replica_fetch_backoff_ms / 1000,
        )

    def _start_overlap_copy(self, partition: Partition, first: int, last: int,
                            sources: tuple[int, ...]) -> None:
        """The new leader of an active chunk copies the overlap with the previous chunk (its
        open transactions) before it accepts appends (DESIGN.md section 3)."""
        running = partition.copies.get(first)
        if running is not None and not running.done():
            return

        def chunk_start(offset: int) -> int:
            _, chunks = self._image_partition(partition)
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
                self._advance_high_watermark(partition)
                partition.signal.notify()

        partition.copies[first] = asyncio.get_running_loop().create_task(
            _logged(copy_then_open, f"overlap copy of {partition.label}"))

    def _delete_chunk(self, key: ChunkKey, delete: ChunkDelete) -> None:
        partition = self.partitions.get((delete.topic_name, key.partition_id))
        if partition is None or partition.topic_id != key.topic_id:
            return
        partition.stop_copy(delete.start_offset)
        if delete.active:
            self._leave_active(partition)
        else:
            # A chunk log goes whole; what the partition's log may hold of the chunk (a copy
            # started there before) goes below, like a chunk kept in it.
            partition.chunk_logs.pop(delete.start_offset, None)
            self.logs.delete(chunk_log_topic(partition.topic, delete.start_offset),
                             partition.index)
        record, chunks = self._image_partition(partition)
        keep = hosted_ranges(self.node_id, record, chunks)
        end = delete.end_offset if delete.end_offset >= 0 else TO_THE_END
        log_ = partition.log
        for first, last in subtract_ranges((delete.start_offset, end), keep):
            last = min(last, log_.log_end_offset - 1)
            if first <= last:
                log_.delete_range(first, last)
        partition.signal.notify()

    # ------------------------------------------------------------------ high watermark, ISR

    def _advance_high_watermark(self, partition: Partition) -> None:
        """Leader: HW = min LEO over the maximal ISR, never backwards."""
        tracker = partition.tracker
        if tracker is None or not partition.is_leader:
            return
        log_ = partition.log
        new_hw = tracker.high_watermark(log_.log_end_offset, log_.high_watermark)
        new_hw = min(new_hw, log_.log_end_offset)
        if new_hw > log_.high_watermark:
            log_.update_high_watermark(new_hw)
            partition.signal.notify()

    def record_follower_fetch(self, partition: Partition, replica_id: int, fetch_offset: int,
                              replica_epoch: int) -> None:
        """A follower fetched: its LEO moves, the HW may advance, the ISR may expand."""
        tracker = partition.tracker
        if tracker is None:
            return
        tracker.record_fetch(replica_id, fetch_offset, partition.log.log_end_offset,
                             replica_epoch, self.time_ms())
        self._advance_high_watermark(partition)
        if replica_id not in tracker.isr and not partition.alter_in_flight and \
                self.time_ms() >= partition.alter_retry_at_ms:
            expand = tracker.expand_candidates(partition.log.high_watermark,
                                               partition.leader_epoch_start)
            if replica_id in expand:
                self._alter_isr(partition, (*tracker.isr, replica_id))

    def check_isr(self) -> None:
        """Shrinks the ISR of every led partition whose followers lag (called periodically)."""
        now = self.time_ms()
        for partition in self.partitions.values():
            tracker = partition.tracker
            if tracker is None or not partition.is_leader or partition.alter_in_flight \
                    or now < partition.alter_retry_at_ms:
                continue
            out = tracker.shrink_candidates(partition.log.log_end_offset,
                                            self.config.replica_lag_time_max_ms, now)
            if out:
                self._alter_isr(partition, tuple(b for b in tracker.isr if b not in out))

    def _alter_isr(self, partition: Partition, new_isr: tuple[int, ...]) -> None:
        """Sends one AlterPartition (one in flight per partition); the image confirms it."""
        tracker = partition.tracker
        record = partition.record
        if tracker is None or record is None:
            return
        partition.alter_in_flight = True
        tracker.pending_isr = new_isr
        states = tuple(AlterPartitionBrokerState(
            broker_id=b,
            broker_epoch=self.broker_epoch() if b == self.node_id else tracker.broker_epoch_of(b),
        ) for b in new_isr)
        request = AlterPartitionRequest(
            broker_id=self.node_id,
            broker_epoch=self.broker_epoch(),
            topics=(AlterPartitionTopicData(
                topic_id=kafka_uuid_str(partition.topic_id),
                partitions=(AlterPartitionPartitionData(
                    partition_index=partition.index,
                    leader_epoch=record.leader_epoch,
                    new_isr_with_epochs=states,
                    partition_epoch=record.partition_epoch,
                ),),
            ),),
        )
        task = asyncio.get_running_loop().create_task(
            _logged(lambda: self._send_alter(partition, record.leader_epoch, request),
                    f"AlterPartition {partition.label}"))
        self._alters.add(task)
        task.add_done_callback(self._alters.discard)

    async def _send_alter(self, partition: Partition, leader_epoch: int,
                          request: AlterPartitionRequest) -> None:
        try:
            answer = AlterPartitionResponse.model_validate(
                await self.controller.call(ALTER_PARTITION_PATH, request.model_dump(mode="json")))
        except Exception as error:
            log.info("AlterPartition for %s failed: %s", partition.label, error)
            answer = None
        if partition.closed or not partition.is_leader or partition.leader_epoch != leader_epoch:
            return
        tracker = partition.tracker
        assert tracker is not None
        result = None
        if answer is not None and answer.error_code == 0 and answer.topics and \
                answer.topics[0].partitions:
            result = answer.topics[0].partitions[0]
        if result is not None and result.error_code == 0 and partition.record is not None:
            if result.partition_epoch >= partition.record.partition_epoch:
                partition.record = partition.record._replace(
                    isr=result.isr, partition_epoch=result.partition_epoch)
                tracker.set_isr(result.isr)
        else:
            if result is not None:
                log.info("AlterPartition for %s refused: %s %s", partition.label,
                         Errors.for_code(result.error_code).name, result.error_message)
            tracker.pending_isr = None
            # A refused or failed change (an ineligible replica, a controller away) is not
            # retried on every follower fetch: that would be a controller call per fetch.
            partition.alter_retry_at_ms = self.time_ms() + self.config.replica_fetch_backoff_ms
        partition.alter_in_flight = False
        self._advance_high_watermark(partition)
        partition.signal.notify()

    # ------------------------------------------------------------------ chunk replica reports

    def _report(self, topic: str, index: int, start: int, state: ChunkReplicaState) -> None:
        self._reports.add((topic, index, start, state))
        if self._reporter is None or self._reporter.done():
            self._reporter = asyncio.get_running_loop().create_task(
                _logged(self._send_reports, "chunk replica reports"))

    def _report_still_needed(self, key: ReportKey) -> bool:
        topic_name, index, start, state = key
        topic = self.image.topics.get_by_name(topic_name)
        chunk = topic.chunk(index, start) if topic is not None else None
        if chunk is None or self.node_id not in chunk.replicas:
            return False
        return state is ChunkReplicaState.DROPPED or self.node_id not in chunk.isr

    async def _send_reports(self) -> None:
        """Sends the pending reports until each is accepted (or no longer needed)."""
        while self._reports and not self._stopped:
            batch = sorted((k for k in self._reports if self._report_still_needed(k)),
                           key=lambda k: (k[0], k[1], k[2], k[3].value))
            self._reports.difference_update(set(self._reports) - set(batch))
            if not batch:
                return
            request = ChunkReplicaStateRequest(
                broker_id=self.node_id,
                broker_epoch=self.broker_epoch(),
                chunks=tuple(ChunkReplicaStateItem(topic_name=t, partition_id=p,
                                                   start_offset=s, state=st)
                             for t, p, s, st in batch),
            )
            try:
                answer = ChunkReplicaStateResponse.model_validate(await self.controller.call(
                    CHUNK_REPLICA_STATE_PATH, request.model_dump(mode="json")))
            except Exception as error:
                log.info("ChunkReplicaState failed: %s", error)
                await asyncio.sleep(self.config.replica_fetch_backoff_ms / 1000)
                continue
            done_codes = {0, Errors.UNKNOWN_CHUNK.code, Errors.NO_REASSIGNMENT_IN_PROGRESS.code}
            if answer.error_code == 0:
                for key, result in zip(batch, answer.results, strict=False):
                    if result.error_code in done_codes:
                        self._reports.discard(key)
            if self._reports:
                await asyncio.sleep(self.config.replica_fetch_backoff_ms / 1000)

    # ------------------------------------------------------------------ retention

    def run_retention(self) -> None:
        """Applies retention to every log, then asks to drop each inactive chunk replica whose
        data retention removed entirely (KIP-1114 automatic chunk deletion)."""
        now = self.time_ms()
        for partition in list(self.partitions.values()):
            try:
                for log_ in partition.all_logs():
                    log_.apply_retention(now)
            except Exception:
                log.exception("retention of %s failed", partition.label)
                continue
            _, chunks = self._image_partition(partition)
            for chunk in chunks:
                holder = partition.log_for(chunk.start_offset)
                if self.node_id in chunk.replicas and chunk.end_offset < holder.log_start_offset:
                    self._report(partition.topic, partition.index, chunk.start_offset,
                                 ChunkReplicaState.DROPPED)

    # ------------------------------------------------------------------ data plane

    async def produce(self, request: ProduceRequest) -> ProduceResponse:
        """Appends to the active chunks this broker leads (see ``produce_path``)."""
        return await produce_path.produce(self, request)

    async def fetch(self, request: FetchRequest) -> FetchResponse:
        """Consumer, follower and chunk copier reads (see ``fetch_path``)."""
        return await fetch_path.fetch(self, request)

    def list_offsets(self, request: ListOffsetsRequest) -> ListOffsetsResponse:
        return fetch_path.list_offsets(self, request)

    def offsets_for_leader_epoch(
        self, request: OffsetForLeaderEpochRequest
    ) -> OffsetForLeaderEpochResponse:
        return fetch_path.offsets_for_leader_epoch(self, request)

    async def write_txn_markers(self, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
        return await produce_path.write_txn_markers(self, request)

    async def roll_chunk(self, topic: str, partition: int, broker_ids: tuple[int, ...],
                         leader: int) -> tuple[int, str | None]:
        """Cuts the active chunk this broker leads (DESIGN.md section 3): error code, message."""
        return await chunk_roll.roll_chunk(self, topic, partition, broker_ids, leader)

    def after_leader_append(self, partition: Partition) -> None:
        """After an append on a leader: the HW may move (a single-member ISR), waiters wake."""
        self._advance_high_watermark(partition)
        partition.signal.notify()

    def status_counts(self) -> tuple[int, int, int]:
        """(partitions led, partitions followed, inactive chunk replicas) on this broker."""
        leaders = sum(1 for p in self.partitions.values() if p.role is Role.LEADER)
        followers = sum(1 for p in self.partitions.values() if p.role is Role.FOLLOWER)
        inactive = 0
        for partition in self.partitions.values():
            _, chunks = self._image_partition(partition)
            inactive += sum(1 for c in chunks if self.node_id in c.replicas)
        return leaders, followers, inactive

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Starts the periodic work: ISR checks, retention, flushes, HW checkpoints."""
        self._stopped = False
        loop = asyncio.get_running_loop()
        isr_every = max(self.config.replica_lag_time_max_ms / 2, 10) / 1000
        self._background = [
            loop.create_task(self._every(isr_every, self.check_isr, "ISR check")),
            loop.create_task(self._every(self.config.retention_check_interval_ms / 1000,
                                         self.run_retention, "retention")),
            loop.create_task(self._every(self.config.flush_check_interval_ms / 1000,
                                         self._flush, "flush")),
            loop.create_task(self._every(self.config.hw_checkpoint_interval_ms / 1000,
                                         self.checkpoint_high_watermarks, "HW checkpoint")),
        ]

    async def stop(self) -> None:
        """Stops every task (fetchers, copies, periodic work) and checkpoints HWs; the caller
        closes the logs."""
        self._stopped = True
        tasks: list[asyncio.Task[Any]] = list(self._background)
        for fetcher in self._fetchers.values():
            fetcher.members.clear()
            if fetcher.task is not None:
                tasks.append(fetcher.task)
        self._fetchers.clear()
        for partition in self.partitions.values():
            tasks.extend(partition.copies.values())
            partition.fetcher = None
            partition.copies.clear()
            partition.signal.notify()
        tasks.extend(self._alters)
        if self._reporter is not None:
            tasks.append(self._reporter)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._background = []
        self.checkpoint_high_watermarks()

    def checkpoint_high_watermarks(self) -> None:
        for partition in list(self.partitions.values()):
            if not partition.closed:
                for log_ in partition.all_logs():
                    log_.checkpoint_high_watermark()

    def _flush(self) -> None:
        self._maybe_reconcile()
        now = self.time_ms()
        for partition in list(self.partitions.values()):
            if not partition.closed:
                for log_ in partition.all_logs():
                    log_.maybe_flush(now)

    async def _every(self, period_s: float, action: Callable[[], None], name: str) -> None:
        while True:
            await asyncio.sleep(period_s)
            try:
                action()
            except Exception:
                log.exception("%s failed", name)


K = TypeVar("K")
V = TypeVar("V")


def _each(what: str, items: Iterable[tuple[K, V]], action: Callable[[K, V], None]) -> None:
    for key, value in items:
        try:
            action(key, value)
        except Exception:
            log.exception("%s %s failed", what, key)


async def _logged(work: Callable[[], Awaitable[None]], name: str) -> None:
    """Runs a background coroutine, logging (not losing) an unexpected failure. Takes a
    factory, so a task cancelled before it starts leaves no coroutine never awaited."""
    try:
        await work()
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("%s failed", name)
