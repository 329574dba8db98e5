"""Fetch: the read side of the data plane (ListOffsets and OffsetsForLeaderEpoch are in
``offsets_path``).

Three kinds of fetch (``protocol/data_plane.py``):

- a chunk copier (``chunk_start_offset`` >= 0): the inactive chunk starting there, up to its end
  offset, from any broker in that chunk's ISR;
- a follower (``replica_id`` >= 0): the active chunk from its leader up to the log end; the
  fetch offset is the follower's LEO, so it moves the high watermark and may expand the ISR; a
  ``last_fetched_epoch`` that disagrees with the leader's epoch cache answers a
  ``diverging_epoch`` (KIP-320) instead of data;
- a consumer (``replica_id`` -1): the chunk holding the fetch offset. The active chunk is read on
  its leader up to the HW (read_uncommitted) or LSO (read_committed, with the aborted
  transactions of the range); an inactive chunk on any of its ISR replicas up to its stop
  offset, answered with ``chunk_stop_offset``. ``key_range`` keeps only records whose murmur2
  key hash is in range.

A consumer's offset in a chunk this broker does not hold: over HTTP (no ``reads``)
NOT_LEADER_OR_FOLLOWER, and chunkraft's client goes to a holder itself. A stock Kafka consumer
(``reads``, given by the Kafka surface, see ``read_replica``) that reads Fetch v11+'s
``preferred_read_replica`` (KIP-392) is answered no records and the broker that serves the
offset: a live holder of its inactive chunk, or the active chunk's leader (a holder asked past
its chunk's stop offset sends the consumer on, never OFFSET_OUT_OF_RANGE, on which aiokafka
resets). One that cannot be redirected gets, from the leader, the records the leader reads from
a holder (``chunk_proxy``), and from any other broker NOT_LEADER_OR_FOLLOWER.

A partition whose read fails unexpectedly (a bug, a disk error) is answered
UNKNOWN_SERVER_ERROR or KAFKA_STORAGE_ERROR with one log line (``failures``); the others are
read as usual.

A fetch that found fewer than ``min_bytes`` waits (up to ``max_wait_ms``) for an append or a
high-watermark move on one of its partitions, then reads again.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chunkraft.broker_agent import failures
from chunkraft.broker_agent.chunk_lookup import ChunkLocation, locate_for_consumer
from chunkraft.broker_agent.chunk_proxy import ProxyRead, read_from_holders
from chunkraft.broker_agent.partition import Partition, leader_epoch_error
from chunkraft.broker_agent.read_replica import (
    NO_BROKER,
    ConsumerReads,
    live_holders,
    serving_broker,
)
from chunkraft.broker_agent.replica_host import ReplicaHost
from chunkraft.broker_agent.storage.errors import OffsetOutOfRangeError
from chunkraft.dataplane.record_batch import filter_by_key_hash, iter_batches, without_records
from chunkraft.error_codes import Errors
from chunkraft.protocol.data_plane import (
    AbortedTransaction,
    EpochEndOffset,
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopicResponse,
)

if TYPE_CHECKING:
    from chunkraft.broker_agent.storage import UnifiedLog
    from chunkraft.records import PartitionRecord

__all__ = ["fetch"]


@dataclass(frozen=True)
class _Offsets:
    """The offsets a fetch answer carries for one partition."""

    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1
    chunk_stop_offset: int = -1


_NO_OFFSETS = _Offsets()


def _answer(index: int, offsets: _Offsets = _NO_OFFSETS, *, error: Errors = Errors.NONE,
            message: str | None = None, records: bytes = b"",
            aborted: tuple[AbortedTransaction, ...] | None = None,
            diverging: EpochEndOffset | None = None, preferred: int = NO_BROKER
            ) -> FetchPartitionResponse:
    return FetchPartitionResponse(
        partition=index, error_code=error.code, error_message=message,
        high_watermark=offsets.high_watermark, last_stable_offset=offsets.last_stable_offset,
        log_start_offset=offsets.log_start_offset, log_end_offset=offsets.log_end_offset,
        chunk_stop_offset=offsets.chunk_stop_offset, aborted_transactions=aborted,
        diverging_epoch=diverging, preferred_read_replica=preferred, records=records)


def _error(index: int, error: Errors, message: str | None = None,
           offsets: _Offsets = _NO_OFFSETS) -> FetchPartitionResponse:
    return _answer(index, offsets, error=error, message=message)


@dataclass
class _Budget:
    remaining: int
    read_any: bool = False


def _read(log_: UnifiedLog, start: int, upper: int, want: FetchPartition, budget: _Budget
          ) -> bytes | Errors:
    """Whole batches from ``start`` below ``upper`` (exclusive), filtered by key range."""
    if start >= upper:
        return b""
    max_bytes = max(1, min(want.partition_max_bytes, budget.remaining))
    try:
        result = log_.read(start, max_bytes, upper, min_one_batch=not budget.read_any)
    except OffsetOutOfRangeError:
        return Errors.OFFSET_OUT_OF_RANGE
    data = bytes(result.records)
    if want.key_range is not None and data:
        lo, hi = want.key_range
        kept = []
        for _, view in iter_batches(data):
            filtered = filter_by_key_hash(view, lo, hi)
            # A batch with no matching record still goes out, empty, so the reader moves past
            # its offsets instead of asking for the same window again.
            kept.append(filtered if filtered is not None else without_records(view))
        data = b"".join(kept)
    if data:
        budget.read_any = True
        budget.remaining -= len(data)
    return data


def _aborted(log_: UnifiedLog, start: int, upper: int) -> tuple[AbortedTransaction, ...]:
    return tuple(AbortedTransaction(producer_id=pid, first_offset=first)
                 for pid, first in log_.aborted_transactions(start, upper))


def _read_partition(rm: ReplicaHost, request: FetchRequest, topic: str,
                    want: FetchPartition, budget: _Budget, first_pass: bool,
                    reads: ConsumerReads | None) -> FetchPartitionResponse | ProxyRead:
    index = want.partition
    image_topic = rm.image.topics.get_by_name(topic)
    record = image_topic.partition(index) if image_topic is not None else None
    if image_topic is None or record is None:
        return _error(index, Errors.UNKNOWN_TOPIC_OR_PARTITION)
    partition = rm.partitions.get((topic, index))
    offset = want.fetch_offset
    if want.chunk_start_offset >= 0:
        if request.replica_id < 0:
            # Beyond the stop offset lie offsets of transactions still open at the cut, whose
            # markers are in the next chunk: only replicas copying the chunk may read them.
            return _error(index, Errors.INVALID_REQUEST,
                          "chunk_start_offset is for replicas copying a chunk (replica_id >= 0)")
        chunk = image_topic.chunk(index, want.chunk_start_offset)
        if chunk is None:
            return _error(index, Errors.UNKNOWN_CHUNK,
                          f"{topic}-{index} has no inactive chunk at {want.chunk_start_offset}")
        if partition is None or rm.node_id not in chunk.isr:
            return _error(index, Errors.NOT_LEADER_OR_FOLLOWER,
                          f"broker {rm.node_id} holds no full copy of that chunk")
        return _chunk_answer(partition.log_for(chunk.start_offset), index, offset,
                             chunk.start_offset, chunk.end_offset, chunk.stop_offset, want,
                             budget, request.isolation_level)
    if partition is None or not partition.is_leader:
        if request.replica_id < 0:
            located = locate_for_consumer(offset, record, image_topic.chunks_of(index))
            chunk = located.chunk
            if partition is not None and chunk is not None and rm.node_id in chunk.isr:
                return _chunk_answer(partition.log_for(chunk.start_offset), index, offset,
                                     chunk.start_offset, chunk.stop_offset, chunk.stop_offset,
                                     want, budget, request.isolation_level)
            if partition is not None and not located.found:
                return _error(index, Errors.OFFSET_OUT_OF_RANGE,
                              f"no chunk of {topic}-{index} serves offset {offset}")
            if reads is not None and reads.redirects(topic, index):
                # Past the end of the chunk held here, or in a chunk held elsewhere: name the
                # broker that serves the offset. Never OFFSET_OUT_OF_RANGE for an offset a
                # chunk serves: aiokafka resets on it whatever replica it fetched from.
                target = serving_broker(located, record, rm.image, reads.listener)
                if target != NO_BROKER and target != rm.node_id:
                    return _answer(index, preferred=target)
        return _error(index, Errors.NOT_LEADER_OR_FOLLOWER,
                      f"broker {rm.node_id} does not serve {topic}-{index} at offset {offset}")
    refused = leader_epoch_error(partition, want.current_leader_epoch)
    if refused is not None:
        return _error(index, refused)
    log_ = partition.log
    offsets = _Offsets(log_.high_watermark, log_.last_stable_offset, log_.log_start_offset,
                       log_.log_end_offset)
    if request.replica_id >= 0:
        assert partition.record is not None
        if partition.overlap_pending:
            # The leader's log and epoch cache are not final until the overlap is copied: a
            # divergence check now could make the follower cut offsets it rightly holds.
            return _error(index, Errors.LEADER_NOT_AVAILABLE,
                          f"the leader of {topic}-{index} is still copying the previous chunk")
        if request.replica_id not in partition.record.replicas:
            return _error(index, Errors.NOT_LEADER_OR_FOLLOWER,
                          f"broker {request.replica_id} is no replica of {topic}-{index}", offsets)
        if want.last_fetched_epoch >= 0 and offset > log_.log_start_offset:
            epoch, end = log_.end_offset_for_epoch(want.last_fetched_epoch)
            if epoch != want.last_fetched_epoch or end < offset:
                return _answer(index, offsets,
                               diverging=EpochEndOffset(epoch=epoch, end_offset=end))
        if offset > log_.log_end_offset or offset < log_.log_start_offset:
            return _error(index, Errors.OFFSET_OUT_OF_RANGE, None, offsets)
        if first_pass:
            rm.record_follower_fetch(partition, request.replica_id, offset,
                                     request.replica_epoch)
            offsets = _Offsets(log_.high_watermark, log_.last_stable_offset,
                               log_.log_start_offset, log_.log_end_offset)
        data = _read(log_, offset, log_.log_end_offset, want, budget)
        if isinstance(data, Errors):
            return _error(index, data, None, offsets)
        return _answer(index, offsets, records=data)
    located = locate_for_consumer(offset, record, image_topic.chunks_of(index))
    if located.chunk is not None:
        chunk = located.chunk
        if rm.node_id not in chunk.isr:
            return _held_elsewhere(rm, request, topic, want, located, record, offsets, budget,
                                   reads)
        return _chunk_answer(partition.log_for(chunk.start_offset), index, offset,
                             chunk.start_offset, chunk.stop_offset, chunk.stop_offset, want,
                             budget, request.isolation_level)
    if not located.found or offset > log_.log_end_offset or offset < log_.log_start_offset:
        return _error(index, Errors.OFFSET_OUT_OF_RANGE, None, offsets)
    committed = request.isolation_level == 1
    upper = log_.last_stable_offset if committed else log_.high_watermark
    data = _read(log_, offset, upper, want, budget)
    if isinstance(data, Errors):
        return _error(index, data, None, offsets)
    aborted = _aborted(log_, offset, upper) if committed else None
    return _answer(index, offsets, records=data, aborted=aborted)


def _held_elsewhere(rm: ReplicaHost, request: FetchRequest, topic: str, want: FetchPartition,
                    located: ChunkLocation, record: PartitionRecord, offsets: _Offsets,
                    budget: _Budget, reads: ConsumerReads | None
                    ) -> FetchPartitionResponse | ProxyRead:
    """On the leader, a consumer's offset in an inactive chunk held by other brokers: over
    HTTP, NOT_LEADER_OR_FOLLOWER (chunkraft's client goes to a holder itself); a stock Kafka
    consumer is told a live holder (``preferred_read_replica``) or, when it cannot be
    redirected, gets the records the leader reads from a holder (a :class:`ProxyRead`)."""
    index = want.partition
    chunk = located.chunk
    assert chunk is not None
    if reads is None:
        return _error(index, Errors.NOT_LEADER_OR_FOLLOWER,
                      f"broker {rm.node_id} holds no copy of the chunk at {chunk.start_offset}")
    if reads.redirects(topic, index):
        target = serving_broker(located, record, rm.image, reads.listener)
        if target != NO_BROKER:
            return _answer(index, offsets, preferred=target)
    holders = live_holders(chunk, rm.image)
    if not holders:
        return _error(index, Errors.NOT_LEADER_OR_FOLLOWER,
                      f"no live replica holds the chunk of {topic}-{index} at "
                      f"{chunk.start_offset}")
    # The bytes are taken from the answer's budget now: the read itself runs after this pass.
    max_bytes = max(1, min(want.partition_max_bytes, budget.remaining))
    budget.remaining -= max_bytes
    budget.read_any = True
    return ProxyRead(topic, index, want.fetch_offset, chunk, holders, max_bytes,
                     request.isolation_level)


def _chunk_answer(log_: UnifiedLog, index: int, offset: int, start: int, last: int, stop: int,
                  want: FetchPartition, budget: _Budget, isolation_level: int
                  ) -> FetchPartitionResponse:
    """Reads ``offset`` .. ``last`` (inclusive) of an inactive chunk starting at ``start``."""
    upper = last + 1
    offsets = _Offsets(stop + 1, stop + 1, max(start, log_.log_start_offset), upper, stop)
    if offset < start or offset < log_.log_start_offset or offset > upper:
        return _error(index, Errors.OFFSET_OUT_OF_RANGE, None, offsets)
    data = _read(log_, offset, min(upper, log_.log_end_offset), want, budget)
    if isinstance(data, Errors):
        return _error(index, data, None, offsets)
    aborted = _aborted(log_, offset, upper) if isolation_level == 1 else None
    return _answer(index, offsets, records=data, aborted=aborted)


_Answers = list[tuple[str, list[FetchPartitionResponse | ProxyRead]]]


@dataclass
class _Pass:
    """One reading pass over the request: each topic's answers (a :class:`ProxyRead` stands
    for an answer still to be read from a holder), and what decides whether to wait."""

    answers: _Answers
    size: int = 0
    done: bool = False
    proxied: bool = False


def _read_all(rm: ReplicaHost, request: FetchRequest, first_pass: bool,
              reads: ConsumerReads | None) -> tuple[_Pass, list[Partition]]:
    budget = _Budget(request.max_bytes)
    read = _Pass([])
    watched: list[Partition] = []
    for topic in request.topics:
        answers: list[FetchPartitionResponse | ProxyRead] = []
        for want in topic.partitions:
            answer: FetchPartitionResponse | ProxyRead
            try:
                answer = _read_partition(rm, request, topic.topic, want, budget, first_pass,
                                         reads)
            except Exception as error:  # one partition's failure is its own answer
                failure, message = failures.failed(
                    f"fetch of {topic.topic}-{want.partition}", error)
                answer = _error(want.partition, failure, message)
            answers.append(answer)
            if isinstance(answer, ProxyRead):
                read.proxied = True
            else:
                # An error, a divergence or a redirect is answered at once, as in Kafka.
                read.done = read.done or answer.error_code != 0 or (
                    answer.diverging_epoch is not None or answer.preferred_read_replica >= 0)
                read.size += len(answer.records)
            partition = rm.partitions.get((topic.topic, want.partition))
            if partition is not None:
                watched.append(partition)
        read.answers.append((topic.topic, answers))
    return read, watched


async def _proxied(rm: ReplicaHost, read: ProxyRead) -> FetchPartitionResponse:
    """``read`` done: the records from a holder, with the leader's own offsets (what a leader
    holding the chunk would answer); NOT_LEADER_OR_FOLLOWER, which every client retries
    without a reset, when no holder gave them."""
    got = await read_from_holders(read, rm.peers, rm.node_id, rm.broker_epoch)
    partition = rm.partitions.get((read.topic, read.partition))
    if got is None or partition is None or not partition.is_leader:
        return _error(read.partition, Errors.NOT_LEADER_OR_FOLLOWER,
                      f"no holder of {read.topic}-{read.partition}'s chunk at "
                      f"{read.chunk.start_offset} answered")
    log_ = partition.log
    offsets = _Offsets(log_.high_watermark, log_.last_stable_offset, log_.log_start_offset,
                       log_.log_end_offset)
    return _answer(read.partition, offsets, records=got.records, aborted=got.aborted)


async def _response(rm: ReplicaHost, answers: _Answers) -> FetchResponse:
    """The answers as a FetchResponse, once every :class:`ProxyRead` is read (concurrently)."""
    pending = [a for _, topic in answers for a in topic if isinstance(a, ProxyRead)]
    done = dict(zip(map(id, pending),
                    await asyncio.gather(*(_proxied(rm, a) for a in pending)), strict=True))
    return FetchResponse(responses=tuple(
        FetchTopicResponse(topic=name, partitions=tuple(
            done[id(a)] if isinstance(a, ProxyRead) else a for a in topic))
        for name, topic in answers))


async def fetch(rm: ReplicaHost, request: FetchRequest,
                reads: ConsumerReads | None = None) -> FetchResponse:
    """Reads every requested partition; long-polls for ``min_bytes`` (see the module).
    ``reads``: the request is a stock Kafka consumer's (``read_replica``)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + request.max_wait_ms / 1000
    first_pass = True
    while True:
        read, watched = _read_all(rm, request, first_pass, reads)
        first_pass = False
        left = deadline - loop.time()
        if (read.proxied or read.size >= request.min_bytes or read.done or left <= 0
                or not watched):
            return await _response(rm, read.answers)
        # Nothing ran since the read (no await), so the current events cover every change after it.
        waiters = [loop.create_task(p.signal.event().wait()) for p in watched]
        try:
            await asyncio.wait(waiters, timeout=left, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
