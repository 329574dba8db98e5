"""Produce and WriteTxnMarkers: appends on the leader of an active chunk, acks 0 / 1 / all.

Per partition, in order: an unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION; a
partition count other than the image's -> INVALID_PARTITION_COUNT (KIP-253); appends paused by
a chunk roll, or the overlap copy of a new active chunk not finished -> wait (at most the
request's timeout, then REQUEST_TIMED_OUT); not the active chunk's leader ->
NOT_LEADER_OR_FOLLOWER; acks=all with fewer ISR members than ``min.insync.replicas`` ->
NOT_ENOUGH_REPLICAS; then the log's checks: a batch larger than ``max.message.bytes`` ->
MESSAGE_TOO_LARGE, and the producer checks. ``min.insync.replicas`` and ``max.message.bytes``
are the topic's effective values on this broker (``topic_configs``: the topic's key, this
broker's or the cluster's dynamic default, its own settings), applied live. acks=all answers
only once the high watermark (min LEO over the maximal ISR) passed the last appended offset,
so everything it acknowledges is on every ISR member; a leader change before that ->
NOT_LEADER_OR_FOLLOWER; an ISR that shrank below ``min.insync.replicas`` meanwhile ->
NOT_ENOUGH_REPLICAS_AFTER_APPEND. A leader epoch bump while this broker stays leader
(KIP-253's expansion bumps every existing partition's epoch) is no leader change: appends and
waits go on.

Offsets that would pass what the log can store (its last offset at most 2^63 - 2, see
``record_batch.MAX_OFFSET``) -> OFFSET_OUT_OF_RANGE from the log. Any other failure of one
partition (a bug, a disk error) answers that partition UNKNOWN_SERVER_ERROR or
KAFKA_STORAGE_ERROR with one log line (``failures``); the other partitions are unaffected.
"""

from __future__ import annotations

import asyncio

from chunkraft.broker_agent.failures import failed
from chunkraft.broker_agent.partition import Partition
from chunkraft.broker_agent.replica_host import ReplicaHost
from chunkraft.broker_agent.storage.errors import DuplicateSequenceError
from chunkraft.dataplane.record_batch import CorruptBatchError
from chunkraft.error_codes import ApiException, Errors
from chunkraft.protocol.data_plane import (
    ProducePartitionResponse,
    ProduceRequest,
    ProduceResponse,
    ProduceTopicResponse,
    TxnMarkerPartitionResult,
    TxnMarkerResult,
    TxnMarkerTopicResult,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from chunkraft.protocol.record_bytes import RecordData

__all__ = ["produce", "write_txn_markers"]

MARKER_TIMEOUT_MS = 30_000
"""How long a transaction marker waits for the ISR (Kafka: request.timeout.ms)."""


class _Refused(Exception):
    def __init__(self, error: Errors, message: str | None = None) -> None:
        super().__init__(message or error.message)
        self.error = error
        self.message = message


def _monotonic_ms() -> float:
    return asyncio.get_running_loop().time() * 1000


async def _leader_ready(rm: ReplicaHost, topic: str, index: int, deadline_ms: float
                        ) -> Partition:
    """The partition once it accepts appends; raises :class:`_Refused` otherwise."""
    while True:
        partition = rm.partitions.get((topic, index))
        if partition is None or not partition.is_leader:
            raise _Refused(Errors.NOT_LEADER_OR_FOLLOWER,
                           f"broker {rm.node_id} does not lead the active chunk of {topic}-{index}")
        if partition.accepts_appends():
            return partition
        left = deadline_ms - _monotonic_ms()
        if left <= 0:
            raise _Refused(Errors.REQUEST_TIMED_OUT,
                           f"appends to {topic}-{index} are paused (a chunk roll or the copy of "
                           "the previous chunk's open transactions)")
        await partition.signal.wait(left / 1000)


async def _wait_replicated(partition: Partition, leadership: int, last_offset: int,
                           deadline_ms: float) -> Errors:
    """Waits until the HW passes ``last_offset``: NONE, or why it cannot.

    ``leadership`` is the partition's :attr:`Partition.leadership` at the append: a leader
    epoch bump while this broker stays leader (KIP-253's expansion) keeps the log, so the wait
    goes on; losing leadership, even if it comes back, may have truncated it."""
    while True:
        if partition.log.high_watermark > last_offset and not partition.closed:
            return Errors.NONE
        if partition.closed or not partition.is_leader or partition.leadership != leadership:
            return Errors.NOT_LEADER_OR_FOLLOWER
        left = deadline_ms - _monotonic_ms()
        if left <= 0:
            return Errors.REQUEST_TIMED_OUT
        await partition.signal.wait(left / 1000)


def _isr_size(partition: Partition) -> int:
    return len(partition.tracker.isr) if partition.tracker is not None else 0


async def produce(rm: ReplicaHost, request: ProduceRequest) -> ProduceResponse:
    """Appends every partition's batches, then (acks=all) waits for the ISR; see the module."""
    deadline = _monotonic_ms() + request.timeout_ms
    answers: list[list[ProducePartitionResponse]] = []
    # topic #, partition #, partition, its leadership, last offset
    waits: list[tuple[int, int, Partition, int, int]] = []
    for t_pos, topic in enumerate(request.topics):
        image_topic = rm.image.topics.get_by_name(topic.name)
        results: list[ProducePartitionResponse] = []
        for data in topic.partitions:
            try:
                if image_topic is None or image_topic.partition(data.index) is None:
                    raise _Refused(Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                   f"unknown topic or partition {topic.name}-{data.index}")
                count = len(image_topic.partitions)
                if topic.partition_count != count:
                    raise _Refused(Errors.INVALID_PARTITION_COUNT,
                                   f"{topic.name} has {count} partitions, not "
                                   f"{topic.partition_count}")
                partition = await _leader_ready(rm, topic.name, data.index, deadline)
                min_isr = rm.topic_config(topic.name).min_insync_replicas
                if request.acks == -1 and _isr_size(partition) < min_isr:
                    raise _Refused(Errors.NOT_ENOUGH_REPLICAS,
                                   f"{topic.name}-{data.index} has {_isr_size(partition)} "
                                   f"in-sync replicas, fewer than min.insync.replicas "
                                   f"{min_isr}")
                result, last_offset = _append(rm, partition, data.index, data.records)
            except _Refused as refused:
                results.append(ProducePartitionResponse(
                    index=data.index, error_code=refused.error.code,
                    error_message=refused.message))
                continue
            except Exception as error:  # one partition's failure is its own answer
                failure, message = failed(f"produce to {topic.name}-{data.index}", error)
                results.append(ProducePartitionResponse(
                    index=data.index, error_code=failure.code, error_message=message))
                continue
            results.append(result)
            if request.acks == -1 and result.error_code == 0 and result.base_offset >= 0:
                waits.append((t_pos, len(results) - 1, partition, partition.leadership,
                              last_offset))
        answers.append(results)
    for t_pos, p_pos, partition, epoch, last in waits:
        try:
            outcome = await _wait_replicated(partition, epoch, last, deadline)
        except Exception as error:
            outcome, _ = failed(f"acks=all wait of {partition.label}", error)
        if outcome is Errors.NONE and partition.tracker is not None and \
                len(partition.tracker.maximal_isr()) < \
                rm.topic_config(partition.topic).min_insync_replicas:
            # Kafka's rule: the HW passed the batch only because the ISR shrank below
            # min.insync.replicas, so it is on fewer replicas than the producer asked for.
            outcome = Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        if outcome is not Errors.NONE:
            old = answers[t_pos][p_pos]
            answers[t_pos][p_pos] = ProducePartitionResponse(
                index=old.index, error_code=outcome.code, error_message=outcome.message)
    return ProduceResponse(topics=tuple(
        ProduceTopicResponse(name=topic.name, partitions=tuple(results))
        for topic, results in zip(request.topics, answers, strict=True)))


def _append(rm: ReplicaHost, partition: Partition, index: int, data: RecordData
            ) -> tuple[ProducePartitionResponse, int]:
    """One partition's append on the leader: its answer and the last offset appended."""
    log_ = partition.log
    try:
        info = log_.append_as_leader(data, partition.leader_epoch, now_ms=rm.time_ms())
    except DuplicateSequenceError as duplicate:
        # Kafka answers a retried batch it already has with success and the original offsets.
        return ProducePartitionResponse(index=index, base_offset=duplicate.first_offset,
                                        log_start_offset=log_.log_start_offset), \
            duplicate.last_offset
    except ApiException as error:
        return ProducePartitionResponse(index=index, error_code=error.code,
                                        error_message=error.message), -1
    except CorruptBatchError as error:
        return ProducePartitionResponse(index=index, error_code=Errors.CORRUPT_MESSAGE.code,
                                        error_message=str(error)), -1
    rm.after_leader_append(partition)
    return ProducePartitionResponse(index=index, base_offset=info.first_offset,
                                    log_append_time_ms=info.log_append_time_ms,
                                    log_start_offset=log_.log_start_offset), info.last_offset


async def write_txn_markers(rm: ReplicaHost, request: WriteTxnMarkersRequest
                            ) -> WriteTxnMarkersResponse:
    """Writes each COMMIT / ABORT marker on the leader of each partition's active chunk and
    answers once the ISR has it (the marker ends the transaction: the LSO moves past it)."""
    deadline = _monotonic_ms() + MARKER_TIMEOUT_MS
    out: list[TxnMarkerResult] = []
    for marker in request.markers:
        topics: list[TxnMarkerTopicResult] = []
        for topic in marker.topics:
            results: list[TxnMarkerPartitionResult] = []
            for index in topic.partition_indexes:
                try:
                    error, message = await _write_marker(
                        rm, topic.name, index, marker.producer_id, marker.producer_epoch,
                        marker.transaction_result, marker.coordinator_epoch, deadline)
                except Exception as failure:
                    error, message = failed(f"marker on {topic.name}-{index}", failure)
                results.append(TxnMarkerPartitionResult(
                    partition_index=index, error_code=error.code, error_message=message))
            topics.append(TxnMarkerTopicResult(name=topic.name, partitions=tuple(results)))
        out.append(TxnMarkerResult(producer_id=marker.producer_id, topics=tuple(topics)))
    return WriteTxnMarkersResponse(markers=tuple(out))


async def _write_marker(rm: ReplicaHost, topic: str, index: int, producer_id: int,
                        producer_epoch: int, commit: bool, coordinator_epoch: int,
                        deadline: float) -> tuple[Errors, str | None]:
    try:
        partition = await _leader_ready(rm, topic, index, deadline)
    except _Refused as refused:
        return refused.error, refused.message
    leadership = partition.leadership
    try:
        info = partition.log.append_control(commit, producer_id, producer_epoch,
                                            coordinator_epoch, partition.leader_epoch,
                                            rm.time_ms())
    except ApiException as error:
        return error.error, error.message
    rm.after_leader_append(partition)
    outcome = await _wait_replicated(partition, leadership, info.last_offset, deadline)
    return outcome, None if outcome is Errors.NONE else outcome.message
