"""controller/image/configs: set, delete, a deleted topic's configs go with it, snapshots and a
broker's snapshot load (delta_between) carry them."""

from __future__ import annotations

import uuid

from chunkraft.broker_agent.image_diff import delta_between
from chunkraft.controller.image import MetadataDelta, MetadataImage
from chunkraft.records import ConfigRecord, RemoveTopicRecord, TopicRecord

ORDERS = uuid.UUID(int=7)


def replay(records: list[object], base: MetadataImage = MetadataImage.EMPTY) -> MetadataImage:
    delta = MetadataDelta(base)
    delta.replay_all(records)
    return delta.apply()


def test_a_deleted_topic_takes_its_configurations_along() -> None:
    image = replay([TopicRecord(name="orders", topic_id=ORDERS),
                    ConfigRecord(2, "orders", "retention.ms", "1000"),
                    ConfigRecord(4, "", "log.retention.ms", "5000")])
    assert dict(image.configs.topic("orders")) == {"retention.ms": "1000"}
    after = replay([RemoveTopicRecord(topic_id=ORDERS)], image)
    assert dict(after.configs.topic("orders")) == {}
    assert dict(after.configs.cluster_default()) == {"log.retention.ms": "5000"}


def test_snapshots_and_snapshot_loads_carry_configurations() -> None:
    old = replay([ConfigRecord(4, "1", "min.insync.replicas", "2"),
                  ConfigRecord(2, "orders", "retention.ms", "1000")])
    new = replay([ConfigRecord(4, "1", "min.insync.replicas", None),
                  ConfigRecord(2, "orders", "retention.ms", "2000"),
                  ConfigRecord(2, "payments", "max.message.bytes", "100")], old)
    assert replay(list(new.to_records())).with_provenance(new.provenance) == new
    assert delta_between(old, new).apply(new.provenance) == new
    assert new.content_hash() != old.content_hash()
