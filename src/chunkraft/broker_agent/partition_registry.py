"""PartitionRegistry: this broker's Partition objects beside the metadata image and the log store.

The one place the replica code (roles, chunks, ISR, the data-plane paths) finds a partition, its
log, and what the current image says of it. It only keeps and looks up: every decision is in the
modules that use it (``replica_roles``, ``chunk_replicas``, ``isr_updates``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from chunkraft.broker_agent.partition import Partition, Role
from chunkraft.controller.image import MetadataImage, TopicIdPartition
from chunkraft.records import ChunkRecord, PartitionRecord

if TYPE_CHECKING:
    from chunkraft.broker_agent.storage import LogManager, UnifiedLog

__all__ = ["PartitionRegistry"]

PartitionKey = tuple[str, int]
"""(topic name, partition index)."""


class PartitionRegistry:
    """The partitions this broker holds, by (topic, index), and the image they follow.

    ``image`` is replaced by the ReplicaManager on every delta; ``partitions`` is a plain dict
    the data-plane paths read. Not thread-safe: used on the broker's main event loop only.
    """

    def __init__(self, node_id: int, logs: LogManager) -> None:
        self.node_id = node_id
        self.logs = logs
        self.image = MetadataImage.EMPTY
        self.partitions: dict[PartitionKey, Partition] = {}

    def partition(self, topic: str, tp: TopicIdPartition) -> Partition:
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

    def log_of(self, partition: Partition) -> Callable[[], UnifiedLog | None]:
        """The partition's log while the partition is still the registered one, else None: a
        fetcher or copy holding this stops writing once the partition is closed or replaced."""
        def current() -> UnifiedLog | None:
            if partition.closed or self.partitions.get((partition.topic, partition.index)) \
                    is not partition:
                return None
            return partition.log
        return current

    def drop(self, topic: str, index: int) -> None:
        """Forgets the partition and stops its tasks; its log is the caller's to delete."""
        partition = self.partitions.pop((topic, index), None)
        if partition is not None:
            partition.close()

    def image_partition(self, partition: Partition) -> tuple[PartitionRecord | None,
                                                             tuple[ChunkRecord, ...]]:
        """The image's active chunk record and inactive chunks of the partition."""
        topic = self.image.topics.get(partition.topic_id)
        if topic is None:
            return None, ()
        return topic.partition(partition.index), topic.chunks_of(partition.index)

    @staticmethod
    def leave_active(partition: Partition) -> None:
        """This broker is no replica of the active chunk any more; its data stays."""
        partition.stop_fetcher()
        partition.role = Role.NONE
        partition.record = None
        partition.tracker = None
        partition.appends_paused = False
        partition.overlap_pending = False
        partition.signal.notify()
