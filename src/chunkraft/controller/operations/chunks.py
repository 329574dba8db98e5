"""Chunk operations (KIP-1114): create_chunks, alter_chunk_assignments, chunk_replica_state.

Pure functions of (committed image, request) -> ControllerResult; replay of the records is the
only thing that changes state. Every item of a request (a partition to cut, a chunk to move, a
replica report) succeeds or fails on its own, with a Kafka error code and message; an item's
records are all in the result or none are. The records are those replay accepts
(``topics_delta.py``): a ChunkChangeRecord carries the chunk's complete new replica state and
an epoch of exactly the chunk's epoch + 1, and ``replicas = ()`` removes the chunk.

The life of a chunk (DESIGN.md sections 3 and 4):

- create_chunks cuts the active chunk: ChunkRecord (the old active chunk, epoch 0) and a
  PartitionChangeRecord (new replicas, leader, StartOffset, StartTimestamp) in one batch.
- alter_chunk_assignments starts a move: Replicas = target + (current - target),
  AddingReplicas = target - current, RemovingReplicas = current - target, ISR unchanged.
- chunk_replica_state IN_SYNC: a replica that now holds the whole chunk joins the ISR; once
  every adding replica is in the ISR the move completes: Replicas = target, ISR = the target's
  in-sync replicas, no adding or removing replicas.
- chunk_replica_state DROPPED: a broker whose copy retention removed leaves the chunk; the last
  one to leave removes the chunk from the image.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from chunkraft.controller.image import MetadataImage, TopicImage
from chunkraft.controller.operations.placement import (
    check_brokers_usable,
    validate_manual_assignment,
)
from chunkraft.controller.operations.record_budget import RecordBudget
from chunkraft.controller.operations.topics import validate_topic_name
from chunkraft.controller.result import ControllerResult
from chunkraft.error_codes import ApiException, Errors
from chunkraft.protocol.chunks import (
    AlterChunkAssignment,
    AlterChunkAssignmentResult,
    AlterChunkAssignmentsRequest,
    AlterChunkAssignmentsResponse,
    ChunkReplicaState,
    ChunkReplicaStateItem,
    ChunkReplicaStateRequest,
    ChunkReplicaStateResponse,
    ChunkReplicaStateResult,
    CreateChunksPartition,
    CreateChunksPartitionResult,
    CreateChunksRequest,
    CreateChunksResponse,
    CreateChunksTopicResult,
)
from chunkraft.records import ChunkChangeRecord, ChunkRecord, PartitionChangeRecord, PartitionRecord

__all__ = [
    "MAX_CHUNK_OFFSET",
    "alter_chunk_assignments",
    "check_broker_epoch",
    "chunk_replica_state",
    "create_chunks",
]

_NO_BROKER = -1

MAX_CHUNK_OFFSET = 2**63 - 1 - 2**31
"""The largest offset a cut may name (start, stop or end): the log must still be able to append
a whole record batch at the new chunk's start. A batch spans up to 2^31 offsets (its
``lastOffsetDelta`` is an INT32) and the log end offset after it must be an INT64, so a batch
based at this offset is the last that fits. A cut past it is INVALID_REQUEST: no log can hold
such an offset, whatever the partition's state (a record batch's base offset at 2^63 - 1 made
the broker's produce fail with ``struct.error``)."""


def check_broker_epoch(image: MetadataImage, broker_id: int, broker_epoch: int) -> None:
    """Raises ApiException(STALE_BROKER_EPOCH), with Kafka's messages, unless ``broker_id`` is
    registered with exactly ``broker_epoch``."""
    registration = image.brokers.get(broker_id)
    if registration is None:
        raise Errors.STALE_BROKER_EPOCH.exception(
            f"No broker registration found for broker {broker_id}"
        )
    if registration.broker_epoch != broker_epoch:
        raise Errors.STALE_BROKER_EPOCH.exception(
            f"Expected broker epoch {registration.broker_epoch}, but got broker epoch "
            f"{broker_epoch}"
        )


def _partition_of(
    image: MetadataImage, name: str, index: int
) -> tuple[TopicImage, PartitionRecord]:
    validate_topic_name(name)  # an illegal name is INVALID_TOPIC_EXCEPTION, not unknown
    topic = image.topics.get_by_name(name)
    if topic is None:
        raise Errors.UNKNOWN_TOPIC_OR_PARTITION.exception(f"Topic '{name}' does not exist.")
    partition = topic.partition(index)
    if partition is None:
        raise Errors.UNKNOWN_TOPIC_OR_PARTITION.exception(
            f"Partition {name}-{index} does not exist."
        )
    return topic, partition


def _without(values: Sequence[int], removed: Sequence[int] | set[int]) -> tuple[int, ...]:
    return tuple(v for v in values if v not in removed)


# ------------------------------------------------------------------ create_chunks


def create_chunks(
    image: MetadataImage, request: CreateChunksRequest
) -> ControllerResult[CreateChunksResponse]:
    """CreateChunks: cut each partition's active chunk at the offsets its leader read.

    A ``broker_id`` other than -1 must be registered with ``broker_epoch``, else the whole
    request fails with STALE_BROKER_EPOCH. Per partition, in order: the partition named twice
    in the request -> INVALID_REQUEST; an illegal topic name -> INVALID_TOPIC_EXCEPTION; unknown
    topic or partition -> UNKNOWN_TOPIC_OR_PARTITION;
    a requesting broker that is not the leader -> NOT_LEADER_OR_FOLLOWER; a ``leader_epoch``
    other than -1 that is older / newer than the partition's -> FENCED_LEADER_EPOCH /
    UNKNOWN_LEADER_EPOCH; a partition reassignment in progress -> REASSIGNMENT_IN_PROGRESS; new
    replicas empty, unregistered, repeated, not the partition's replication factor in number,
    fenced or shutting down, or a ``leader`` that is not one of them ->
    INVALID_REPLICA_ASSIGNMENT; an offset past :data:`MAX_CHUNK_OFFSET` (no log could append
    there) -> INVALID_REQUEST; ``start_offset != prev_stop_offset + 1`` or ``prev_stop_offset
    > prev_end_offset`` -> INVALID_CHUNK_OFFSETS; ``start_offset`` equal to the active chunk's
    start (nothing to cut) -> INVALID_REQUEST; before it -> INVALID_CHUNK_OFFSETS; a start
    timestamp before the active chunk's -> INVALID_CHUNK_OFFSETS; past the operation's 10,000
    records -> POLICY_VIOLATION.

    A cut writes a ChunkRecord for the old active chunk (its start offset and timestamp, stop =
    ``prev_stop_offset``, end = ``prev_end_offset``, the partition's replicas and ISR, epoch 0)
    and a PartitionChangeRecord (replicas = ISR = ``broker_ids``, the leader, which bumps the
    leader epoch, and the new start offset and timestamp). ``validate_only`` writes nothing.
    """
    if request.broker_id != _NO_BROKER:
        try:
            check_broker_epoch(image, request.broker_id, request.broker_epoch)
        except ApiException as exc:
            return ControllerResult.of(_refuse_create_chunks(request, exc))
    keys = Counter((t.name, p.partition_index) for t in request.topics for p in t.partitions)
    budget = RecordBudget()
    records: list[Any] = []
    topic_results: list[CreateChunksTopicResult] = []
    for topic in request.topics:
        results: list[CreateChunksPartitionResult] = []
        for item in topic.partitions:
            try:
                if keys[(topic.name, item.partition_index)] > 1:
                    raise Errors.INVALID_REQUEST.exception(
                        f"Duplicate partition {topic.name}-{item.partition_index}."
                    )
                cut = _cut(image, topic.name, item, request.broker_id, budget)
            except ApiException as exc:
                results.append(CreateChunksPartitionResult(
                    partition_index=item.partition_index, error_code=exc.code,
                    error_message=exc.message))
                continue
            budget.spend(len(cut))
            records.extend(cut)
            results.append(CreateChunksPartitionResult(partition_index=item.partition_index))
        topic_results.append(CreateChunksTopicResult(name=topic.name, partitions=tuple(results)))
    response = CreateChunksResponse(topics=tuple(topic_results))
    return ControllerResult.of(response, () if request.validate_only else records)


def _refuse_create_chunks(request: CreateChunksRequest, exc: ApiException) -> CreateChunksResponse:
    return CreateChunksResponse(
        error_code=exc.code,
        error_message=exc.message,
        topics=tuple(
            CreateChunksTopicResult(
                name=topic.name,
                partitions=tuple(
                    CreateChunksPartitionResult(partition_index=p.partition_index,
                                                error_code=exc.code, error_message=exc.message)
                    for p in topic.partitions
                ),
            )
            for topic in request.topics
        ),
    )


def _cut(
    image: MetadataImage,
    name: str,
    item: CreateChunksPartition,
    broker_id: int,
    budget: RecordBudget,
) -> list[Any]:
    """The ChunkRecord and PartitionChangeRecord of one cut; raises ApiException if refused."""
    index = item.partition_index
    label = f"{name}-{index}"
    topic, partition = _partition_of(image, name, index)
    if broker_id != _NO_BROKER and partition.leader != broker_id:
        raise Errors.NOT_LEADER_OR_FOLLOWER.exception(
            f"Broker {broker_id} is not the leader of {label}; its leader is {partition.leader}."
        )
    if item.leader_epoch != -1 and item.leader_epoch != partition.leader_epoch:
        error = (Errors.FENCED_LEADER_EPOCH if item.leader_epoch < partition.leader_epoch
                 else Errors.UNKNOWN_LEADER_EPOCH)
        raise error.exception(
            f"The request carries leader epoch {item.leader_epoch}, but {label} is at leader "
            f"epoch {partition.leader_epoch}."
        )
    if partition.adding_replicas or partition.removing_replicas:
        raise Errors.REASSIGNMENT_IN_PROGRESS.exception(
            f"A reassignment of {label} is in progress; cut a chunk once it completes."
        )
    _check_new_replicas(image, label, item, len(partition.replicas))
    _check_offsets(label, item, partition)
    budget.check(2, f"Cutting the active chunk of {label}")

    active_start = max(partition.start_offset, 0)
    directories = partition.directories
    old_chunk = ChunkRecord(
        partition_id=index,
        topic_id=topic.topic_id,
        start_offset=active_start,
        start_timestamp=partition.start_timestamp,
        stop_offset=item.prev_stop_offset,
        end_offset=item.prev_end_offset,
        chunk_epoch=0,
        replicas=partition.replicas,
        directories=directories if len(directories) == len(partition.replicas) else (),
        isr=partition.isr,
        epoch=0,
    )
    replicas = item.broker_ids
    change = PartitionChangeRecord(
        partition_id=index,
        topic_id=topic.topic_id,
        replicas=replicas,
        isr=replicas,
        leader=item.leader if item.leader != -1 else replicas[0],
        # The old replicas' directories say nothing about the new replicas: unknown (empty).
        directories=() if directories else None,
        eligible_leader_replicas=() if partition.eligible_leader_replicas else None,
        last_known_elr=() if partition.last_known_elr else None,
        start_offset=item.start_offset,
        start_timestamp=item.start_timestamp,
    )
    return [old_chunk, change]


def _check_new_replicas(
    image: MetadataImage, label: str, item: CreateChunksPartition, replication_factor: int
) -> None:
    subject = "new active chunk's assignment"
    replicas = item.broker_ids
    validate_manual_assignment(image, replicas, subject)
    if len(replicas) != replication_factor:
        raise Errors.INVALID_REPLICA_ASSIGNMENT.exception(
            f"The {subject} includes {len(replicas)} replica(s), but the replication factor of "
            f"{label} is {replication_factor}."
        )
    check_brokers_usable(image, replicas, subject)
    if item.leader != -1 and item.leader not in replicas:
        raise Errors.INVALID_REPLICA_ASSIGNMENT.exception(
            f"The leader {item.leader} of the new active chunk is not one of its replicas "
            f"{list(replicas)}."
        )


def _check_offsets(label: str, item: CreateChunksPartition, partition: PartitionRecord) -> None:
    largest = max(item.prev_stop_offset, item.prev_end_offset, item.start_offset)
    if largest > MAX_CHUNK_OFFSET:
        raise Errors.INVALID_REQUEST.exception(
            f"Offset {largest} is past {MAX_CHUNK_OFFSET}, the largest offset at which a log "
            "can still append a record batch (2^63 - 1 - 2^31)."
        )
    if item.start_offset != item.prev_stop_offset + 1:
        raise Errors.INVALID_CHUNK_OFFSETS.exception(
            f"StartOffset {item.start_offset} must be PrevStopOffset + 1 "
            f"({item.prev_stop_offset + 1})."
        )
    if item.prev_stop_offset > item.prev_end_offset:
        raise Errors.INVALID_CHUNK_OFFSETS.exception(
            f"PrevStopOffset {item.prev_stop_offset} is after PrevEndOffset "
            f"{item.prev_end_offset}: the last stable offset cannot pass the high watermark."
        )
    active_start = max(partition.start_offset, 0)
    if item.start_offset == active_start:
        raise Errors.INVALID_REQUEST.exception(
            f"The active chunk of {label} is empty: StartOffset {item.start_offset} is its own "
            "start offset, so there is nothing to cut."
        )
    if item.start_offset < active_start:
        raise Errors.INVALID_CHUNK_OFFSETS.exception(
            f"StartOffset {item.start_offset} is before the start offset {active_start} of the "
            f"active chunk of {label}."
        )
    if item.start_timestamp < -1:
        raise Errors.INVALID_CHUNK_OFFSETS.exception(
            f"StartTimestamp {item.start_timestamp} is not a timestamp (-1: unknown)."
        )
    if item.start_timestamp < partition.start_timestamp:
        raise Errors.INVALID_CHUNK_OFFSETS.exception(
            f"StartTimestamp {item.start_timestamp} is before the start timestamp "
            f"{partition.start_timestamp} of the active chunk of {label}."
        )


# ------------------------------------------------------------------ alter_chunk_assignments


def alter_chunk_assignments(
    image: MetadataImage, request: AlterChunkAssignmentsRequest
) -> ControllerResult[AlterChunkAssignmentsResponse]:
    """AlterChunkAssignments: start moving each inactive chunk to its ``broker_ids``.

    Per chunk, in order: the chunk named twice in the request -> INVALID_REQUEST; unknown topic
    or partition -> UNKNOWN_TOPIC_OR_PARTITION (an illegal topic name ->
    INVALID_TOPIC_EXCEPTION); no inactive chunk at ``start_offset`` ->
    UNKNOWN_CHUNK; ``chunk_epoch`` neither -1 nor the chunk's epoch -> FENCED_CHUNK_EPOCH;
    target empty, unregistered, repeated, not the partition's replication factor in number,
    fenced or shutting down -> INVALID_REPLICA_ASSIGNMENT; a move in progress to another target
    -> REASSIGNMENT_IN_PROGRESS (to the same target: success, nothing written); a move that
    needs a copy while the chunk has no in-sync replica -> REPLICA_NOT_AVAILABLE; one that
    would leave no in-sync replica -> INVALID_REPLICA_ASSIGNMENT; past the operation's 10,000
    records -> POLICY_VIOLATION.

    A target equal to the current replicas writes nothing. A target that adds no broker (a
    reorder, or dropping extra replicas) completes at once. Otherwise one ChunkChangeRecord:
    Replicas = target + (current - target), AddingReplicas = target - current,
    RemovingReplicas = current - target, ISR unchanged, epoch + 1; the adding replicas then
    copy the chunk and report IN_SYNC (:func:`chunk_replica_state`). ``validate_only`` writes
    nothing.
    """
    records, outcomes = _each_chunk(
        request.chunks, lambda item, budget: _reassign(image, item, budget))
    results = [AlterChunkAssignmentResult(
        topic_name=item.topic_name, partition_id=item.partition_id,
        start_offset=item.start_offset,
        error_code=error.code if error else 0,
        error_message=error.message if error else None) for item, error in outcomes]
    response = AlterChunkAssignmentsResponse(results=tuple(results))
    return ControllerResult.of(response, () if request.validate_only else records)


ChunkItem = TypeVar("ChunkItem", AlterChunkAssignment, ChunkReplicaStateItem)


def _each_chunk(
    items: Sequence[ChunkItem],
    change: Callable[[ChunkItem, RecordBudget], ChunkChangeRecord | None],
) -> tuple[list[Any], list[tuple[ChunkItem, ApiException | None]]]:
    """Runs ``change`` on each item of a request naming chunks, each on its own: a chunk named
    twice is refused (INVALID_REQUEST); returns the records and each item's error or None."""
    keys = Counter((c.topic_name, c.partition_id, c.start_offset) for c in items)
    budget = RecordBudget()
    records: list[Any] = []
    outcomes: list[tuple[ChunkItem, ApiException | None]] = []
    for item in items:
        error: ApiException | None = None
        try:
            key = (item.topic_name, item.partition_id, item.start_offset)
            if keys[key] > 1:
                raise Errors.INVALID_REQUEST.exception(f"Duplicate chunk {_chunk_label(*key)}.")
            record = change(item, budget)
        except ApiException as exc:
            error = exc
        else:
            if record is not None:
                budget.spend(1)
                records.append(record)
        outcomes.append((item, error))
    return records, outcomes


def _chunk_label(name: str, partition_id: int, start_offset: int) -> str:
    return f"{name}-{partition_id}@{start_offset}"


def _chunk_of(
    image: MetadataImage, name: str, partition_id: int, start_offset: int, chunk_epoch: int
) -> tuple[TopicImage, PartitionRecord, ChunkRecord]:
    """The chunk a request names, checked: UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_CHUNK,
    FENCED_CHUNK_EPOCH."""
    topic, partition = _partition_of(image, name, partition_id)
    chunk = topic.chunk(partition_id, start_offset)
    if chunk is None:
        if start_offset == partition.start_offset:
            raise Errors.UNKNOWN_CHUNK.exception(
                f"Offset {start_offset} starts the active chunk of {name}-{partition_id}, which "
                "moves with a partition reassignment, not as an inactive chunk."
            )
        raise Errors.UNKNOWN_CHUNK.exception(
            f"Partition {name}-{partition_id} has no inactive chunk that starts at offset "
            f"{start_offset}."
        )
    if chunk_epoch != -1 and chunk_epoch != chunk.epoch:
        raise Errors.FENCED_CHUNK_EPOCH.exception(
            f"Chunk {_chunk_label(name, partition_id, start_offset)} is at epoch {chunk.epoch}; "
            f"the request carries epoch {chunk_epoch}."
        )
    return topic, partition, chunk


def _reassign(
    image: MetadataImage, item: AlterChunkAssignment, budget: RecordBudget
) -> ChunkChangeRecord | None:
    """The record that starts (or completes) one move, None if nothing changes."""
    label = _chunk_label(item.topic_name, item.partition_id, item.start_offset)
    topic, partition, chunk = _chunk_of(
        image, item.topic_name, item.partition_id, item.start_offset, item.chunk_epoch
    )
    subject = "chunk assignment"
    target = item.broker_ids
    validate_manual_assignment(image, target, subject)
    replication_factor = len(partition.replicas) - len(partition.removing_replicas)
    if len(target) != replication_factor:
        raise Errors.INVALID_REPLICA_ASSIGNMENT.exception(
            f"The {subject} includes {len(target)} replica(s), but the replication factor of "
            f"{item.topic_name}-{item.partition_id} is {replication_factor}."
        )
    check_brokers_usable(image, target, subject)
    if chunk.adding_replicas or chunk.removing_replicas:
        current_target = _without(chunk.replicas, set(chunk.removing_replicas))
        if current_target == target:
            return None
        raise Errors.REASSIGNMENT_IN_PROGRESS.exception(
            f"A reassignment of chunk {label} to {list(current_target)} is in progress."
        )
    current = chunk.replicas
    if target == current:
        return None
    adding = _without(target, set(current))
    removing = _without(current, set(target))
    if adding:
        if not chunk.isr:
            raise Errors.REPLICA_NOT_AVAILABLE.exception(
                f"Chunk {label} has no in-sync replica for the new replicas to copy from."
            )
        replicas, isr = target + removing, chunk.isr
    else:
        replicas, isr = target, tuple(r for r in target if r in chunk.isr)
        if not isr:
            raise Errors.INVALID_REPLICA_ASSIGNMENT.exception(
                f"The {subject} {list(target)} would leave chunk {label} without an in-sync "
                f"replica (its in-sync replicas are {list(chunk.isr)})."
            )
        removing = ()
    budget.check(1, f"Moving chunk {label}")
    return ChunkChangeRecord(
        partition_id=chunk.partition_id,
        topic_id=topic.topic_id,
        start_offset=chunk.start_offset,
        replicas=replicas,
        directories=() if chunk.directories else None,
        isr=isr,
        removing_replicas=removing,
        adding_replicas=adding,
        epoch=chunk.epoch + 1,
    )


# ------------------------------------------------------------------ chunk_replica_state


def chunk_replica_state(
    image: MetadataImage, request: ChunkReplicaStateRequest
) -> ControllerResult[ChunkReplicaStateResponse]:
    """A broker reports on its own replicas of inactive chunks.

    The broker must be registered with ``broker_epoch``, else the whole report fails with
    STALE_BROKER_EPOCH. Per chunk: named twice -> INVALID_REQUEST; unknown topic, partition or
    chunk -> UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_CHUNK (a broker dropping a chunk that is
    already gone may treat UNKNOWN_CHUNK as done); ``chunk_epoch`` neither -1 nor the chunk's
    -> FENCED_CHUNK_EPOCH; past the operation's 10,000 records -> POLICY_VIOLATION.

    IN_SYNC: a broker already in the ISR -> success, nothing written (a repeated report); a
    broker that is not a replica -> NO_REASSIGNMENT_IN_PROGRESS; otherwise it joins the ISR,
    and once every adding replica is in the ISR the move completes (Replicas = target, ISR =
    the target's in-sync replicas, no adding or removing replicas).

    DROPPED: a broker that is not a replica -> success, nothing written; otherwise it leaves
    replicas, ISR, adding and removing replicas. With no replica left the chunk is removed
    (Replicas = []). A move left with no adding replica outside the ISR completes; one whose
    target would keep no in-sync replica is cancelled instead (its removing replicas stay).
    Each change is one ChunkChangeRecord with the chunk's epoch + 1.
    """
    try:
        check_broker_epoch(image, request.broker_id, request.broker_epoch)
    except ApiException as exc:
        refused = tuple(_state_result(item, exc) for item in request.chunks)
        return ControllerResult.of(ChunkReplicaStateResponse(
            error_code=exc.code, error_message=exc.message, results=refused))
    records, outcomes = _each_chunk(
        request.chunks,
        lambda item, budget: _replica_state(image, request.broker_id, item, budget))
    results = [_state_result(item, error) for item, error in outcomes]
    return ControllerResult.of(ChunkReplicaStateResponse(results=tuple(results)), records)


def _state_result(
    item: ChunkReplicaStateItem, error: ApiException | None
) -> ChunkReplicaStateResult:
    return ChunkReplicaStateResult(
        topic_name=item.topic_name, partition_id=item.partition_id,
        start_offset=item.start_offset,
        error_code=error.code if error else 0,
        error_message=error.message if error else None)


def _replica_state(
    image: MetadataImage, broker_id: int, item: ChunkReplicaStateItem, budget: RecordBudget
) -> ChunkChangeRecord | None:
    label = _chunk_label(item.topic_name, item.partition_id, item.start_offset)
    topic, _, chunk = _chunk_of(
        image, item.topic_name, item.partition_id, item.start_offset, item.chunk_epoch
    )
    if item.state is ChunkReplicaState.IN_SYNC:
        if broker_id in chunk.isr:
            return None
        if broker_id not in chunk.replicas:
            in_progress = chunk.adding_replicas or chunk.removing_replicas
            raise Errors.NO_REASSIGNMENT_IN_PROGRESS.exception(
                f"Broker {broker_id} is not a replica of chunk {label}"
                + (f"; the reassignment in progress adds {list(chunk.adding_replicas)}."
                   if in_progress else ", and no reassignment of it is in progress.")
            )
        joined = set(chunk.isr) | {broker_id}
        state = _settle(chunk.replicas, tuple(r for r in chunk.replicas if r in joined),
                        chunk.adding_replicas, chunk.removing_replicas)
    else:
        if broker_id not in chunk.replicas:
            return None
        gone = {broker_id}
        state = _settle(_without(chunk.replicas, gone), _without(chunk.isr, gone),
                        _without(chunk.adding_replicas, gone),
                        _without(chunk.removing_replicas, gone))
    budget.check(1, f"Updating the replicas of chunk {label}")
    replicas, isr, adding, removing = state
    return ChunkChangeRecord(
        partition_id=chunk.partition_id,
        topic_id=topic.topic_id,
        start_offset=chunk.start_offset,
        replicas=replicas,
        directories=() if chunk.directories and replicas != chunk.replicas else None,
        isr=isr,
        removing_replicas=removing,
        adding_replicas=adding,
        epoch=chunk.epoch + 1,
    )


_ReplicaState = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]


def _settle(
    replicas: tuple[int, ...],
    isr: tuple[int, ...],
    adding: tuple[int, ...],
    removing: tuple[int, ...],
) -> _ReplicaState:
    """(replicas, isr, adding, removing) after a change, with a finished move completed.

    A move is finished when no adding replica is outside the ISR. It completes to its target
    (replicas minus removing) if the target keeps an in-sync replica; otherwise it is cancelled
    and the removing replicas stay, so the last full copies are never deleted.
    """
    if not replicas:
        return (), (), (), ()
    if (adding or removing) and all(r in isr for r in adding):
        target = _without(replicas, set(removing))
        target_isr = tuple(r for r in target if r in isr)
        if target_isr:
            return target, target_isr, (), ()
        return replicas, isr, (), ()
    return replicas, isr, adding, removing
