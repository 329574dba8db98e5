"""AlterPartition (KIP-497, KIP-841): a partition leader asks to shrink or expand the ISR."""

from __future__ import annotations

import uuid

from chunkraft.controller.image import MetadataImage, TopicImage
from chunkraft.controller.image.partition_merge import merge_partition_change
from chunkraft.controller.operations.leader_election import build_partition_change
from chunkraft.controller.result import ControllerResult
from chunkraft.error_codes import Errors
from chunkraft.protocol.brokers import (
    AlterPartitionBrokerState,
    AlterPartitionPartitionData,
    AlterPartitionPartitionResult,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionTopicData,
    AlterPartitionTopicResult,
)
from chunkraft.records import ZERO_UUID, PartitionChangeRecord, PartitionRecord
from chunkraft.records.uuids import parse_kafka_uuid

__all__ = ["LEADER_RECOVERED", "LEADER_RECOVERING", "alter_partition"]

LEADER_RECOVERED = 0
LEADER_RECOVERING = 1


class _Rejected(Exception):
    """One partition's validation error (internal: becomes that partition's result)."""

    def __init__(self, error: Errors, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def alter_partition(
    image: MetadataImage, request: AlterPartitionRequest
) -> ControllerResult[AlterPartitionResponse]:
    """Validates each proposed ISR and returns one PartitionChangeRecord per changed partition.

    STALE_BROKER_EPOCH for the whole request when the broker is not registered or the epoch is
    not its registration's. Per topic: INVALID_REQUEST for a topic id that is not a uuid,
    UNKNOWN_TOPIC_ID for an unknown id, UNKNOWN_TOPIC_OR_PARTITION for an unknown name. Per
    partition, in Kafka's order (``validateAlterPartitionData``):

    1. UNKNOWN_TOPIC_OR_PARTITION: no such partition (INVALID_REQUEST for a partition the
       request names twice);
    2. NOT_CONTROLLER: the leader or partition epoch is newer than this controller's image;
    3. FENCED_LEADER_EPOCH: the leader epoch is older;
    4. NOT_LEADER_OR_FOLLOWER: the requester is not the leader (Kafka: INVALID_REQUEST);
    5. INVALID_UPDATE_VERSION: the partition epoch is older;
    6. INVALID_REQUEST: an ISR with duplicates, negative ids or non-replicas, without the leader
       (so never empty), a leader recovery state other than 0 or 1, RECOVERING with more than
       one ISR member, or RECOVERED -> RECOVERING;
    7. INELIGIBLE_REPLICA: a new ISR member not registered, in controlled shutdown, fenced, or
       (with ``new_isr_with_epochs``) registered with another epoch than the leader saw.

    On success the change sets only the ISR (and the leader recovery state when it changes):
    the partition epoch bumps, the leader and leader epoch stay. The same ISR again writes
    nothing and succeeds. Each partition result carries the state after the change.
    """
    registration = image.brokers.get(request.broker_id)
    if registration is None or registration.broker_epoch != request.broker_epoch:
        message = (
            f"No broker registration found for broker id {request.broker_id}"
            if registration is None
            else f"Expected broker epoch {registration.broker_epoch}, but got broker epoch "
            f"{request.broker_epoch}"
        )
        return ControllerResult.of(
            AlterPartitionResponse(error_code=Errors.STALE_BROKER_EPOCH.code,
                                   error_message=message)
        )
    records: list[PartitionChangeRecord] = []
    topic_results: list[AlterPartitionTopicResult] = []
    seen: set[tuple[uuid.UUID, int]] = set()
    for topic_data in request.topics:
        results: list[AlterPartitionPartitionResult] = []
        try:
            topic = _resolve_topic(image, topic_data)
        except _Rejected as rejected:
            results = [_error(p.partition_index, rejected) for p in topic_data.partitions]
        else:
            for data in topic_data.partitions:
                key = (topic.topic_id, data.partition_index)
                try:
                    if key in seen:
                        raise _Rejected(
                            Errors.INVALID_REQUEST,
                            f"partition {topic.name}-{data.partition_index} appears more than "
                            "once in the request",
                        )
                    seen.add(key)
                    partition = _validate(image, request.broker_id, topic, data)
                except _Rejected as rejected:
                    results.append(_error(data.partition_index, rejected))
                    continue
                change = build_partition_change(
                    partition,
                    isr=tuple(state.broker_id for state in data.isr_states()),
                    leader_recovery_state=data.leader_recovery_state,
                )
                if change is not None:
                    records.append(change)
                    partition = merge_partition_change(partition, change)
                results.append(AlterPartitionPartitionResult(
                    partition_index=data.partition_index,
                    leader_id=partition.leader,
                    leader_epoch=partition.leader_epoch,
                    isr=partition.isr,
                    leader_recovery_state=partition.leader_recovery_state,
                    partition_epoch=partition.partition_epoch,
                ))
        topic_results.append(AlterPartitionTopicResult(
            topic_id=topic_data.topic_id,
            topic_name=topic_data.topic_name,
            partitions=tuple(results),
        ))
    return ControllerResult.of(AlterPartitionResponse(topics=tuple(topic_results)), records)


def _error(partition_index: int, rejected: _Rejected) -> AlterPartitionPartitionResult:
    return AlterPartitionPartitionResult(
        partition_index=partition_index,
        error_code=rejected.error.code,
        error_message=rejected.message,
    )


def _resolve_topic(image: MetadataImage, data: AlterPartitionTopicData) -> TopicImage:
    if data.topic_id is not None:
        try:
            topic_id = parse_kafka_uuid(data.topic_id)
        except ValueError:
            raise _Rejected(
                Errors.INVALID_REQUEST, f"topic id {data.topic_id!r} is not a uuid"
            ) from None
        topic = image.topics.get(topic_id) if topic_id != ZERO_UUID else None
        if topic is None:
            raise _Rejected(Errors.UNKNOWN_TOPIC_ID, f"Unknown topic id {data.topic_id}")
        return topic
    assert data.topic_name is not None
    topic = image.topics.get_by_name(data.topic_name)
    if topic is None:
        raise _Rejected(
            Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Unknown topic {data.topic_name!r}"
        )
    return topic


def _validate(
    image: MetadataImage, broker_id: int, topic: TopicImage, data: AlterPartitionPartitionData
) -> PartitionRecord:
    """The current partition if ``data`` may change it; raises :class:`_Rejected` otherwise."""
    name = f"{topic.name}-{data.partition_index}"
    partition = topic.partition(data.partition_index)
    if partition is None:
        raise _Rejected(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Unknown partition {name}")
    if data.leader_epoch > partition.leader_epoch:
        raise _Rejected(
            Errors.NOT_CONTROLLER,
            f"{name}: leader epoch {data.leader_epoch} is newer than this controller's "
            f"{partition.leader_epoch}",
        )
    if data.partition_epoch > partition.partition_epoch:
        raise _Rejected(
            Errors.NOT_CONTROLLER,
            f"{name}: partition epoch {data.partition_epoch} is newer than this controller's "
            f"{partition.partition_epoch}",
        )
    if data.leader_epoch < partition.leader_epoch:
        raise _Rejected(
            Errors.FENCED_LEADER_EPOCH,
            f"{name}: the current leader epoch is {partition.leader_epoch}, not "
            f"{data.leader_epoch}",
        )
    if broker_id != partition.leader:
        raise _Rejected(
            Errors.NOT_LEADER_OR_FOLLOWER,
            f"{name}: the current leader is {partition.leader}, not broker {broker_id}",
        )
    if data.partition_epoch < partition.partition_epoch:
        raise _Rejected(
            Errors.INVALID_UPDATE_VERSION,
            f"{name}: the current partition epoch is {partition.partition_epoch}, not "
            f"{data.partition_epoch}",
        )
    states = data.isr_states()
    new_isr = [state.broker_id for state in states]
    _validate_isr(name, partition, new_isr, data.leader_recovery_state)
    ineligible = _ineligible(image, states)
    if ineligible:
        raise _Rejected(
            Errors.INELIGIBLE_REPLICA,
            f"{name}: ineligible replicas in the new ISR {new_isr}: " + "; ".join(ineligible),
        )
    return partition


def _validate_isr(
    name: str, partition: PartitionRecord, new_isr: list[int], recovery_state: int
) -> None:
    invalid = Errors.INVALID_REQUEST
    if len(set(new_isr)) != len(new_isr):
        raise _Rejected(invalid, f"{name}: the new ISR {new_isr} has duplicate brokers")
    outside = [b for b in new_isr if b not in partition.replicas]
    if outside:
        raise _Rejected(
            invalid,
            f"{name}: the new ISR {new_isr} has brokers {outside} that are not replicas "
            f"{list(partition.replicas)}",
        )
    if partition.leader not in new_isr:
        raise _Rejected(
            invalid, f"{name}: the new ISR {new_isr} does not include the leader "
            f"{partition.leader}",
        )
    if recovery_state not in (LEADER_RECOVERED, LEADER_RECOVERING):
        raise _Rejected(
            invalid, f"{name}: leader recovery state {recovery_state} is neither "
            f"{LEADER_RECOVERED} (recovered) nor {LEADER_RECOVERING} (recovering)",
        )
    if recovery_state == LEADER_RECOVERING and len(new_isr) > 1:
        raise _Rejected(
            invalid, f"{name}: the ISR {new_isr} has more than one replica while the leader "
            "is still recovering from an unclean leader election",
        )
    if partition.leader_recovery_state == LEADER_RECOVERED and (
        recovery_state == LEADER_RECOVERING
    ):
        raise _Rejected(
            invalid, f"{name}: the leader recovery state cannot change from RECOVERED to "
            "RECOVERING",
        )


def _ineligible(image: MetadataImage, states: tuple[AlterPartitionBrokerState, ...]) -> list[str]:
    reasons: list[str] = []
    for state in states:
        registration = image.brokers.get(state.broker_id)
        if registration is None:
            reasons.append(f"{state.broker_id} is not registered")
        elif registration.in_controlled_shutdown:
            reasons.append(f"{state.broker_id} is shutting down")
        elif registration.fenced:
            reasons.append(f"{state.broker_id} is fenced")
        elif state.broker_epoch != -1 and state.broker_epoch != registration.broker_epoch:
            reasons.append(
                f"{state.broker_id} has broker epoch {registration.broker_epoch}, not "
                f"{state.broker_epoch}"
            )
    return reasons
