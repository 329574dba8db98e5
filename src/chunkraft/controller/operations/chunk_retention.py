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
batch size); the rest wait for the next pass. ``retention.bytes`` is not applied across chunks
here (the controller does not know chunk sizes): it bounds each broker's log.
"""

from __future__ import annotations

from chunkraft.configs.resolve import topic_int
from chunkraft.controller.image import MetadataImage, TopicImage
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


def expired_chunks(image: MetadataImage, now_ms: int, *, limit: int = MAX_CHUNKS_PER_PASS
                   ) -> tuple[ChunkChangeRecord, ...]:
    """The records that delete every inactive chunk past its topic's retention (at most
    ``limit``); see the module docstring for the rule."""
    out: list[ChunkChangeRecord] = []
    for topic in image.topics.by_id.values():
        if len(out) >= limit:
            break
        if not topic.chunks:
            continue
        retention = topic_int(image.configs, topic.name, "retention.ms")
        if retention < 0:
            continue
        for partition_id in sorted(topic.chunks):
            record = topic.partition(partition_id)
            if record is None:
                continue
            for chunk in _expired(topic.chunks[partition_id], record, now_ms, retention):
                if len(out) >= limit:
                    break
                out.append(_removal(topic, chunk))
    return tuple(out)


def _expired(chunks: tuple[ChunkRecord, ...], active: PartitionRecord, now_ms: int,
             retention_ms: int) -> list[ChunkRecord]:
    """The oldest chunks of one partition whose every record is past ``retention_ms``."""
    expired: list[ChunkRecord] = []
    for position, chunk in enumerate(chunks):
        last = position + 1 == len(chunks)
        following = active.start_timestamp if last else chunks[position + 1].start_timestamp
        if last and chunk.end_offset >= active.start_offset:
            break  # the overlap of a transactional cut: the active chunk may still copy it
        if following < 0 or now_ms - following <= retention_ms:
            break
        expired.append(chunk)
    return expired


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
                          limit: int = MAX_CHUNKS_PER_PASS
                          ) -> ControllerResult[ChunkRetentionResponse]:
    """One retention pass as an operation: :func:`expired_chunks`' records, in one batch."""
    records = expired_chunks(image, now_ms, limit=limit)
    return ControllerResult.of(ChunkRetentionResponse(deleted=len(records)), records)
