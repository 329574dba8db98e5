"""InternalTopics: key -> partition, topic creation through the controller."""

from __future__ import annotations

import asyncio
from typing import Any

from chunkraft.broker_agent.coordinator.internal_topics import (
    CONSUMER_OFFSETS_TOPIC,
    CREATE_TOPICS_PATH,
    TRANSACTION_STATE_TOPIC,
    InternalTopics,
    partition_for_key,
    topic_for_key_type,
)
from chunkraft.controller.image import MetadataImage
from chunkraft.dataplane.murmur2 import positive_hash
from chunkraft.error_codes import Errors


class FakeController:
    def __init__(self, error_code: int = 0) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.error_code = error_code

    async def call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((path, body))
        name = body["topics"][0]["name"]
        return {"topics": [{"name": name, "error_code": self.error_code}]}


def test_partition_and_topic_of_a_key() -> None:
    assert partition_for_key("txn-1", 3) == positive_hash(b"txn-1") % 3
    assert topic_for_key_type(0) == CONSUMER_OFFSETS_TOPIC
    assert topic_for_key_type(1) == TRANSACTION_STATE_TOPIC


def test_missing_topic_is_created_once_and_answers_not_available() -> None:
    controller = FakeController(Errors.TOPIC_ALREADY_EXISTS.code)
    topics = InternalTopics(controller, lambda: MetadataImage.EMPTY,
                            {TRANSACTION_STATE_TOPIC: 5})

    async def run() -> None:
        found = await asyncio.gather(topics.find(TRANSACTION_STATE_TOPIC, "a", wait_s=0.1),
                                     topics.find(TRANSACTION_STATE_TOPIC, "b", wait_s=0.1))
        assert all(f.error is Errors.COORDINATOR_NOT_AVAILABLE for f in found)

    asyncio.run(run())
    assert len(controller.calls) >= 1
    path, body = controller.calls[0]
    assert path == CREATE_TOPICS_PATH
    assert body["topics"][0]["num_partitions"] == 5
    assert body["topics"][0]["replication_factor"] == 1  # no live broker in the empty image
