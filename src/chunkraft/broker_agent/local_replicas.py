"""What a broker really holds on disk, partition by partition and chunk by chunk.

The controller's image says which brokers should hold which chunk; this view says what this
broker's log store holds: for each partition directory its log start and end offsets, high
watermark, last stable offset, segments, and for each chunk of the partition that overlaps the
local data the offsets and bytes held of it. Operators read it through
``GET /broker/v1/local-replicas``; tests check the chunk lifecycle at the log level with it; the
metadata audits compare it with the controller's assignment (drift).

Bytes per chunk are estimated from whole segments: a segment's bytes count towards every chunk
whose range it overlaps, scaled by the share of its offsets inside the chunk.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple, Protocol

from chunkraft.broker_agent.chunk_lookup import parse_chunk_log_topic
from chunkraft.broker_agent.storage.config import SegmentInfo
from chunkraft.controller.image import MetadataImage
from chunkraft.records import ChunkRecord, PartitionRecord

__all__ = ["LocalLogLike", "LogChunks", "assigned_chunks", "chunk_holdings", "local_replicas",
           "log_chunks"]


class LocalLogLike(Protocol):
    """The part of :class:`~chunkraft.broker_agent.storage.unified_log.UnifiedLog` read here."""

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def high_watermark(self) -> int: ...

    @property
    def last_stable_offset(self) -> int: ...

    @property
    def size_in_bytes(self) -> int: ...

    @property
    def segments(self) -> list[SegmentInfo]: ...


def _held(segments: list[SegmentInfo], log_start: int, first: int, last: int
          ) -> tuple[int, int, int]:
    """``(first held, last held, bytes)`` of offsets ``first..last`` (inclusive); (-1, -1, 0)
    when none is held."""
    low = high = -1
    size = 0.0
    for segment in segments:
        seg_first = max(segment.base_offset, log_start)
        seg_last = segment.next_offset - 1
        if seg_last < seg_first:
            continue
        a, b = max(first, seg_first), min(last, seg_last)
        if a > b:
            continue
        low = a if low < 0 else min(low, a)
        high = max(high, b)
        span = segment.next_offset - segment.base_offset
        size += segment.size_in_bytes * (b - a + 1) / span if span > 0 else 0
    return low, high, round(size)


def chunk_holdings(log: LocalLogLike, active: PartitionRecord | None,
                   chunks: Iterable[ChunkRecord]) -> list[dict[str, Any]]:
    """Per chunk of the partition (inactive by start offset, then the active one): the range it
    covers, whether this log holds any of it, and the offsets and bytes held."""
    segments = log.segments
    rows: list[dict[str, Any]] = []
    for chunk in sorted(chunks, key=lambda c: c.start_offset):
        first, last, size = _held(segments, log.log_start_offset, chunk.start_offset,
                                  chunk.end_offset)
        rows.append({"start_offset": chunk.start_offset, "stop_offset": chunk.stop_offset,
                     "end_offset": chunk.end_offset, "active": False,
                     "replicas": list(chunk.replicas), "first_offset_held": first,
                     "last_offset_held": last, "bytes_held": size})
    if active is not None:
        start = max(active.start_offset, 0)
        first, last, size = _held(segments, log.log_start_offset, start, 2**63 - 1)
        rows.append({"start_offset": active.start_offset, "stop_offset": -1, "end_offset": -1,
                     "active": True, "replicas": list(active.replicas),
                     "first_offset_held": first, "last_offset_held": last, "bytes_held": size})
    return rows


class LogChunks(NamedTuple):
    """What the image says of one local log: the topic it belongs to, the chunk log it is
    (``(topic, start offset)``) or None for a partition's own log, and its chunks."""

    owner: str
    chunk_log: tuple[str, int] | None
    active: PartitionRecord | None
    chunks: tuple[ChunkRecord, ...]


def log_chunks(name: str, partition_id: int, log: Any, image: MetadataImage) -> LogChunks:
    """The image's chunks of the local log ``name``-``partition_id``: a partition's log has its
    active chunk and every inactive one, a chunk log ``<topic>@<start>`` that chunk alone; none
    when the image has no such topic, or the log was left by a deleted topic of the same name
    (another topic id)."""
    parsed = parse_chunk_log_topic(name)
    owner = parsed[0] if parsed is not None else name
    topic = image.topics.get_by_name(owner)
    if topic is None or getattr(log, "topic_id", topic.topic_id) != topic.topic_id:
        return LogChunks(owner, parsed, None, ())
    if parsed is None:
        return LogChunks(owner, None, topic.partition(partition_id),
                         topic.chunks_of(partition_id))
    only = topic.chunk(partition_id, parsed[1])
    return LogChunks(owner, parsed, None, (only,) if only is not None else ())


def local_replicas(logs: dict[tuple[str, int], Any], image: MetadataImage
                   ) -> list[dict[str, Any]]:
    """Every local partition log (``LogManager.logs()``) described against ``image``, sorted
    by topic and partition. A directory of a topic the image no longer has lists no chunks.

    ``topic`` is the log's name in the store; a chunk kept in a log of its own
    (``<topic>@<start>``, see :mod:`chunkraft.broker_agent.chunk_lookup`) says so in
    ``chunk_log`` (``{"topic", "start_offset"}``, else null) and lists that chunk alone.
    ``directory`` is the log's directory name and ``topic_id`` the log's topic id.
    """
    answer: list[dict[str, Any]] = []
    for (topic_name, partition_id), log in sorted(logs.items()):
        found = log_chunks(topic_name, partition_id, log, image)
        parsed = found.chunk_log
        directory = getattr(log, "dir", None)
        topic_id = getattr(log, "topic_id", None)
        answer.append({
            "topic": topic_name,
            "partition": partition_id,
            "directory": directory.name if directory is not None
            else f"{topic_name}-{partition_id}",
            "topic_id": str(topic_id) if topic_id is not None else "",
            "chunk_log": ({"topic": parsed[0], "start_offset": parsed[1]}
                          if parsed is not None else None),
            "log_start_offset": log.log_start_offset,
            "log_end_offset": log.log_end_offset,
            "high_watermark": log.high_watermark,
            "last_stable_offset": log.last_stable_offset,
            "size_bytes": log.size_in_bytes,
            "segments": [{"base_offset": s.base_offset, "next_offset": s.next_offset,
                          "size_bytes": s.size_in_bytes, "max_timestamp": s.max_timestamp}
                         for s in log.segments],
            "chunks": chunk_holdings(log, found.active, found.chunks),
        })
    return answer


def assigned_chunks(image: MetadataImage, broker_id: int) -> list[dict[str, Any]]:
    """Every chunk ``image`` makes ``broker_id`` a replica of: inactive chunks listing it in
    ``replicas``, and active chunks (partitions) listing it; sorted by topic, partition, start.
    """
    answer: list[dict[str, Any]] = []
    for topic in sorted(image.topics, key=lambda t: t.name):
        rows: list[dict[str, Any]] = []
        for partition in topic.partitions.values():
            if broker_id in partition.replicas:
                rows.append({"partition": partition.partition_id,
                             "start_offset": partition.start_offset, "stop_offset": -1,
                             "end_offset": -1, "active": True})
        for chunks in topic.chunks.values():
            for chunk in chunks:
                if broker_id in chunk.replicas:
                    rows.append({"partition": chunk.partition_id,
                                 "start_offset": chunk.start_offset,
                                 "stop_offset": chunk.stop_offset,
                                 "end_offset": chunk.end_offset, "active": False})
        rows.sort(key=lambda r: (r["partition"], r["start_offset"]))
        for row in rows:
            answer.append({"topic": topic.name, "topic_id": str(topic.topic_id), **row})
    return answer
