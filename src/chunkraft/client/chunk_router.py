"""Which broker a consumer reads an offset from (KIP-1114 chunks), as pure functions.

A partition's offsets are tiled by chunks (DESIGN.md section 3, offsets inclusive): each
inactive chunk serves consumers ``start .. stop`` on any broker of its ISR, and the active chunk
serves every offset from its ``start_offset`` (-1 on a partition never cut: from 0) on its
leader. The router mirrors the brokers' own lookup (``broker_agent.chunk_lookup``) on the
metadata a client has (``client.metadata.PartitionInfo`` with its ``chunks``).

An inactive chunk's ISR replica is chosen by the positive murmur2 hash of the client id, so one
consumer keeps reading a chunk from the same broker (its page cache stays warm) while different
consumers spread over the replicas; ``attempt`` moves to the next replica after a failure.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

from chunkraft.dataplane.murmur2 import positive_hash

__all__ = ["ChunkRoute", "ChunkView", "PartitionView", "active_start", "pick_replica",
           "route_offset"]


class ChunkView(Protocol):
    """What the router reads of an inactive chunk (``client.metadata.ChunkInfo`` fits)."""

    @property
    def start_offset(self) -> int: ...

    @property
    def stop_offset(self) -> int: ...

    @property
    def isr(self) -> Sequence[int]: ...


class PartitionView(Protocol):
    """What the router reads of a partition (``client.metadata.PartitionInfo`` fits)."""

    @property
    def leader(self) -> int: ...

    @property
    def start_offset(self) -> int: ...

    @property
    def chunks(self) -> Sequence[ChunkView]: ...


@dataclass(frozen=True)
class ChunkRoute:
    """Where to fetch one offset: broker ``broker_id`` (-1: no live broker serves it now).

    ``active`` is True for the active chunk (read up to the high watermark on its leader), else
    the inactive chunk starting at ``chunk_start`` is read up to ``stop_offset`` (inclusive),
    after which the reader moves to ``stop_offset + 1``. Immutable, thread-safe.
    """

    broker_id: int
    active: bool
    chunk_start: int
    stop_offset: int = -1


def active_start(partition: PartitionView) -> int:
    """The first offset of the active chunk (0 for a partition never cut)."""
    return max(partition.start_offset, 0)


def pick_replica(isr: Collection[int], client_id: str, *, live: Collection[int] | None = None,
                 attempt: int = 0) -> int:
    """The ISR replica this client reads an inactive chunk from: stable for a client id,
    ``attempt`` steps further after failures; only brokers in ``live`` (when given) count.
    -1 when none is left."""
    candidates = sorted(b for b in isr if live is None or b in live)
    if not candidates:
        return -1
    return candidates[(positive_hash(client_id.encode()) + attempt) % len(candidates)]


def _inactive(partition: PartitionView, offset: int) -> ChunkView | None:
    chunks = sorted(partition.chunks, key=lambda c: c.start_offset)
    index = bisect.bisect_right([c.start_offset for c in chunks], offset) - 1
    if index >= 0 and chunks[index].start_offset <= offset <= chunks[index].stop_offset:
        return chunks[index]
    return None


def route_offset(partition: PartitionView, offset: int, client_id: str, *,
                 live: Collection[int] | None = None, attempt: int = 0) -> ChunkRoute | None:
    """The chunk serving ``offset`` and the broker to ask; None when no chunk holds it (below
    the first chunk, or a hole the metadata does not cover: refresh, or reset the position).

    Offsets at or past the active chunk's start go to its leader (offsets beyond the log end
    too: the leader answers those, long-polling or with OFFSET_OUT_OF_RANGE). A partition never
    cut (``start_offset`` -1) that still lists chunks (metadata from before the cut settled)
    sends offsets past the last chunk's stop to the leader.
    """
    chunks = partition.chunks
    last_stop = max((c.stop_offset for c in chunks), default=-1)
    if offset >= active_start(partition) and (partition.start_offset >= 0 or not chunks
                                              or offset > last_stop):
        leader = partition.leader
        if live is not None and leader not in live:
            leader = -1
        return ChunkRoute(leader, True, active_start(partition))
    chunk = _inactive(partition, offset)
    if chunk is None:
        return None
    broker = pick_replica(chunk.isr, client_id, live=live, attempt=attempt)
    return ChunkRoute(broker, False, chunk.start_offset, chunk.stop_offset)
