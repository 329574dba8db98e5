"""What a metadata delta asks of one broker's replicas: all a ReplicaManager needs.

``compute_local_changes(delta.topics_delta, broker_id)`` reads a :class:`TopicsDelta` and its base
image; the delta does not know this module (the dependency runs one way: delta <- local changes).

For broker ``b`` and each partition the delta touches (``old`` / ``new``: the partition's active
chunk before and after; ``chunks``: its inactive chunks), as docs/image.md specifies:

- ``deletes``: b hosted something of the partition (the active chunk or an inactive chunk) and
  now hosts nothing of it, or the topic was deleted: remove the whole partition directory.
- ``leaders`` / ``followers``: the active chunk changed (new, or a new partition epoch) and b is
  its leader / another replica. ``elected_leaders``: leaders whose leader epoch changed.
- ``chunk_stops``: a chunk cut in this delta from an active chunk b was a replica of: stop
  appending, keep the data, serve reads up to its stop offset.
- ``chunk_creates``: b must build a replica it did not have: an inactive chunk (copy start..end
  from its ISR), or the new active chunk after a cut when b did not replicate the old one (copy the
  overlap start..previous end from the cut chunk's ISR before accepting appends).
- ``chunk_deletes``: b leaves an inactive chunk (moved away or removed), or leaves the active
  chunk of a partition it keeps inactive chunks of: delete just that chunk's data.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from chunkraft.records import ChunkRecord, PartitionRecord

if TYPE_CHECKING:
    from chunkraft.controller.image.topics import TopicImage
    from chunkraft.controller.image.topics_delta import TopicsDelta

__all__ = [
    "ChunkCreate",
    "ChunkDelete",
    "ChunkKey",
    "LocalPartition",
    "LocalReplicaChanges",
    "TopicIdPartition",
    "compute_local_changes",
    "partition_local_changes",
]


class TopicIdPartition(NamedTuple):
    """A partition, named by topic id."""

    topic_id: uuid.UUID
    partition_id: int


class ChunkKey(NamedTuple):
    """A chunk, named by topic id, partition and start offset."""

    topic_id: uuid.UUID
    partition_id: int
    start_offset: int


class LocalPartition(NamedTuple):
    """A partition's active chunk that this broker leads or follows."""

    topic_name: str
    partition: PartitionRecord


class ChunkCreate(NamedTuple):
    """Build a chunk replica: copy ``start_offset``..``end_offset`` (inclusive) from ``sources``.

    ``active`` is True for the new active chunk after a cut (``end_offset`` is then the end of the
    overlap with the cut chunk, possibly ``start_offset - 1``: nothing to copy).
    ``sources`` are the in-sync replicas holding the data, without this broker.
    """

    topic_name: str
    start_offset: int
    end_offset: int
    sources: tuple[int, ...]
    active: bool


class ChunkDelete(NamedTuple):
    """Delete a chunk's local data: offsets ``start_offset``..``end_offset`` (-1: to the end)."""

    topic_name: str
    start_offset: int
    end_offset: int
    active: bool


@dataclass(frozen=True)
class LocalReplicaChanges:
    """The changes one broker must make; empty maps when the delta does not concern it.

    Built once by :func:`compute_local_changes` and then only read (the maps are plain dicts
    for speed; treat them as read-only).
    """

    deletes: dict[TopicIdPartition, str] = field(default_factory=dict)
    leaders: dict[TopicIdPartition, LocalPartition] = field(default_factory=dict)
    elected_leaders: dict[TopicIdPartition, LocalPartition] = field(default_factory=dict)
    followers: dict[TopicIdPartition, LocalPartition] = field(default_factory=dict)
    chunk_stops: dict[ChunkKey, ChunkRecord] = field(default_factory=dict)
    chunk_creates: dict[ChunkKey, ChunkCreate] = field(default_factory=dict)
    chunk_deletes: dict[ChunkKey, ChunkDelete] = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (
            self.deletes
            or self.leaders
            or self.followers
            or self.chunk_stops
            or self.chunk_creates
            or self.chunk_deletes
        )


def _hosts(broker_id: int, active: PartitionRecord | None, chunks: tuple[ChunkRecord, ...]) -> bool:
    if active is not None and broker_id in active.replicas:
        return True
    return any(broker_id in c.replicas for c in chunks)


def partition_local_changes(
    out: LocalReplicaChanges,
    broker_id: int,
    topic_id: uuid.UUID,
    topic_name: str,
    partition_id: int,
    old: PartitionRecord | None,
    old_chunks: tuple[ChunkRecord, ...],
    new: PartitionRecord | None,
    new_chunks: tuple[ChunkRecord, ...],
) -> None:
    """Adds to ``out`` what one partition's change means for ``broker_id``."""
    tp = TopicIdPartition(topic_id, partition_id)
    if not _hosts(broker_id, new, new_chunks):
        if _hosts(broker_id, old, old_chunks):
            out.deletes[tp] = topic_name
        return

    if new is not None and (old is None or old.partition_epoch != new.partition_epoch):
        local = LocalPartition(topic_name, new)
        if new.leader == broker_id:
            out.leaders[tp] = local
            if old is None or old.leader_epoch != new.leader_epoch:
                out.elected_leaders[tp] = local
        elif broker_id in new.replicas:
            out.followers[tp] = local

    old_by_start = {c.start_offset: c for c in old_chunks}
    new_by_start = {c.start_offset: c for c in new_chunks}
    was_active_replica = old is not None and broker_id in old.replicas
    for start, chunk in new_by_start.items():
        if broker_id not in chunk.replicas:
            continue
        before = old_by_start.get(start)
        key = ChunkKey(topic_id, partition_id, start)
        if before is None:
            if was_active_replica and old is not None and start >= old.start_offset:
                out.chunk_stops[key] = chunk  # cut from the active chunk this broker replicated
            else:
                out.chunk_creates[key] = _inactive_create(topic_name, chunk, broker_id)
        elif broker_id not in before.replicas:
            out.chunk_creates[key] = _inactive_create(topic_name, chunk, broker_id)

    for start, chunk in old_by_start.items():
        after = new_by_start.get(start)
        if broker_id in chunk.replicas and (after is None or broker_id not in after.replicas):
            key = ChunkKey(topic_id, partition_id, start)
            out.chunk_deletes[key] = ChunkDelete(topic_name, start, chunk.end_offset, False)

    if old is None or new is None:
        return
    cut = new.start_offset != old.start_offset
    now_active_replica = broker_id in new.replicas
    if cut and now_active_replica and not was_active_replica:
        previous = _chunk_before(new_chunks, new.start_offset)
        end = previous.end_offset if previous is not None else new.start_offset - 1
        sources = tuple(b for b in previous.isr if b != broker_id) if previous else ()
        key = ChunkKey(topic_id, partition_id, new.start_offset)
        out.chunk_creates[key] = ChunkCreate(topic_name, new.start_offset, end, sources, True)
    elif not cut and was_active_replica and not now_active_replica:
        key = ChunkKey(topic_id, partition_id, old.start_offset)
        out.chunk_deletes[key] = ChunkDelete(topic_name, old.start_offset, -1, True)


def _inactive_create(topic_name: str, chunk: ChunkRecord, broker_id: int) -> ChunkCreate:
    sources = tuple(b for b in chunk.isr if b != broker_id)
    return ChunkCreate(topic_name, chunk.start_offset, chunk.end_offset, sources, False)


def _chunk_before(chunks: tuple[ChunkRecord, ...], start_offset: int) -> ChunkRecord | None:
    previous = None
    for chunk in chunks:
        if chunk.start_offset < start_offset:
            previous = chunk
    return previous


def _deleted_topic_changes(out: LocalReplicaChanges, broker_id: int, topic: TopicImage) -> None:
    for partition_id, partition in topic.partitions.items():
        if _hosts(broker_id, partition, topic.chunks_of(partition_id)):
            out.deletes[TopicIdPartition(topic.topic_id, partition_id)] = topic.name


def compute_local_changes(delta: TopicsDelta, broker_id: int) -> LocalReplicaChanges:
    """Walks only what the delta changed: cost grows with the delta, not the image."""
    out = LocalReplicaChanges()
    for topic in delta.deleted.values():
        _deleted_topic_changes(out, broker_id, topic)
    for topic_id, topic_delta in delta.changed.items():
        base = topic_delta.image
        for partition_id in topic_delta.changed_partition_ids():
            old = base.partition(partition_id) if base is not None else None
            old_chunks = base.chunks_of(partition_id) if base is not None else ()
            partition_local_changes(
                out,
                broker_id,
                topic_id,
                topic_delta.name,
                partition_id,
                old,
                old_chunks,
                topic_delta.partition(partition_id),
                topic_delta.chunks_of(partition_id),
            )
    return out
