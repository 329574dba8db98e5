"""The topics part of the image: topics, their partitions (active chunks) and inactive chunks.

A partition's state is its :class:`PartitionRecord` and an inactive chunk's state is its
:class:`ChunkRecord`, kept current by replay: both are immutable, so the image stores them as they
are and a snapshot writes them back out unchanged. Each topic holds persistent maps (HAMTs), so a
change to one partition of a topic with 100,000 partitions copies O(log n) nodes, not the topic.
"""

from __future__ import annotations

import bisect
import hashlib
import uuid
from collections.abc import Iterator
from typing import Any, ClassVar

import immutables

from chunkraft.records import ChunkRecord, PartitionRecord, TopicRecord, encode_record

__all__ = ["TopicImage", "TopicsImage"]

PartitionMap = immutables.Map[int, PartitionRecord]
ChunkMap = immutables.Map[int, tuple[ChunkRecord, ...]]


class TopicImage:
    """One topic: name, id, partitions by id, and inactive chunks by partition id.

    ``chunks[p]`` is a tuple of ChunkRecords sorted by start offset; partitions without inactive
    chunks have no entry. Immutable and thread-safe; its content digest is computed once.
    """

    __slots__ = ("_digest", "chunks", "name", "partitions", "topic_id")

    def __init__(
        self,
        name: str,
        topic_id: uuid.UUID,
        partitions: PartitionMap,
        chunks: ChunkMap,
    ) -> None:
        self.name = name
        self.topic_id = topic_id
        self.partitions = partitions
        self.chunks = chunks
        self._digest: bytes | None = None

    def partition(self, partition_id: int) -> PartitionRecord | None:
        return self.partitions.get(partition_id)

    def chunks_of(self, partition_id: int) -> tuple[ChunkRecord, ...]:
        return self.chunks.get(partition_id, ())

    def chunk(self, partition_id: int, start_offset: int) -> ChunkRecord | None:
        chunks = self.chunks.get(partition_id, ())
        index = bisect.bisect_left(chunks, start_offset, key=_start_offset)
        if index < len(chunks) and chunks[index].start_offset == start_offset:
            return chunks[index]
        return None

    def chunk_count(self) -> int:
        return sum(len(c) for c in self.chunks.values())

    def to_records(self) -> Iterator[Any]:
        """TopicRecord, then PartitionRecords by id, then ChunkRecords by (partition, start)."""
        yield TopicRecord(name=self.name, topic_id=self.topic_id)
        partitions = self.partitions
        for partition_id in sorted(partitions):
            yield partitions[partition_id]
        chunks = self.chunks
        for partition_id in sorted(chunks):
            yield from chunks[partition_id]

    def encoded_records(self) -> list[bytes]:
        """:meth:`to_records`, encoded; fills the digest cache on the way (snapshots hash free)."""
        encoded = [encode_record(record) for record in self.to_records()]
        if self._digest is None:
            self._digest = hashlib.sha256(b"".join(encoded)).digest()
        return encoded

    def digest(self) -> bytes:
        """SHA-256 of the topic's encoded records (each encoding is self-delimiting, so their
        concatenation identifies the sequence); stable across processes."""
        if self._digest is None:
            self.encoded_records()
            assert self._digest is not None
        return self._digest

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TopicImage):
            return NotImplemented
        return (
            self.name == other.name
            and self.topic_id == other.topic_id
            and self.partitions == other.partitions
            and self.chunks == other.chunks
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"TopicImage(name={self.name!r}, topic_id={self.topic_id}, "
            f"partitions={len(self.partitions)}, chunks={self.chunk_count()})"
        )


def _start_offset(chunk: ChunkRecord) -> int:
    return chunk.start_offset


class TopicsImage:
    """All topics, by id and by name. Immutable and thread-safe."""

    __slots__ = ("by_id", "by_name")
    EMPTY: ClassVar[TopicsImage]

    def __init__(
        self,
        by_id: immutables.Map[uuid.UUID, TopicImage],
        by_name: immutables.Map[str, TopicImage],
    ) -> None:
        self.by_id = by_id
        self.by_name = by_name

    def get(self, topic_id: uuid.UUID) -> TopicImage | None:
        return self.by_id.get(topic_id)

    def get_by_name(self, name: str) -> TopicImage | None:
        return self.by_name.get(name)

    def __len__(self) -> int:
        return len(self.by_id)

    def __iter__(self) -> Iterator[TopicImage]:
        """Topics in name order."""
        by_name = self.by_name
        for name in sorted(by_name):
            yield by_name[name]

    def partition_count(self) -> int:
        return sum(len(t.partitions) for t in self.by_id.values())

    def chunk_count(self) -> int:
        return sum(t.chunk_count() for t in self.by_id.values())

    def to_records(self) -> Iterator[Any]:
        for topic in self:
            yield from topic.to_records()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TopicsImage) and self.by_id == other.by_id

    __hash__ = None  # type: ignore[assignment]


TopicsImage.EMPTY = TopicsImage(immutables.Map(), immutables.Map())
