"""Builders for broker / ISR / producer id / ACL operation tests: images made by committing."""

from __future__ import annotations

import uuid
from typing import Any

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.brokers import broker_heartbeat, register_broker
from chunkraft.controller.result import ControllerResult
from chunkraft.protocol.brokers import BrokerHeartbeatRequest, BrokerRegistrationRequest
from chunkraft.records import ChunkRecord, PartitionRecord, RegisterBrokerRecord, TopicRecord
from tests.support.controller import commit

CLUSTER_ID = "chunkraft-test-cluster"
TOPIC_ID = uuid.UUID(int=0xA11CE)
OTHER_TOPIC_ID = uuid.UUID(int=0xB0B)


class NoSessions:
    """A heartbeat view in which every session has expired."""

    def has_valid_session(self, broker_id: int, broker_epoch: int, now: float) -> bool:
        return False


class LiveSessions:
    """A heartbeat view in which every session is valid."""

    def has_valid_session(self, broker_id: int, broker_epoch: int, now: float) -> bool:
        return True


def incarnation(broker_id: int, generation: int = 0) -> uuid.UUID:
    return uuid.UUID(int=(broker_id + 1) << 32 | generation + 1)


def apply(image: MetadataImage, *records: Any) -> MetadataImage:
    """``image`` after ``records`` commit as one batch."""
    return commit(image, ControllerResult.of(None, records))


def registration_request(
    broker_id: int, generation: int = 0, **fields: Any
) -> BrokerRegistrationRequest:
    return BrokerRegistrationRequest(
        broker_id=broker_id,
        cluster_id=fields.pop("cluster_id", CLUSTER_ID),
        incarnation_id=fields.pop("incarnation_id", str(incarnation(broker_id, generation))),
        **fields,
    )


def register(image: MetadataImage, broker_id: int, generation: int = 0) -> MetadataImage:
    """Registers ``broker_id`` through the operation (so its epoch is its record's offset)."""
    result = register_broker(
        image, registration_request(broker_id, generation), cluster_id=CLUSTER_ID,
        sessions=NoSessions(), now=0.0,
    )
    assert result.response.error_code == 0, result.response
    return commit(image, result)


def unfence(image: MetadataImage, broker_id: int) -> MetadataImage:
    """A caught-up heartbeat from ``broker_id``, committed."""
    result = broker_heartbeat(image, heartbeat(image, broker_id))
    assert result.response.error_code == 0 and not result.response.is_fenced, result.response
    return commit(image, result)


def heartbeat(image: MetadataImage, broker_id: int, **fields: Any) -> BrokerHeartbeatRequest:
    registration = registration_of(image, broker_id)
    fields.setdefault("current_metadata_offset", image.offset)
    return BrokerHeartbeatRequest(
        broker_id=broker_id, broker_epoch=registration.broker_epoch, **fields
    )


def registration_of(image: MetadataImage, broker_id: int) -> RegisterBrokerRecord:
    registration = image.brokers.get(broker_id)
    assert registration is not None, f"broker {broker_id} is not registered"
    return registration


def cluster(*broker_ids: int, fenced: tuple[int, ...] = ()) -> MetadataImage:
    """Registered brokers, unfenced except ``fenced``."""
    image = MetadataImage.EMPTY
    for broker_id in broker_ids:
        image = register(image, broker_id)
    for broker_id in broker_ids:
        if broker_id not in fenced:
            image = unfence(image, broker_id)
    return image


def partition(
    partition_id: int,
    replicas: tuple[int, ...],
    isr: tuple[int, ...] | None = None,
    leader: int | None = None,
    topic_id: uuid.UUID = TOPIC_ID,
    leader_epoch: int = 0,
    partition_epoch: int = 0,
    leader_recovery_state: int = 0,
) -> PartitionRecord:
    isr = replicas if isr is None else isr
    return PartitionRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        replicas=replicas,
        isr=isr,
        leader=isr[0] if leader is None else leader,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
        leader_recovery_state=leader_recovery_state,
        start_offset=0,
    )


def with_topic(
    image: MetadataImage,
    *records: PartitionRecord | ChunkRecord,
    name: str = "orders",
    topic_id: uuid.UUID = TOPIC_ID,
) -> MetadataImage:
    """``image`` with a new topic and its partitions (and chunks)."""
    return apply(image, TopicRecord(name=name, topic_id=topic_id), *records)


def chunk(
    partition_id: int, start: int, end: int, replicas: tuple[int, ...],
    topic_id: uuid.UUID = TOPIC_ID,
) -> ChunkRecord:
    return ChunkRecord(
        partition_id=partition_id, topic_id=topic_id, start_offset=start, start_timestamp=start,
        stop_offset=end, end_offset=end, chunk_epoch=0, epoch=0, replicas=replicas, isr=replicas,
    )


def state(image: MetadataImage, partition_id: int, topic_id: uuid.UUID = TOPIC_ID
          ) -> PartitionRecord:
    topic = image.topics.get(topic_id)
    assert topic is not None
    found = topic.partition(partition_id)
    assert found is not None
    return found
