"""Builders for topic, partition and chunk operation tests: images made by committing records."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from chunkraft.controller.image import MetadataImage, TopicImage
from chunkraft.controller.result import ControllerResult
from chunkraft.records import (
    BrokerEndpoint,
    ChunkRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    validate_record,
)
from tests.support.controller import commit

ORDERS_ID = uuid.UUID(int=0x0DE75)
OTHER_ID = uuid.UUID(int=0x07E5)


def broker_epoch(broker_id: int) -> int:
    """The epoch the builders register ``broker_id`` with."""
    return 100 + broker_id


def registration(
    broker_id: int, rack: str | None = None, fenced: bool = False, shutdown: bool = False
) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id=broker_id,
        incarnation_id=uuid.UUID(int=broker_id + 1),
        broker_epoch=broker_epoch(broker_id),
        end_points=(BrokerEndpoint(name="PLAINTEXT", host=f"b{broker_id}.test",
                                   port=9000 + broker_id),),
        rack=rack,
        fenced=fenced,
        in_controlled_shutdown=shutdown,
    )


def cluster(
    brokers: Iterable[int] = (0, 1, 2),
    racks: dict[int, str] | None = None,
    fenced: Iterable[int] = (),
    shutdown: Iterable[int] = (),
) -> MetadataImage:
    """An image with ``brokers`` registered (unfenced unless listed in ``fenced``)."""
    racks = racks or {}
    fenced_ids, shutdown_ids = set(fenced), set(shutdown)
    return apply(
        MetadataImage.EMPTY,
        *(registration(b, racks.get(b), b in fenced_ids, b in shutdown_ids) for b in brokers),
    )


def apply(image: MetadataImage, *records: Any) -> MetadataImage:
    """``image`` after ``records`` commit as one batch."""
    return commit(image, ControllerResult.of(None, records))


def commit_valid(image: MetadataImage, result: ControllerResult[Any]) -> MetadataImage:
    """Checks every record of ``result`` as the controller does before writing, commits them,
    and checks that the new image, written out as records, is valid too (e.g. directories
    still match replicas after the changes merged)."""
    for record in result.records:
        validate_record(record)
    after = commit(image, result)
    if after is not image:
        for record in after.to_records():
            validate_record(record)
    return after


def partition(
    partition_id: int,
    replicas: tuple[int, ...],
    topic_id: uuid.UUID = ORDERS_ID,
    **fields: Any,
) -> PartitionRecord:
    values: dict[str, Any] = {
        "isr": replicas, "leader": replicas[0], "leader_epoch": 0, "partition_epoch": 0,
        "start_offset": 0, "start_timestamp": -1,
    }
    values.update(fields)
    return PartitionRecord(partition_id=partition_id, topic_id=topic_id, replicas=replicas,
                           **values)


def with_topic(
    image: MetadataImage,
    name: str = "orders",
    replicas: Iterable[tuple[int, ...]] = ((0, 1), (1, 2), (2, 0)),
    topic_id: uuid.UUID = ORDERS_ID,
    **fields: Any,
) -> MetadataImage:
    """``image`` plus a topic whose partition i has replicas ``replicas[i]``."""
    return apply(
        image,
        TopicRecord(name=name, topic_id=topic_id),
        *(partition(i, r, topic_id, **fields) for i, r in enumerate(replicas)),
    )


def chunk(
    start: int,
    stop: int,
    end: int,
    replicas: tuple[int, ...],
    partition_id: int = 0,
    topic_id: uuid.UUID = ORDERS_ID,
    **fields: Any,
) -> ChunkRecord:
    values: dict[str, Any] = {"isr": replicas, "chunk_epoch": 0, "epoch": 0,
                              "start_timestamp": 1000 + start}
    values.update(fields)
    if "epoch" in fields:
        values["chunk_epoch"] = fields["epoch"]
    return ChunkRecord(partition_id=partition_id, topic_id=topic_id, start_offset=start,
                       stop_offset=stop, end_offset=end, replicas=replicas, **values)


def topic_of(image: MetadataImage, name: str = "orders") -> TopicImage:
    topic = image.topics.get_by_name(name)
    assert topic is not None, f"no topic {name}"
    return topic


def partition_of(image: MetadataImage, index: int, name: str = "orders") -> PartitionRecord:
    found = topic_of(image, name).partition(index)
    assert found is not None, f"no partition {name}-{index}"
    return found


def chunk_of(image: MetadataImage, start: int, index: int = 0, name: str = "orders") -> ChunkRecord:
    found = topic_of(image, name).chunk(index, start)
    assert found is not None, f"no chunk {name}-{index}@{start}"
    return found
