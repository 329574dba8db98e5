"""Small builders for image unit tests."""

from __future__ import annotations

import uuid
from typing import Any

from chunkraft.controller.image import MetadataDelta, MetadataImage
from chunkraft.records import ChunkRecord, PartitionRecord, RegisterBrokerRecord, TopicRecord

TOPIC_ID = uuid.UUID(int=0x1234)


def replay(records: list[Any], base: MetadataImage = MetadataImage.EMPTY) -> MetadataImage:
    delta = MetadataDelta(base)
    for record in records:
        delta.replay(record)
    return delta.apply()


def broker(broker_id: int, epoch: int = 0) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(broker_id=broker_id, broker_epoch=epoch, fenced=False)


def topic(name: str = "orders", topic_id: uuid.UUID = TOPIC_ID) -> TopicRecord:
    return TopicRecord(name=name, topic_id=topic_id)


def partition(
    partition_id: int = 0,
    replicas: tuple[int, ...] = (0,),
    topic_id: uuid.UUID = TOPIC_ID,
    start_offset: int = 0,
) -> PartitionRecord:
    return PartitionRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        replicas=replicas,
        isr=replicas,
        leader=replicas[0],
        leader_epoch=0,
        partition_epoch=0,
        start_offset=start_offset,
    )


def chunk(
    start: int,
    stop: int,
    end: int,
    replicas: tuple[int, ...],
    partition_id: int = 0,
    epoch: int = 0,
    topic_id: uuid.UUID = TOPIC_ID,
) -> ChunkRecord:
    return ChunkRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        start_offset=start,
        start_timestamp=1000 + start,
        stop_offset=stop,
        end_offset=end,
        chunk_epoch=epoch,
        epoch=epoch,
        replicas=replicas,
        isr=replicas,
    )
