"""ListOffsets and OffsetsForLeaderEpoch: where a consumer starts, and what its epochs end at.

ListOffsets: earliest is the first chunk's start (every chunk is served to consumers, see
``fetch_path``), latest the active chunk's high watermark (or last stable offset), both
answered by the active chunk's leader; a timestamp is looked up in the chunks this broker holds
and, on the leader, below the high watermark. OffsetsForLeaderEpoch: the end offset of an epoch
in this broker's epoch cache (followers ask the leader; a consumer may also ask a replica of
inactive chunks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chunkraft.broker_agent import failures
from chunkraft.broker_agent.partition import Partition, leader_epoch_error
from chunkraft.broker_agent.replica_host import ReplicaHost
from chunkraft.error_codes import Errors
from chunkraft.protocol.data_plane import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
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
    from chunkraft.controller.image import TopicImage
    from chunkraft.records import ChunkRecord

__all__ = ["list_offsets", "offsets_for_leader_epoch"]


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
        error = leader_epoch_error(partition, want.current_leader_epoch)
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
    if want.timestamp == MAX_TIMESTAMP:
        found = _max_timestamp(rm, partition, image_topic.chunks_of(index))
    else:
        found = _offset_for_timestamp(rm, partition, image_topic.chunks_of(index),
                                      want.timestamp)
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


def _max_timestamp(rm: ReplicaHost, partition: Partition, chunks: tuple[ChunkRecord, ...]
                   ) -> tuple[int, int] | None:
    """The record with the largest timestamp that the active chunk's leader can read: in the
    inactive chunks whose ISR it is in and its active log below the high watermark (the first
    of equal timestamps). Chunks held only by other brokers are not asked: their records are
    older than the cut that sealed them, unless a producer set future timestamps."""
    candidates = []
    for chunk in chunks:
        if rm.node_id in chunk.isr and chunk is not chunks[-1]:
            found = partition.log_for(chunk.start_offset).max_timestamp_record(
                chunk.stop_offset + 1)
            if found is not None and found[0] >= chunk.start_offset:
                candidates.append(found)
    found = partition.log.max_timestamp_record(partition.log.high_watermark)
    if found is not None:
        candidates.append(found)
    return max(candidates, key=lambda c: (c[1], -c[0]), default=None)


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
        error = leader_epoch_error(partition, want.current_leader_epoch)
        if error is None and partition.overlap_pending:
            error = Errors.LEADER_NOT_AVAILABLE  # its epoch cache is not final yet
    if error is not None or partition is None:
        return OffsetForLeaderPartitionResult(
            partition=index, error_code=(error or Errors.NOT_LEADER_OR_FOLLOWER).code)
    epoch, end = partition.log.end_offset_for_epoch(want.leader_epoch)
    return OffsetForLeaderPartitionResult(partition=index, leader_epoch=epoch, end_offset=end)
