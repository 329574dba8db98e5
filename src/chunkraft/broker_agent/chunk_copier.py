"""Copying a chunk's offsets from another replica (KIP-1114 chunk creates and moves).

A copy fetches ``first .. last`` (inclusive) with ``chunk_start_offset`` set, so the source
serves the inactive chunk up to its end offset, and appends the batches as a follower would
(they keep their offsets and leader epochs: OffsetsForLeaderEpoch keeps answering for them).
The source is chosen by a stable hash of (broker, topic, partition, chunk start) among the
in-sync sources, so copies of many chunks spread over the replicas; on a failure the next source
is tried after a backoff. A copy resumes where the log stops holding the range, so restarting a
broker (or applying the same delta again) never copies twice.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chunkraft.broker_agent.peer_client import PeerClientLike, PeerUnavailable
from chunkraft.broker_agent.throttle import Throttle
from chunkraft.dataplane.record_batch import iter_batches
from chunkraft.protocol.data_plane import FetchPartition, FetchRequest, FetchTopic
from chunkraft.protocol.record_bytes import RecordData

if TYPE_CHECKING:
    from chunkraft.broker_agent.storage import UnifiedLog

__all__ = [
    "CopyJob",
    "first_missing_offset",
    "pick_source_order",
    "run_copy",
    "trim_batches",
]

log = logging.getLogger(__name__)


def pick_source_order(node_id: int, topic: str, partition: int, start: int,
                      sources: Sequence[int]) -> list[int]:
    """``sources`` rotated to start at the one chosen by a stable hash (CRC-32, not Python's
    salted hash, so every process picks the same)."""
    if not sources:
        return []
    first = zlib.crc32(f"{node_id}:{topic}:{partition}:{start}".encode()) % len(sources)
    return list(sources[first:]) + list(sources[:first])


def first_missing_offset(log_: UnifiedLog, first: int, last: int) -> int:
    """The first offset of ``first .. last`` this log does not hold (``last + 1``: all held).

    Walks the segments: a log may hold several chunks with gaps between them, so the log end
    offset alone does not say whether a range in the middle is there.
    """
    position = first
    if position < log_.log_start_offset:
        return position
    for segment in log_.segments:
        if segment.base_offset > position:
            break
        if segment.next_offset > position:
            position = segment.next_offset
        if position > last:
            return last + 1
    return min(position, last + 1)



def trim_batches(data: RecordData, first: int, last: int) -> bytes:
    """Only the batches holding offsets of ``first .. last`` (whole batches)."""
    out: list[bytes] = []
    for header, view in iter_batches(data):
        if header.last_offset < first or header.base_offset > last:
            continue
        out.append(bytes(view))
    return b"".join(out)


@dataclass
class CopyJob:
    """One copy: offsets ``first .. last`` of ``topic``-``partition`` into ``target``.

    ``chunk_start_for(offset)`` names the inactive chunk a source serves that offset from (its
    start offset goes in the fetch's ``chunk_start_offset``).
    """

    node_id: int
    topic: str
    partition: int
    first: int
    last: int
    sources: tuple[int, ...]
    chunk_start_for: Callable[[int], int]
    target: Callable[[], UnifiedLog | None]
    broker_epoch: Callable[[], int]
    fetch_max_bytes: int = 1024 * 1024
    backoff_s: float = 1.0


async def run_copy(job: CopyJob, peers: PeerClientLike, throttle: Throttle,
                   on_progress: Callable[[], None] | None = None) -> None:
    """Copies until the target log holds ``job.first .. job.last``; returns then.

    Retries forever (with ``job.backoff_s`` between rounds of failures): a chunk replica must
    eventually be complete, and the task is cancelled when the metadata no longer asks for it.
    Returns at once if the target log is gone (``job.target()`` None).
    """
    order = pick_source_order(job.node_id, job.topic, job.partition, job.first, job.sources)
    attempt = 0
    while True:
        target = job.target()
        if target is None:
            return
        position = first_missing_offset(target, job.first, job.last)
        if position > job.last:
            return
        if not order:
            log.warning("no source to copy %s-%d %d..%d from", job.topic, job.partition,
                        job.first, job.last)
            await asyncio.sleep(job.backoff_s)
            continue
        if target.log_end_offset > position and target.log_end_offset != target.log_start_offset:
            # The log already goes past a hole in the range; the log store can only append at its
            # end, so such a hole cannot be filled (see docs: a chunk re-added between two held
            # chunks). Wait for the metadata to change.
            log.error("cannot fill %s-%d at %d: the log already ends at %d", job.topic,
                      job.partition, position, target.log_end_offset)
            await asyncio.sleep(job.backoff_s)
            continue
        if target.log_end_offset == target.log_start_offset and target.log_end_offset != position:
            target.truncate_fully_and_start_at(position)
        source = order[attempt % len(order)]
        request = FetchRequest(
            replica_id=job.node_id,
            replica_epoch=job.broker_epoch(),
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=job.fetch_max_bytes,
            topics=(FetchTopic(topic=job.topic, partitions=(FetchPartition(
                partition=job.partition,
                fetch_offset=position,
                partition_max_bytes=job.fetch_max_bytes,
                chunk_start_offset=job.chunk_start_for(position),
            ),)),),
        )
        try:
            response = await peers.fetch(source, request)
            answer = response.responses[0].partitions[0]
        except (PeerUnavailable, IndexError) as error:
            log.info("copy of %s-%d from broker %d failed: %s", job.topic, job.partition,
                     source, error)
            attempt += 1
            await asyncio.sleep(job.backoff_s)
            continue
        data = trim_batches(answer.records, position, job.last)
        if answer.error_code != 0 or not data:
            log.info("copy of %s-%d at %d from broker %d: error %d, %d bytes", job.topic,
                     job.partition, position, source, answer.error_code, len(data))
            attempt += 1
            await asyncio.sleep(job.backoff_s)
            continue
        await throttle.acquire(len(data))
        target = job.target()
        if target is None:
            return
        target.append_as_follower(data)
        if on_progress is not None:
            on_progress()
