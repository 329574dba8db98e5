"""Which chunk serves an offset, and which offset ranges a broker's replicas cover (pure functions).

Chunk offsets are inclusive (DESIGN.md section 3): an inactive chunk serves consumers
``start .. stop`` and copiers ``start .. end``; the active chunk serves every offset from its
``start_offset`` (``-1`` on a partition never cut: from 0). A cut sets the new active chunk's
start to the old chunk's ``stop + 1``, so for consumers the chunks tile the offsets without
overlap, while ``stop + 1 .. end`` (an open transaction at the cut) is held by both chunks.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from chunkraft.records import ChunkRecord, PartitionRecord

__all__ = [
    "ChunkLocation",
    "active_start",
    "chunk_for_copy",
    "chunk_log_topic",
    "hosted_ranges",
    "locate_for_consumer",
    "parse_chunk_log_topic",
    "subtract_ranges",
]

OffsetRange = tuple[int, int]
"""An inclusive offset range ``(first, last)``; ``last`` may be a huge number for "to the end"."""

TO_THE_END = 2**63 - 1


def active_start(partition: PartitionRecord) -> int:
    """The first offset of the active chunk (a partition never cut starts at 0)."""
    return max(partition.start_offset, 0)


@dataclass(frozen=True)
class ChunkLocation:
    """Where a consumer's offset lives: the active chunk (``chunk`` None) or an inactive chunk.

    ``found`` is False when no chunk serves the offset (below the first chunk, or in a hole the
    image does not cover).
    """

    found: bool
    chunk: ChunkRecord | None = None

    @property
    def active(self) -> bool:
        return self.found and self.chunk is None


_NOT_FOUND = ChunkLocation(False)
_ACTIVE = ChunkLocation(True)


def _starts(chunks: Sequence[ChunkRecord]) -> list[int]:
    return [c.start_offset for c in chunks]


def locate_for_consumer(
    offset: int, partition: PartitionRecord, chunks: Sequence[ChunkRecord]
) -> ChunkLocation:
    """The chunk a consumer reading at ``offset`` must read from.

    ``chunks`` are the partition's inactive chunks sorted by start offset (as the image keeps
    them). Offsets at or past the active chunk's start belong to it; an offset in an inactive
    chunk's ``start .. stop`` belongs to that chunk; anything else is not served.
    """
    if offset >= active_start(partition) and (partition.start_offset >= 0 or not chunks
                                              or offset > chunks[-1].stop_offset):
        return _ACTIVE
    index = bisect.bisect_right(_starts(chunks), offset) - 1
    if index >= 0:
        chunk = chunks[index]
        if chunk.start_offset <= offset <= chunk.stop_offset:
            return ChunkLocation(True, chunk)
    return _NOT_FOUND


def chunk_for_copy(chunks: Sequence[ChunkRecord], offset: int) -> ChunkRecord | None:
    """The inactive chunk whose ``start .. end`` holds ``offset`` (the latest starting one when
    two hold it), or None: what a copier names in ``chunk_start_offset``."""
    best: ChunkRecord | None = None
    for chunk in chunks:
        if chunk.start_offset <= offset <= chunk.end_offset:
            best = chunk
    return best


def hosted_ranges(
    broker_id: int, partition: PartitionRecord | None, chunks: Iterable[ChunkRecord]
) -> list[OffsetRange]:
    """The inclusive offset ranges whose data ``broker_id`` must keep for this partition: each
    inactive chunk it is a replica of (``start .. end``) and the active chunk if it is one of its
    replicas (``start ..`` the end of the log)."""
    ranges = [(c.start_offset, c.end_offset) for c in chunks if broker_id in c.replicas]
    if partition is not None and broker_id in partition.replicas:
        ranges.append((active_start(partition), TO_THE_END))
    return ranges


def subtract_ranges(whole: OffsetRange, keep: Iterable[OffsetRange]) -> list[OffsetRange]:
    """``whole`` minus every range of ``keep``: the pieces that may be deleted, in order."""
    pieces = [whole]
    for k_first, k_last in keep:
        next_pieces: list[OffsetRange] = []
        for first, last in pieces:
            if k_last < first or k_first > last:
                next_pieces.append((first, last))
                continue
            if k_first > first:
                next_pieces.append((first, k_first - 1))
            if k_last < last:
                next_pieces.append((k_last + 1, last))
        pieces = next_pieces
    return pieces


CHUNK_LOG_SEPARATOR = "@"
"""Never in a topic name (Kafka's legal characters are ``[a-zA-Z0-9._-]``)."""


def chunk_log_topic(topic: str, start_offset: int) -> str:
    """The log-store name of an inactive chunk kept in its own log: ``<topic>@<start>``."""
    return f"{topic}{CHUNK_LOG_SEPARATOR}{start_offset}"


def parse_chunk_log_topic(name: str) -> tuple[str, int] | None:
    """``(topic, chunk start)`` of a chunk log's name, None for a partition's own log."""
    topic, sep, start = name.rpartition(CHUNK_LOG_SEPARATOR)
    if not sep or not topic or not start.isdigit():
        return None
    return topic, int(start)
