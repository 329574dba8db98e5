"""ChunkSizeTable: the leader's memory of how many bytes brokers hold of each chunk.

Soft, leader-local state, like :mod:`~chunkraft.controller.operations.heartbeats`: brokers
report sizes (:mod:`chunkraft.protocol.chunk_sizes`) and nothing is written to the log, so the
reports cost no log writes and a new leader starts empty and learns them from the next reports.
The retention pass (:mod:`chunkraft.controller.operations.chunk_retention`) reads
:meth:`ChunkSizeTable.sizes` to apply ``retention.bytes`` across a partition's chunks.

A chunk's size is the largest any broker reported for it: a replica still copying the chunk,
or one whose own log retention already removed its oldest segments, holds less than the chunk,
never more. A chunk no broker reported counts as 0 bytes, so the sum over a partition is never
above its real size and retention by size never deletes a chunk that Kafka's rule would keep.
"""

from __future__ import annotations

import threading
import uuid

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.chunks import check_broker_epoch
from chunkraft.controller.result import ControllerResult
from chunkraft.error_codes import ApiException
from chunkraft.protocol.chunk_sizes import ChunkSizesRequest, ChunkSizesResponse

__all__ = ["ChunkKey", "ChunkSizeTable", "report_chunk_sizes"]

ChunkKey = tuple[uuid.UUID, int, int]
"""(topic id, partition, chunk start offset): the active chunk's start offset is its
PartitionRecord's ``start_offset``, which stays the chunk's key once it is cut."""


class ChunkSizeTable:
    """The latest reported bytes per (chunk, broker); thread-safe (reports are validated on
    the write worker, the retention pass reads on another).

    Only chunks the image has at the time of a report are kept, and :meth:`sizes` forgets the
    chunks the image no longer has, so the table never holds more than one entry per chunk
    replica of the topics brokers report on.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_chunk: dict[ChunkKey, dict[int, int]] = {}

    def record(self, image: MetadataImage, request: ChunkSizesRequest) -> int:
        """Keeps the report's items of chunks ``image`` has; returns how many."""
        accepted: list[tuple[ChunkKey, int]] = []
        for item in request.sizes:
            key = _existing_chunk(image, item.topic_name, item.partition_id, item.start_offset)
            if key is not None:
                accepted.append((key, item.size_in_bytes))
        with self._lock:
            for key, size in accepted:
                self._by_chunk.setdefault(key, {})[request.broker_id] = size
        return len(accepted)

    def sizes(self, image: MetadataImage) -> dict[ChunkKey, int]:
        """The size of every reported chunk ``image`` still has (the largest report); the
        others are forgotten."""
        with self._lock:
            gone = [key for key in self._by_chunk if not _has_chunk(image, key)]
            for key in gone:
                del self._by_chunk[key]
            return {key: max(by_broker.values()) for key, by_broker in self._by_chunk.items()}

    def clear(self) -> None:
        """Forgets every report (a controller that lost leadership)."""
        with self._lock:
            self._by_chunk.clear()


def _existing_chunk(image: MetadataImage, topic_name: str, partition_id: int,
                    start_offset: int) -> ChunkKey | None:
    topic = image.topics.get_by_name(topic_name)
    if topic is None:
        return None
    key = (topic.topic_id, partition_id, start_offset)
    return key if _has_chunk(image, key) else None


def _has_chunk(image: MetadataImage, key: ChunkKey) -> bool:
    topic_id, partition_id, start_offset = key
    topic = image.topics.by_id.get(topic_id)
    if topic is None:
        return False
    active = topic.partition(partition_id)
    if active is not None and active.start_offset == start_offset:
        return True
    return topic.chunk(partition_id, start_offset) is not None


def report_chunk_sizes(image: MetadataImage, request: ChunkSizesRequest,
                       table: ChunkSizeTable) -> ControllerResult[ChunkSizesResponse]:
    """A broker's size report, as an operation with no records: kept in ``table`` unless the
    broker epoch is stale (STALE_BROKER_EPOCH, nothing kept)."""
    try:
        check_broker_epoch(image, request.broker_id, request.broker_epoch)
    except ApiException as error:
        return ControllerResult.of(ChunkSizesResponse(error_code=error.code,
                                                      error_message=error.message), ())
    return ControllerResult.of(ChunkSizesResponse(accepted=table.record(image, request)), ())
