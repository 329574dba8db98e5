"""The leader reads an inactive chunk from a holder, for a stock consumer that cannot go there.

A consumer of Fetch below v11 has no ``preferred_read_replica``, and some newer ones ignore it
(aiokafka without ``client_rack``): it fetches every offset from the leader. For an offset in an
inactive chunk the leader does not hold, the leader reads the chunk from a holder and answers
the records itself; answering OFFSET_OUT_OF_RANGE instead would make the client reset its
position and skip the chunk.

The read goes over the brokers' peer client (HTTP, with this broker's own token) as a chunk
copier's does, as this broker (``replica_id``, so the holder authorizes it as a broker, not as
a principal with READ on the topic) and naming the chunk (``chunk_start_offset``). A copier may
read past the chunk's stop offset (up to its end: records of transactions open at the cut,
which consumers read from the next chunk), so only the batches ending at or before the stop
offset are kept, and the aborted transactions starting after it are dropped.

Bounded: one attempt per live holder, in the order given, ``PROXY_TIMEOUT_S`` for all of them
together, ``max_bytes`` per read (the holder still sends one whole batch when the first one is
larger, as Kafka does for a consumer since KIP-74).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from chunkraft.broker_agent.peer_client import PeerClientLike, PeerUnavailable
from chunkraft.dataplane.record_batch import iter_batches
from chunkraft.protocol.data_plane import (
    AbortedTransaction,
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchTopic,
)
from chunkraft.protocol.record_bytes import RecordData
from chunkraft.records import ChunkRecord

__all__ = ["PROXY_TIMEOUT_S", "HolderRead", "ProxyRead", "consumer_part", "read_from_holders"]

log = logging.getLogger(__name__)

PROXY_TIMEOUT_S = 5.0
"""For all the holders of one read together: well under any stock client's request timeout
(30 s for the Java client and kafka-python, 40 s for aiokafka, 60 s for librdkafka's socket
timeout), so the consumer gets an answer (records or a retriable error) and not a timeout."""


@dataclass(frozen=True)
class ProxyRead:
    """One partition the leader reads from a holder: ``offset`` of ``chunk``, at most
    ``max_bytes``, from ``holders`` (live members of the chunk's ISR) in order."""

    topic: str
    partition: int
    offset: int
    chunk: ChunkRecord
    holders: tuple[int, ...]
    max_bytes: int
    isolation_level: int


@dataclass(frozen=True)
class HolderRead:
    """What a holder gave: whole batches from the fetch offset up to the chunk's stop offset,
    and, read_committed, the aborted transactions among them (None read_uncommitted)."""

    holder: int
    records: bytes
    aborted: tuple[AbortedTransaction, ...] | None


def consumer_part(records: RecordData, offset: int, stop: int) -> bytes:
    """The whole batches of ``records`` that end at or after ``offset`` and at or before
    ``stop``: what a consumer may read of a chunk from ``offset``. A batch is never cut (a
    batch ending past the stop offset is dropped; a cut's stop offset is a batch boundary, so
    none does when the holder's log is sound)."""
    kept: list[bytes] = []
    for header, view in iter_batches(records):
        if header.last_offset < offset:
            continue
        if header.last_offset > stop:
            break
        kept.append(bytes(view))
    return b"".join(kept)


def _request(read: ProxyRead, node_id: int, broker_epoch: int) -> FetchRequest:
    return FetchRequest(
        replica_id=node_id, replica_epoch=broker_epoch, max_wait_ms=0, min_bytes=0,
        max_bytes=read.max_bytes, isolation_level=read.isolation_level,
        topics=(FetchTopic(topic=read.topic, partitions=(FetchPartition(
            partition=read.partition, fetch_offset=read.offset,
            partition_max_bytes=read.max_bytes, chunk_start_offset=read.chunk.start_offset),)),))


def _usable(read: ProxyRead, holder: int, answer: FetchPartitionResponse) -> HolderRead | None:
    if answer.error_code != 0:
        return None
    records = consumer_part(answer.records, read.offset, read.chunk.stop_offset)
    if not records:
        return None
    aborted = None
    if read.isolation_level == 1:
        aborted = tuple(a for a in answer.aborted_transactions or ()
                        if a.first_offset <= read.chunk.stop_offset)
    return HolderRead(holder, records, aborted)


async def read_from_holders(read: ProxyRead, peers: PeerClientLike, node_id: int,
                            broker_epoch: Callable[[], int],
                            timeout_s: float = PROXY_TIMEOUT_S) -> HolderRead | None:
    """The first holder's usable answer (records at ``read.offset``), trying each holder once
    within ``timeout_s`` in all; None when none gave one (each failure is one log line)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    for holder in read.holders:
        left = deadline - loop.time()
        if left <= 0:
            break
        try:
            response = await asyncio.wait_for(
                peers.fetch(holder, _request(read, node_id, broker_epoch())), left)
            answer = response.responses[0].partitions[0]
        except (PeerUnavailable, TimeoutError, IndexError) as error:
            log.info("reading %s-%d at %d from holder %d failed: %r", read.topic,
                     read.partition, read.offset, holder, error)
            continue
        got = _usable(read, holder, answer)
        if got is not None:
            return got
        log.info("reading %s-%d at %d from holder %d: error %d, %d bytes, none usable",
                 read.topic, read.partition, read.offset, holder, answer.error_code,
                 len(answer.records))
    return None
