"""Creating, expanding and deleting one topic through v3: statuses, bodies and validate_only."""

from __future__ import annotations

import asyncio

from chunkraft.api.rpc import MAX_BODY_BYTES
from chunkraft.api.v3.models import KafkaTopic
from tests.unit.api.support import running_node, start_brokers
from tests.unit.api.v3.support import BASE, V3


def test_create_a_topic_then_the_errors_kafka_gives() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            v3 = V3(node)
            before = node.context.controller.image.offset
            would = await v3.ok("POST", "/topics", KafkaTopic, {
                "topic_name": "orders", "partitions_count": 3, "replication_factor": 2,
                "validate_only": True})
            assert would["topic_id"] is None
            assert (would["partitions_count"], would["replication_factor"]) == (3, 2)
            assert node.context.controller.image.offset == before  # nothing written

            created = await v3.create_topic("orders", partitions=3, rf=2)
            assert created["topic_id"] is not None and created["partitions_count"] == 3
            offset = node.context.controller.image.offset
            assert created["metadata"]["metadata_offset"] == offset

            await v3.error("POST", "/topics", 409, "TOPIC_ALREADY_EXISTS",
                           {"topic_name": "orders"})
            exists = await v3.call("POST", "/topics", {"topic_name": "orders"})
            assert int(exists.headers["x-metadata-offset"]) == offset  # validated at
            await v3.error("POST", "/topics", 400, "INVALID_TOPIC_EXCEPTION",
                           {"topic_name": "bad name"})
            await v3.error("POST", "/topics", 400, "INVALID_REPLICATION_FACTOR",
                           {"topic_name": "big", "replication_factor": 4})
            await v3.error("POST", "/topics", 400, "INVALID_PARTITIONS",
                           {"topic_name": "none", "partitions_count": 0})
            await v3.error("POST", "/topics", 400, "INVALID_REPLICATION_FACTOR",
                           {"topic_name": "none", "replication_factor": 0})
            await v3.error("POST", "/topics", 400, "INVALID_REPLICA_ASSIGNMENT",
                           {"topic_name": "none", "replicas_assignments": [
                               {"partition_id": 0, "broker_ids": [-1]}]})
            await v3.error("POST", "/topics", 400, "INVALID_REQUEST",
                           {"topic_name": "both", "partitions_count": 1,
                            "replicas_assignments": [{"partition_id": 0, "broker_ids": [1]}]})
            await v3.error("POST", "/topics", 400, "INVALID_REPLICA_ASSIGNMENT",
                           {"topic_name": "manual", "replicas_assignments": [
                               {"partition_id": 0, "broker_ids": [1, 9]}]})
            await v3.error("POST", "/topics", 400, "INVALID_REQUEST",
                           {"topic_name": "typo", "validate_onyl": True})
            await v3.error("POST", "/topics", 400, "INVALID_REQUEST", {"partitions_count": 1})
            assert node.context.controller.image.topics.get_by_name("typo") is None

            manual = await v3.ok("POST", "/topics", KafkaTopic, {
                "topic_name": "manual", "replicas_assignments": [
                    {"partition_id": 0, "broker_ids": [3, 1]},
                    {"partition_id": 1, "broker_ids": [1, 2]}]}, status=201)
            assert (manual["partitions_count"], manual["replication_factor"]) == (2, 2)

    asyncio.run(scenario())


def test_a_topic_name_that_collides_is_refused() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            v3 = V3(node)
            await v3.create_topic("a.b", partitions=1, rf=1)
            message = await v3.error("POST", "/topics", 400, "INVALID_TOPIC_EXCEPTION",
                                     {"topic_name": "a_b"})
            assert "collides" in message

    asyncio.run(scenario())


def test_patch_raises_the_partition_count_with_kip_195_errors() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            v3 = V3(node)
            await v3.create_topic("orders", partitions=2, rf=2)
            before = node.context.controller.image.offset
            would = await v3.ok("PATCH", "/topics/orders", KafkaTopic,
                                {"partitions_count": 5, "validate_only": True})
            assert would["partitions_count"] == 5 and would["chunks_count"] == 5
            assert node.context.controller.image.offset == before
            grown = await v3.ok("PATCH", "/topics/orders", KafkaTopic, {"partitions_count": 4})
            assert grown["partitions_count"] == 4
            message = await v3.error("PATCH", "/topics/orders", 400, "INVALID_PARTITIONS",
                                     {"partitions_count": 4})
            assert message == "Topic already has 4 partition(s)."
            await v3.error("PATCH", "/topics/orders", 400, "INVALID_PARTITIONS",
                           {"partitions_count": 3})
            # below the schema's minimum of 1: still Kafka's answer, not a generic refusal
            await v3.error("PATCH", "/topics/orders", 400, "INVALID_PARTITIONS",
                           {"partitions_count": 0})
            await v3.error("PATCH", "/topics/nope", 404, "UNKNOWN_TOPIC_OR_PARTITION",
                           {"partitions_count": 3})
            await v3.error("PATCH", "/topics/orders", 400, "INVALID_REQUEST",
                           {"partitions_count": "6"})
            await v3.error("PATCH", "/topics/bad!", 400, "INVALID_TOPIC_EXCEPTION",
                           {"partitions_count": 6})

    asyncio.run(scenario())


def test_delete_a_topic() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            v3 = V3(node)
            await v3.create_topic("orders", partitions=1, rf=1)
            answer = await v3.call("DELETE", "/topics/orders")
            assert answer.status_code == 204 and answer.content == b""
            assert int(answer.headers["x-metadata-offset"]) == (
                node.context.controller.image.offset)
            await v3.error("GET", "/topics/orders", 404, "UNKNOWN_TOPIC_OR_PARTITION")
            await v3.error("DELETE", "/topics/orders", 404, "UNKNOWN_TOPIC_OR_PARTITION")

    asyncio.run(scenario())


def test_bodies_over_the_limit_are_413() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            v3 = V3(node)
            body = b'{"topic_name": "' + b"x" * MAX_BODY_BYTES + b'"}'
            answer = await node.http.post(f"{BASE}/topics", content=body,
                                          headers={"content-type": "application/json"})
            assert answer.status_code == 413
            assert answer.json()["error_name"] == "MESSAGE_TOO_LARGE"
            await v3.error("POST", "/v3/clusters/other/topics", 404, "INCONSISTENT_CLUSTER_ID",
                           {"topic_name": "x"})

    asyncio.run(scenario())
