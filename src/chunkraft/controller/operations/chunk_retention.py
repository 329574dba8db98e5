"""Retention across chunks (KIP-1114's automatic chunk deletion), decided by the controller.

A pure function of (image, now) -> records, run periodically by the leader
(:mod:`chunkraft.controller.chunk_retention`). The rule, per partition:

- the topic's effective ``retention.ms`` is the topic's key, else the cluster default of
  ``log.retention.ms``, else the declared default (7 days). A broker's own properties file is
  not metadata, so it plays no part here (it still drives that broker's per-log retention);
  ``-1`` keeps the topic's chunks forever;
- every record of an inactive chunk is older than the StartTimestamp of the chunk that follows
  it (the next inactive chunk, or the active chunk's StartTimestamp in its PartitionRecord):
  the following chunk was cut after the last append to this one, and a cut's StartTimestamp is
  the leader's clock at the cut. So the chunk is past retention once
  ``now - following StartTimestamp > retention.ms`` (Kafka's test for a segment, with the
  following chunk's start standing in for the segment's largest timestamp). A record whose
  producer-set timestamp is later than the cut's clock is deleted by this rule anyway;
- a following StartTimestamp of -1 (unknown) never expires anything;
- the active chunk is never deleted, nor the last inactive chunk while it overlaps the active
  chunk (EndOffset >= the active StartOffset: a cut with an open transaction, whose overlap
  the active chunk's new leader may still be copying from it);
- only a prefix of a partition's chunks goes (chunks are cut in time order, so an expired chunk
  has only expired chunks before it), oldest first.

Each deleted chunk is one ChunkChangeRecord with ``Replicas = []`` and the chunk's epoch + 1,
the record replay already takes as "remove the chunk"; its replicas drop their data through
``local_changes``' chunk deletes. One pass deletes at most ``limit`` chunks (bounded work and
batch size); the rest wait for the next pass.

``retention.bytes`` (the topic's key, else the cluster default of ``log.retention.bytes``,
else -1: no limit) bounds the whole partition, all its chunks and the active one together, by
Kafka's rule for a log's segments: the oldest inactive chunk goes while the partition's size
without it is still at least ``retention.bytes``. Sizes are what brokers reported
(:class:`~chunkraft.controller.operations.chunk_sizes.ChunkSizeTable`); a chunk nobody
reported counts as 0 bytes, so the total is not above the real one (but for the offsets a
transactional cut leaves in two chunks at once, counted in both) and no chunk goes that Kafka's
rule would keep. The same exclusions hold (never the active chunk, nor an overlapping
last inactive one). A chunk goes when either rule says so: each deletes a prefix of the
partition's chunks, and the longer prefix is deleted.
"""

from __future__ import annotations

from collections.abc import Mapping

from chunkraft.configs.resolve import topic_int
from chunkraft.controller.image import MetadataImage, TopicImage
from chunkraft.controller.operations.chunk_sizes import ChunkKey
from chunkraft.controller.result import ControllerResult
from chunkraft.protocol.base import Message
from chunkraft.records import ChunkChangeRecord, ChunkRecord, PartitionRecord

__all__ = ["MAX_CHUNKS_PER_PASS", "ChunkRetentionResponse", "delete_expired_chunks",
           "expired_chunks"]

MAX_CHUNKS_PER_PASS = 1000
"""Chunks one retention pass deletes at most: one batch of this many records."""


class ChunkRetentionResponse(Message):
    """What a retention pass did: how many inactive chunks it deleted."""

    deleted: int


def expired_chunks(image: MetadataImage, now_ms: int, *, limit: int = MAX_CHUNKS_PER_PASS,
                   sizes: Mapping[ChunkKey, int] | None = None
                   ) -> tuple[ChunkChangeRecord, ...]:
    """The records that delete every inactive chunk past its topic's retention by time, or by
    size given the chunks' ``sizes`` (at most ``limit``); see the module docstring."""
    out: list[ChunkChangeRecord] = []
    known = sizes if sizes is not None else {}
    for topic in image.topics.by_id.values():
        if len(out) >= limit:
            break
        if not topic.chunks:
            continue
        retention_ms = topic_int(image.configs, topic.name, "retention.ms")
        retention_bytes = topic_int(image.configs, topic.name, "retention.bytes")
        if retention_ms < 0 and retention_bytes < 0:
            continue
        for partition_id in sorted(topic.chunks):
            record = topic.partition(partition_id)
            if record is None:
                continue
            every = topic.chunks[partition_id]
            chunks = _deletable(every, record)
            by_time = _expired_by_time(every, len(chunks), record, now_ms, retention_ms)
            by_size = _excess_by_size(topic, every, len(chunks), record, known,
                                      retention_bytes)
            for chunk in chunks[:max(by_time, by_size)]:
                if len(out) >= limit:
                    break
                out.append(_removal(topic, chunk))
    return tuple(out)


def _deletable(chunks: tuple[ChunkRecord, ...], active: PartitionRecord
               ) -> tuple[ChunkRecord, ...]:
    """The inactive chunks either rule may delete: all but a last one that overlaps the active
    chunk (a cut with an open transaction, whose overlap the active chunk's new leader may
    still be copying from it)."""
    if chunks and chunks[-1].end_offset >= active.start_offset:
        return chunks[:-1]
    return chunks


def _expired_by_time(chunks: tuple[ChunkRecord, ...], deletable: int, active: PartitionRecord,
                     now_ms: int, retention_ms: int) -> int:
    """How many of the oldest ``deletable`` of ``chunks`` have every record past
    ``retention_ms``."""
    if retention_ms < 0:
        return 0
    count = 0
    for position in range(deletable):
        following = (chunks[position + 1].start_timestamp if position + 1 < len(chunks)
                     else active.start_timestamp)
        if following < 0 or now_ms - following <= retention_ms:
            break
        count += 1
    return count


def _excess_by_size(topic: TopicImage, chunks: tuple[ChunkRecord, ...], deletable: int,
                    active: PartitionRecord, sizes: Mapping[ChunkKey, int],
                    retention_bytes: int) -> int:
    """How many of the oldest ``deletable`` of ``chunks`` go for the partition (``chunks`` and
    the ``active`` one) to keep no more than ``retention_bytes``."""
    if retention_bytes < 0 or deletable == 0:
        return 0
    topic_id, partition_id = topic.topic_id, active.partition_id
    each = [sizes.get((topic_id, partition_id, chunk.start_offset), 0) for chunk in chunks]
    total = sum(each) + sizes.get((topic_id, partition_id, active.start_offset), 0)
    count = 0
    for size in each[:deletable]:
        if total - size < retention_bytes:
            break
        total -= size
        count += 1
    return count


def _removal(topic: TopicImage, chunk: ChunkRecord) -> ChunkChangeRecord:
    return ChunkChangeRecord(
        partition_id=chunk.partition_id,
        topic_id=topic.topic_id,
        start_offset=chunk.start_offset,
        replicas=(),
        directories=() if chunk.directories else None,
        isr=(),
        removing_replicas=(),
        adding_replicas=(),
        epoch=chunk.epoch + 1,
    )


def delete_expired_chunks(image: MetadataImage, now_ms: int, *,
                          limit: int = MAX_CHUNKS_PER_PASS,
                          sizes: Mapping[ChunkKey, int] | None = None
                          ) -> ControllerResult[ChunkRetentionResponse]:
    """One retention pass as an operation: :func:`expired_chunks`' records, in one batch."""
    records = expired_chunks(image, now_ms, limit=limit, sizes=sizes)
    return ControllerResult.of(ChunkRetentionResponse(deleted=len(records)), records)
