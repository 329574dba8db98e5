"""Replays topic, partition and chunk records on top of a TopicsImage."""

from __future__ import annotations

import uuid

import immutables

from chunkraft.controller.image.partition_merge import merge_partition_change
from chunkraft.controller.image.topics import TopicImage, TopicsImage
from chunkraft.errors import InvariantError
from chunkraft.records import (
    ChunkChangeRecord,
    ChunkRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from chunkraft.records.uuids import kafka_uuid_str

__all__ = ["TopicDelta", "TopicsDelta"]


class TopicDelta:
    """The changes to one topic; ``image`` is None for a topic created in this delta.

    ``partition_changes`` holds the new full state of each changed partition and
    ``chunk_changes[p][start]`` the new state of each changed chunk (None: removed).
    Not thread-safe: one replayer at a time.
    """

    __slots__ = ("chunk_changes", "image", "name", "partition_changes", "topic_id")

    def __init__(self, image: TopicImage | None, name: str, topic_id: uuid.UUID) -> None:
        self.image = image
        self.name = name
        self.topic_id = topic_id
        self.partition_changes: dict[int, PartitionRecord] = {}
        self.chunk_changes: dict[int, dict[int, ChunkRecord | None]] = {}

    def partition(self, partition_id: int) -> PartitionRecord | None:
        found = self.partition_changes.get(partition_id)
        if found is None and self.image is not None:
            found = self.image.partitions.get(partition_id)
        return found

    def chunk(self, partition_id: int, start_offset: int) -> ChunkRecord | None:
        changes = self.chunk_changes.get(partition_id)
        if changes is not None and start_offset in changes:
            return changes[start_offset]
        if self.image is None:
            return None
        return self.image.chunk(partition_id, start_offset)

    def chunks_of(self, partition_id: int) -> tuple[ChunkRecord, ...]:
        """The partition's inactive chunks after this delta, by start offset."""
        base = self.image.chunks_of(partition_id) if self.image is not None else ()
        changes = self.chunk_changes.get(partition_id)
        if not changes:
            return base
        merged = {c.start_offset: c for c in base}
        for start, chunk in changes.items():
            if chunk is None:
                merged.pop(start, None)
            else:
                merged[start] = chunk
        return tuple(merged[s] for s in sorted(merged))

    def changed_partition_ids(self) -> set[int]:
        return set(self.partition_changes) | set(self.chunk_changes)

    def _require_partition(self, partition_id: int, what: str) -> PartitionRecord:
        partition = self.partition(partition_id)
        if partition is None:
            raise InvariantError(
                f"{what} for unknown partition {self.name}-{partition_id} "
                f"(topic id {kafka_uuid_str(self.topic_id)})"
            )
        return partition

    def replay_partition(self, record: PartitionRecord) -> None:
        self.partition_changes[record.partition_id] = record

    def replay_partition_change(self, record: PartitionChangeRecord) -> None:
        partition = self._require_partition(record.partition_id, "PartitionChangeRecord")
        self.partition_changes[record.partition_id] = merge_partition_change(partition, record)

    def replay_chunk(self, record: ChunkRecord) -> None:
        self._require_partition(record.partition_id, "ChunkRecord")
        changes = self.chunk_changes.get(record.partition_id)
        if changes is None:
            changes = self.chunk_changes[record.partition_id] = {}
        changes[record.start_offset] = record

    def replay_chunk_change(self, record: ChunkChangeRecord) -> None:
        self._require_partition(record.partition_id, "ChunkChangeRecord")
        chunk = self.chunk(record.partition_id, record.start_offset)
        if chunk is None:
            raise InvariantError(
                f"ChunkChangeRecord for unknown chunk {self.name}-{record.partition_id} "
                f"at start offset {record.start_offset}"
            )
        if record.epoch != chunk.epoch + 1:
            raise InvariantError(
                f"ChunkChangeRecord for chunk {self.name}-{record.partition_id}@"
                f"{record.start_offset} has epoch {record.epoch}; expected {chunk.epoch + 1}"
            )
        changes = self.chunk_changes.setdefault(record.partition_id, {})
        if not record.replicas:
            changes[record.start_offset] = None
            return
        changes[record.start_offset] = chunk._replace(
            replicas=record.replicas,
            isr=record.isr,
            removing_replicas=record.removing_replicas,
            adding_replicas=record.adding_replicas,
            directories=chunk.directories if record.directories is None else record.directories,
            chunk_epoch=record.epoch,
            epoch=record.epoch,
        )

    def apply(self) -> TopicImage:
        base = self.image
        if base is None:
            partitions = immutables.Map(self.partition_changes)
            chunk_lists = {p: self.chunks_of(p) for p in self.chunk_changes}
            chunks = immutables.Map({p: c for p, c in chunk_lists.items() if c})
            return TopicImage(self.name, self.topic_id, partitions, chunks)
        partitions = base.partitions
        if self.partition_changes:
            partitions = partitions.update(self.partition_changes)
        chunks = base.chunks
        if self.chunk_changes:
            mutable = chunks.mutate()
            for partition_id in self.chunk_changes:
                merged = self.chunks_of(partition_id)
                if merged:
                    mutable[partition_id] = merged
                else:
                    mutable.pop(partition_id, None)
            chunks = mutable.finish()
        return TopicImage(self.name, self.topic_id, partitions, chunks)


class TopicsDelta:
    """Topic changes on top of a base :class:`TopicsImage`; not thread-safe (one replayer).

    What a delta means for the replicas one broker hosts is computed from it, outside it:
    ``compute_local_changes(delta, broker_id)`` (local_changes.py) reads ``changed`` and
    ``deleted``; the delta itself knows nothing of brokers.
    """

    def __init__(self, base: TopicsImage) -> None:
        self.base = base
        self.changed: dict[uuid.UUID, TopicDelta] = {}
        self.deleted: dict[uuid.UUID, TopicImage] = {}  # topics of the base image now removed
        self._names: dict[str, uuid.UUID | None] = {}  # name changes: None = name now free

    def _topic_id_for_name(self, name: str) -> uuid.UUID | None:
        if name in self._names:
            return self._names[name]
        topic = self.base.get_by_name(name)
        return topic.topic_id if topic is not None else None

    def _topic(self, topic_id: uuid.UUID, what: str) -> TopicDelta:
        delta = self.changed.get(topic_id)
        if delta is None:
            image = self.base.get(topic_id)
            if image is None or topic_id in self.deleted:
                raise InvariantError(
                    f"{what} for unknown topic id {kafka_uuid_str(topic_id)}"
                )
            delta = self.changed[topic_id] = TopicDelta(image, image.name, topic_id)
        return delta

    def replay_topic(self, record: TopicRecord) -> None:
        owner = self._topic_id_for_name(record.name)
        if owner is not None and owner != record.topic_id:
            raise InvariantError(
                f"TopicRecord {record.name!r} with id {kafka_uuid_str(record.topic_id)}: the name "
                f"belongs to topic id {kafka_uuid_str(owner)}"
            )
        if owner == record.topic_id:
            return  # the same topic again (a snapshot replayed over its own log): no change
        existing = self.base.get(record.topic_id)
        if record.topic_id in self.changed or (
            existing is not None and record.topic_id not in self.deleted
        ):
            raise InvariantError(
                f"TopicRecord {record.name!r}: topic id {kafka_uuid_str(record.topic_id)} "
                "already names another topic"
            )
        self.changed[record.topic_id] = TopicDelta(None, record.name, record.topic_id)
        self._names[record.name] = record.topic_id

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        """The name of topic ``topic_id`` as this delta sees it, or None if there is none."""
        delta = self.changed.get(topic_id)
        if delta is not None:
            return delta.name
        topic = self.base.by_id.get(topic_id)
        return None if topic is None else topic.name

    def replay_remove_topic(self, record: RemoveTopicRecord) -> None:
        delta = self._topic(record.topic_id, "RemoveTopicRecord")
        del self.changed[record.topic_id]
        if delta.image is not None:
            self.deleted[record.topic_id] = delta.image
        self._names[delta.name] = None

    def replay_partition(self, record: PartitionRecord) -> None:
        self._topic(record.topic_id, "PartitionRecord").replay_partition(record)

    def replay_partition_change(self, record: PartitionChangeRecord) -> None:
        self._topic(record.topic_id, "PartitionChangeRecord").replay_partition_change(record)

    def replay_chunk(self, record: ChunkRecord) -> None:
        self._topic(record.topic_id, "ChunkRecord").replay_chunk(record)

    def replay_chunk_change(self, record: ChunkChangeRecord) -> None:
        self._topic(record.topic_id, "ChunkChangeRecord").replay_chunk_change(record)

    def apply(self) -> TopicsImage:
        if not self.changed and not self.deleted:
            return self.base
        by_id = self.base.by_id.mutate()
        by_name = self.base.by_name.mutate()
        for topic_id, image in self.deleted.items():
            by_id.pop(topic_id, None)
            if by_name.get(image.name) is image:
                by_name.pop(image.name)
        for topic_id, delta in self.changed.items():
            topic = delta.apply()
            by_id[topic_id] = topic
            by_name[topic.name] = topic
        return TopicsImage(by_id.finish(), by_name.finish())
