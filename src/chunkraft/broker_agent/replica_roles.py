"""ReplicaRoles: this broker becoming leader or follower of active chunks, or leaving a partition.

A new leader (Kafka's ``makeLeader``) counts one more :attr:`Partition.leadership`, positions its
log at the active chunk's start, builds its ISR tracker, and either records its epoch's start at
the LEO or first copies the overlap with the previous chunk (derived from the image, so a
restart in the middle of the copy finishes it). The same leader epoch again is an ISR or replica
change. A follower (``makeFollower``) fetches from the leader through one
:class:`LeaderFetcher` per leader broker. A deleted partition goes with its chunk logs, unless
the name now belongs to a recreated topic.
"""

from __future__ import annotations

from collections.abc import Callable

from chunkraft.broker_agent.chunk_lookup import active_start
from chunkraft.broker_agent.chunk_replicas import ChunkReplicas
from chunkraft.broker_agent.isr import IsrTracker
from chunkraft.broker_agent.isr_updates import IsrUpdates
from chunkraft.broker_agent.partition import Partition, Role
from chunkraft.broker_agent.partition_registry import PartitionRegistry
from chunkraft.broker_agent.peer_client import PeerClientLike
from chunkraft.broker_agent.replica_fetcher import FollowerJob, LeaderFetcher
from chunkraft.broker_agent.replication_config import ReplicationConfig
from chunkraft.controller.image import LocalPartition, TopicIdPartition
from chunkraft.records import PartitionRecord

__all__ = ["ReplicaRoles"]


class ReplicaRoles:
    """Leader and follower transitions of active chunks, and partition deletes.

    Not thread-safe: every method runs on the broker's main event loop. :attr:`fetchers` holds
    one LeaderFetcher per leader broker followed (stopped by the ReplicaManager's stop).
    """

    def __init__(self, registry: PartitionRegistry, config: ReplicationConfig,
                 peers: PeerClientLike, broker_epoch: Callable[[], int],
                 time_ms: Callable[[], int], isr: IsrUpdates, chunks: ChunkReplicas) -> None:
        self.registry = registry
        self.config = config
        self.peers = peers
        self.broker_epoch = broker_epoch
        self.time_ms = time_ms
        self.isr = isr
        self.chunks = chunks
        self.fetchers: dict[int, LeaderFetcher] = {}

    @property
    def node_id(self) -> int:
        return self.registry.node_id

    def delete_partition(self, topic: str, tp: TopicIdPartition) -> None:
        registry = self.registry
        partition = registry.partitions.get((topic, tp.partition_id))
        if partition is not None and partition.topic_id != tp.topic_id:
            return  # the name now belongs to a recreated topic: not ours to delete
        log_ = registry.logs.get(topic, tp.partition_id)
        if log_ is not None and log_.topic_id != tp.topic_id:
            return
        registry.drop(topic, tp.partition_id)
        self.chunks.delete_chunk_logs(topic, tp.partition_id, tp.topic_id)
        if log_ is not None:
            registry.logs.delete(topic, tp.partition_id)

    @staticmethod
    def _position_for_active(partition: Partition, record: PartitionRecord) -> None:
        """The next append of a log short of the active chunk's start lands at that start.

        The offsets in between belong to chunks held elsewhere (a gap): an empty log simply
        starts there; a log holding older chunks gets an empty segment at the start.
        """
        partition.log.start_at(active_start(record))

    def become_leader(self, tp: TopicIdPartition, local: LocalPartition) -> None:
        partition = self.registry.partition(local.topic_name, tp)
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
            self.isr.advance_high_watermark(partition)
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
        overlap = self.chunks.overlap_of(partition, record)
        partition.overlap_pending = overlap is not None
        partition.leader_epoch_start = partition.log.log_end_offset
        if overlap is not None:
            self.chunks.start_overlap_copy(partition, *overlap)
        else:
            # Kafka's new leader records its epoch's start at the LEO: OffsetsForLeaderEpoch
            # then answers followers of an older epoch with where that epoch ended here.
            partition.log.maybe_assign_epoch_start_offset(record.leader_epoch,
                                                          partition.log.log_end_offset)
        self.isr.advance_high_watermark(partition)
        partition.signal.notify()

    def become_follower(self, tp: TopicIdPartition, local: LocalPartition) -> None:
        partition = self.registry.partition(local.topic_name, tp)
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
            target=self.registry.log_of(partition),
            broker_epoch=self.broker_epoch,
            on_progress=partition.signal.notify,
            fetch_wait_ms=self.config.replica_fetch_wait_max_ms,
            fetch_max_bytes=self.config.replica_fetch_max_bytes,
            backoff_s=self.config.replica_fetch_backoff_ms / 1000,
        )
        fetcher = self.fetchers.get(record.leader)
        if fetcher is None:
            fetcher = self.fetchers[record.leader] = LeaderFetcher(
                record.leader, self.node_id, self.peers, self.broker_epoch,
                fetch_wait_ms=self.config.replica_fetch_wait_max_ms,
                fetch_max_bytes=self.config.replica_fetch_max_bytes,
                backoff_s=self.config.replica_fetch_backoff_ms / 1000)
        partition.fetcher = fetcher.add(job)
        partition.fetcher_leader = record.leader
        partition.fetcher_epoch = record.leader_epoch
