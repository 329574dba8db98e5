"""Fetch, ListOffsets and OffsetsForLeaderEpoch: the read side of the data plane.

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
from chunkraft.broker_agent.chunk_lookup import locate_for_consumer
from chunkraft.broker_agent.partition import Partition
from chunkraft.broker_agent.replica_host import ReplicaHost
from chunkraft.broker_agent.storage.errors import OffsetOutOfRangeError
from chunkraft.dataplane.record_batch import filter_by_key_hash, iter_batches, without_records
from chunkraft.error_codes import Errors
from chunkraft.protocol.data_plane import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    AbortedTransaction,
    EpochEndOffset,
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopicResponse,
    ListOffsetsPartition,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderPartition,
    OffsetForLeaderPartitionResult,
    OffsetForLeaderTopicResult,
)

if TYPE_CHECKING:
    from chunkraft.broker_agent.storage import UnifiedLog
    from chunkraft.controller.image import TopicImage
    from chunkraft.records import ChunkRecord

__all__ = ["fetch", "list_offsets", "offsets_for_leader_epoch"]


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
            diverging: EpochEndOffset | None = None) -> FetchPartitionResponse:
    return FetchPartitionResponse(
        partition=index, error_code=error.code, error_message=message,
        high_watermark=offsets.high_watermark, last_stable_offset=offsets.last_stable_offset,
        log_start_offset=offsets.log_start_offset, log_end_offset=offsets.log_end_offset,
        chunk_stop_offset=offsets.chunk_stop_offset, aborted_transactions=aborted,
        diverging_epoch=diverging, records=records)


def _error(index: int, error: Errors, message: str | None = None,
           offsets: _Offsets = _NO_OFFSETS) -> FetchPartitionResponse:
    return _answer(index, offsets, error=error, message=message)


def _epoch_error(partition: Partition, current_leader_epoch: int) -> Errors | None:
    """Kafka's leader epoch check of a request against this leader's epoch."""
    if current_leader_epoch < 0:
        return None
    if current_leader_epoch < partition.leader_epoch:
        return Errors.FENCED_LEADER_EPOCH
    if current_leader_epoch > partition.leader_epoch:
        return Errors.UNKNOWN_LEADER_EPOCH
    return None


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
                    want: FetchPartition, budget: _Budget, first_pass: bool
                    ) -> FetchPartitionResponse:
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
        if request.replica_id < 0 and partition is not None:
            located = locate_for_consumer(offset, record, image_topic.chunks_of(index))
            chunk = located.chunk
            if chunk is not None and rm.node_id in chunk.isr:
                return _chunk_answer(partition.log_for(chunk.start_offset), index, offset,
                                     chunk.start_offset, chunk.stop_offset, chunk.stop_offset,
                                     want, budget, request.isolation_level)
            if not located.found:
                return _error(index, Errors.OFFSET_OUT_OF_RANGE,
                              f"no chunk of {topic}-{index} serves offset {offset}")
        return _error(index, Errors.NOT_LEADER_OR_FOLLOWER,
                      f"broker {rm.node_id} does not serve {topic}-{index} at offset {offset}")
    refused = _epoch_error(partition, want.current_leader_epoch)
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
            return _error(index, Errors.NOT_LEADER_OR_FOLLOWER)
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


def _read_all(rm: ReplicaHost, request: FetchRequest, first_pass: bool
              ) -> tuple[FetchResponse, int, bool, list[Partition]]:
    budget = _Budget(request.max_bytes)
    topics: list[FetchTopicResponse] = []
    size = 0
    failed = False
    watched: list[Partition] = []
    for topic in request.topics:
        answers: list[FetchPartitionResponse] = []
        for want in topic.partitions:
            try:
                answer = _read_partition(rm, request, topic.topic, want, budget, first_pass)
            except Exception as error:  # one partition's failure is its own answer
                failure, message = failures.failed(
                    f"fetch of {topic.topic}-{want.partition}", error)
                answer = _error(want.partition, failure, message)
            answers.append(answer)
            failed = failed or answer.error_code != 0 or answer.diverging_epoch is not None
            size += len(answer.records)
            partition = rm.partitions.get((topic.topic, want.partition))
            if partition is not None:
                watched.append(partition)
        topics.append(FetchTopicResponse(topic=topic.topic, partitions=tuple(answers)))
    return FetchResponse(responses=tuple(topics)), size, failed, watched


async def fetch(rm: ReplicaHost, request: FetchRequest) -> FetchResponse:
    """Reads every requested partition; long-polls for ``min_bytes`` (see the module)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + request.max_wait_ms / 1000
    first_pass = True
    while True:
        response, size, failed, watched = _read_all(rm, request, first_pass)
        first_pass = False
        left = deadline - loop.time()
        if size >= request.min_bytes or failed or left <= 0 or not watched:
            return response
        # Nothing ran since the read (no await), so the current events cover every change after it.
        waiters = [loop.create_task(p.signal.event().wait()) for p in watched]
        try:
            await asyncio.wait(waiters, timeout=left, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()


def list_offsets(rm: ReplicaHost, request: ListOffsetsRequest) -> ListOffsetsResponse:
    """Earliest (-2), latest (-1) or by timestamp, answered by the active chunk's leader (a
    replica of inactive chunks answers timestamps within the chunks it holds)."""
    topics: list[ListOffsetsTopicResponse] = []
    for topic in request.topics:
        image_topic = rm.image.topics.get_by_name(topic.name)
        results: list[ListOffsetsPartitionResponse] = []
        for want in topic.partitions:
            try:
                results.append(_list_offset(rm, request.isolation_level, topic.name,
                                            image_topic, want))
            except Exception as error:  # one partition's failure is its own answer
                failure, message = failures.failed(
                    f"list offsets of {topic.name}-{want.partition_index}", error)
                results.append(ListOffsetsPartitionResponse(
                    partition_index=want.partition_index, error_code=failure.code,
                    error_message=message))
        topics.append(ListOffsetsTopicResponse(name=topic.name, partitions=tuple(results)))
    return ListOffsetsResponse(topics=tuple(topics))


def _list_offset(rm: ReplicaHost, isolation_level: int, name: str,
                 image_topic: TopicImage | None, want: ListOffsetsPartition
                 ) -> ListOffsetsPartitionResponse:
    index = want.partition_index
    partition = rm.partitions.get((name, index))
    if image_topic is None or image_topic.partition(index) is None:
        error: Errors | None = Errors.UNKNOWN_TOPIC_OR_PARTITION
    elif partition is None or (not partition.is_leader and want.timestamp < 0):
        error = Errors.NOT_LEADER_OR_FOLLOWER
    elif partition.is_leader:
        error = _epoch_error(partition, want.current_leader_epoch)
    else:
        error = None
    if error is not None or partition is None or image_topic is None:
        return ListOffsetsPartitionResponse(
            partition_index=index, error_code=(error or Errors.UNKNOWN_TOPIC_OR_PARTITION).code)
    log_ = partition.log
    epoch = partition.leader_epoch
    if want.timestamp == EARLIEST_TIMESTAMP:
        chunks = image_topic.chunks_of(index)
        offset = chunks[0].start_offset if chunks else log_.log_start_offset
        return ListOffsetsPartitionResponse(partition_index=index, offset=offset,
                                            leader_epoch=epoch)
    if want.timestamp == LATEST_TIMESTAMP:
        offset = log_.last_stable_offset if isolation_level == 1 else log_.high_watermark
        return ListOffsetsPartitionResponse(partition_index=index, offset=offset,
                                            leader_epoch=epoch)
    found = _offset_for_timestamp(rm, partition, image_topic.chunks_of(index), want.timestamp)
    if found is None:
        return ListOffsetsPartitionResponse(partition_index=index)
    return ListOffsetsPartitionResponse(partition_index=index, offset=found[0],
                                        timestamp=found[1], leader_epoch=epoch)


def _offset_for_timestamp(rm: ReplicaHost, partition: Partition,
                          chunks: tuple[ChunkRecord, ...], timestamp: int
                          ) -> tuple[int, int] | None:
    """The first (offset, timestamp) at or after ``timestamp`` that this broker may answer: in
    an inactive chunk it is in the ISR of (its own log, up to the chunk's stop offset), else, on
    the active chunk's leader, below the high watermark. Never an offset a consumer could not
    read here (a follower's data above the HW, a chunk's offsets past its stop)."""
    for chunk in chunks:
        if rm.node_id not in chunk.isr:
            continue
        found = partition.log_for(chunk.start_offset).offset_for_timestamp(timestamp)
        if found is not None and chunk.start_offset <= found[0] <= chunk.stop_offset:
            return found
    if partition.is_leader:
        found = partition.log.offset_for_timestamp(timestamp)
        if found is not None and found[0] < partition.log.high_watermark:
            return found
    return None


def offsets_for_leader_epoch(rm: ReplicaHost, request: OffsetForLeaderEpochRequest
                             ) -> OffsetForLeaderEpochResponse:
    """The end offset of a leader epoch from this broker's epoch cache. Followers ask the
    leader; a consumer may also ask a replica of inactive chunks (their copies carry the
    epochs of their offsets, DESIGN.md section 3)."""
    topics: list[OffsetForLeaderTopicResult] = []
    for topic in request.topics:
        image_topic = rm.image.topics.get_by_name(topic.topic)
        results: list[OffsetForLeaderPartitionResult] = []
        for want in topic.partitions:
            try:
                results.append(_epoch_end(rm, request.replica_id, topic.topic, image_topic,
                                          want))
            except Exception as error:  # one partition's failure is its own answer
                failure, message = failures.failed(
                    f"OffsetsForLeaderEpoch of {topic.topic}-{want.partition}", error)
                results.append(OffsetForLeaderPartitionResult(
                    partition=want.partition, error_code=failure.code, error_message=message))
        topics.append(OffsetForLeaderTopicResult(topic=topic.topic, partitions=tuple(results)))
    return OffsetForLeaderEpochResponse(topics=tuple(topics))


def _epoch_end(rm: ReplicaHost, replica_id: int, name: str, image_topic: TopicImage | None,
               want: OffsetForLeaderPartition) -> OffsetForLeaderPartitionResult:
    index = want.partition
    partition = rm.partitions.get((name, index))
    error: Errors | None = None
    if image_topic is None or image_topic.partition(index) is None:
        error = Errors.UNKNOWN_TOPIC_OR_PARTITION
    elif partition is None or (replica_id >= 0 and not partition.is_leader):
        error = Errors.NOT_LEADER_OR_FOLLOWER
    elif partition.is_leader:
        error = _epoch_error(partition, want.current_leader_epoch)
        if error is None and partition.overlap_pending:
            error = Errors.LEADER_NOT_AVAILABLE  # its epoch cache is not final yet
    if error is not None or partition is None:
        return OffsetForLeaderPartitionResult(
            partition=index, error_code=(error or Errors.NOT_LEADER_OR_FOLLOWER).code)
    epoch, end = partition.log.end_offset_for_epoch(want.leader_epoch)
    return OffsetForLeaderPartitionResult(partition=index, leader_epoch=epoch, end_offset=end)
