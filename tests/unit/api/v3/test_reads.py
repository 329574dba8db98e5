"""The v3 read routes: clusters, brokers, topics, partitions, replicas and chunks.

Every answer is checked against its declared model and its X-Metadata-Offset; errors against
the ErrorBody and their status.
"""

from __future__ import annotations

import asyncio

from chunkraft.api.v3.models import (
    KafkaBroker,
    KafkaBrokerList,
    KafkaChunk,
    KafkaChunkList,
    KafkaCluster,
    KafkaClusterList,
    KafkaPartition,
    KafkaPartitionList,
    KafkaReplica,
    KafkaReplicaList,
    KafkaTopic,
    KafkaTopicList,
)
from tests.unit.api.support import CLUSTER_ID_TEXT, running_node, start_brokers
from tests.unit.api.v3.support import BASE, V3


def test_the_cluster_and_its_links() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            v3 = V3(node)
            listed = await v3.ok("GET", "/v3/clusters", KafkaClusterList)
            assert [c["cluster_id"] for c in listed["data"]] == [CLUSTER_ID_TEXT]
            cluster = await v3.ok("GET", BASE, KafkaCluster)
            assert cluster["controller_id"] == 1
            assert cluster["topics"]["related"] == f"http://controller-1{BASE}/topics"
            assert cluster["metadata"]["resource_name"] == f"crn:///kafka={CLUSTER_ID_TEXT}"
            message = await v3.error("GET", "/v3/clusters/other", 404, "INCONSISTENT_CLUSTER_ID")
            assert CLUSTER_ID_TEXT in message
            await v3.error("GET", "/v3/clusters/other/topics", 404, "INCONSISTENT_CLUSTER_ID")

    asyncio.run(scenario())


def test_brokers_by_id_and_an_unknown_broker() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            epochs = await start_brokers(node, (2, 1))
            v3 = V3(node)
            listed = await v3.ok("GET", "/brokers", KafkaBrokerList)
            assert [b["broker_id"] for b in listed["data"]] == [1, 2]
            broker = await v3.ok("GET", "/brokers/2", KafkaBroker)
            assert broker["broker_epoch"] == epochs[2]
            assert (broker["host"], broker["port"], broker["fenced"]) == ("127.0.0.1", 9094,
                                                                          False)
            await v3.error("GET", "/brokers/9", 404, "BROKER_NOT_AVAILABLE")
            await v3.error("GET", "/brokers/x", 400, "INVALID_REQUEST")

    asyncio.run(scenario())


def test_a_topic_its_partitions_replicas_and_chunks() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            v3 = V3(node)
            created = await v3.create_topic("orders", partitions=2, rf=2)
            topic = await v3.ok("GET", "/topics/orders", KafkaTopic)
            assert topic["topic_id"] == created["topic_id"]
            assert (topic["partitions_count"], topic["replication_factor"],
                    topic["chunks_count"]) == (2, 2, 2)
            listed = await v3.ok("GET", "/topics", KafkaTopicList)
            assert [t["topic_name"] for t in listed["data"]] == ["orders"]

            partition = await v3.ok("GET", "/topics/orders/partitions/0", KafkaPartition)
            leader = partition["leader_id"]
            assert partition["replica_ids"][0] == leader
            assert partition["leader"]["related"].endswith(
                f"/topics/orders/partitions/0/replicas/{leader}")
            assert "inactive_chunks" not in partition

            cut = await v3.ok("POST", "/chunks:create", None, {"partitions": [{
                "topic": "orders", "partition": 0, "replicas": partition["replica_ids"],
                "prev_stop_offset": 99, "prev_end_offset": 104, "start_offset": 100,
                "start_timestamp": 1000}]})
            assert cut == {}
            with_chunks = await v3.ok("GET", "/topics/orders/partitions?include_chunks=true",
                                      KafkaPartitionList)
            first = with_chunks["data"][0]
            assert first["chunks_count"] == 2 and first["start_offset"] == 100
            [inactive] = first["inactive_chunks"]
            assert (inactive["start_offset"], inactive["stop_offset"], inactive["end_offset"],
                    inactive["is_active"], inactive["leader_id"]) == (0, 99, 104, False, -1)
            assert "metadata" not in inactive

            chunks = await v3.ok("GET", "/topics/orders/partitions/0/chunks", KafkaChunkList)
            assert [(c["start_offset"], c["is_active"]) for c in chunks["data"]] == [
                (0, False), (100, True)]
            active = await v3.ok("GET", "/topics/orders/partitions/0/chunks/100", KafkaChunk)
            assert (active["stop_offset"], active["end_offset"], active["leader_id"],
                    active["chunk_epoch"]) == (-1, -1, first["leader_id"],
                                               first["leader_epoch"])
            old = await v3.ok("GET", "/topics/orders/partitions/0/chunks/0", KafkaChunk)
            assert old["start_timestamp"] == -1 and old["chunk_epoch"] == 0
            await v3.error("GET", "/topics/orders/partitions/0/chunks/50", 404, "UNKNOWN_CHUNK")

            replicas = await v3.ok("GET", "/topics/orders/partitions/0/replicas",
                                   KafkaReplicaList)
            head = replicas["data"][0]
            assert (head["broker_id"], head["is_leader"], head["is_in_sync"]) == (
                first["leader_id"], True, True)
            replica = await v3.ok("GET", f"/topics/orders/partitions/0/replicas/{leader}",
                                  KafkaReplica)
            assert replica["broker"]["related"].endswith(f"/brokers/{leader}")
            missing = ({1, 2, 3} - set(partition["replica_ids"])).pop()
            await v3.error("GET", f"/topics/orders/partitions/0/replicas/{missing}", 404,
                           "REPLICA_NOT_AVAILABLE")

    asyncio.run(scenario())


def test_unknown_and_illegal_names() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            v3 = V3(node)
            await v3.create_topic("orders", partitions=1, rf=1)
            for path in ("/topics/nope", "/topics/nope/partitions",
                         "/topics/nope/partitions/0/chunks"):
                await v3.error("GET", path, 404, "UNKNOWN_TOPIC_OR_PARTITION")
            await v3.error("GET", "/topics/orders/partitions/5", 404,
                           "UNKNOWN_TOPIC_OR_PARTITION")
            missing = await v3.call("GET", "/topics/nope")
            assert int(missing.headers["x-metadata-offset"]) == (
                node.context.controller.image.offset)  # a 404 says what it reflects
            await v3.error("GET", "/topics/orders/partitions/5/replicas", 404,
                           "UNKNOWN_TOPIC_OR_PARTITION")
            await v3.error("GET", "/topics/bad%20name", 400, "INVALID_TOPIC_EXCEPTION")
            await v3.error("GET", "/topics/" + "x" * 250, 400, "INVALID_TOPIC_EXCEPTION")
            await v3.error("GET", "/topics/orders/partitions?include_chunks=maybe", 400,
                           "INVALID_REQUEST")

    asyncio.run(scenario())


def test_read_your_writes_waits_for_min_offset_or_answers_503() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            v3 = V3(node)
            await v3.create_topic("orders", partitions=1, rf=1)
            now = node.context.controller.image.offset
            answer = await v3.call("GET", f"/topics/orders?min_offset={now}")
            assert answer.status_code == 200
            assert int(answer.headers["x-metadata-offset"]) == now
            message = await v3.error("GET", f"/topics/orders?min_offset={now + 5}&wait_ms=50",
                                     503, "REQUEST_TIMED_OUT")
            assert str(now + 5) in message

            async def later() -> None:
                await asyncio.sleep(0.05)
                await v3.create_topic("later", partitions=1, rf=1)

            writer = asyncio.create_task(later())
            waited = await v3.call("GET", f"/topics/later?min_offset={now + 1}&wait_ms=5000")
            await writer
            assert waited.status_code == 200, waited.text

    asyncio.run(scenario())


def test_lists_page_through_next_links() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            v3 = V3(node)
            for index in range(25):
                await v3.create_topic(f"t{index:03d}", partitions=1, rf=1)
            seen: list[str] = []
            url: str | None = f"{BASE}/topics?page_size=10"
            pages = 0
            while url is not None and pages < 10:
                page = await v3.ok("GET", url.removeprefix("http://controller-1"),
                                   KafkaTopicList)
                seen.extend(t["topic_name"] for t in page["data"])
                url = page["metadata"]["next"]
                pages += 1
            assert pages == 3
            assert seen == [f"t{index:03d}" for index in range(25)]
            await v3.error("GET", "/topics?page_size=0", 400, "INVALID_REQUEST")
            await v3.error("GET", "/topics?page_size=1001", 400, "INVALID_REQUEST")
            await v3.error("GET", "/topics?page_token=%21%21", 400, "INVALID_REQUEST")

            await v3.create_topic("wide", partitions=30, rf=1)
            first = await v3.ok("GET", "/topics/wide/partitions?page_size=20",
                                KafkaPartitionList)
            assert [p["partition_id"] for p in first["data"]] == list(range(20))
            assert "page_size=20" in first["metadata"]["next"]
            rest = await v3.ok("GET", first["metadata"]["next"].removeprefix(
                "http://controller-1"), KafkaPartitionList)
            assert [p["partition_id"] for p in rest["data"]] == list(range(20, 30))
            assert rest["metadata"]["next"] is None
            big = await v3.ok("GET", "/topics/wide/partitions?page_size=10000",
                              KafkaPartitionList)
            assert len(big["data"]) == 30
            await v3.error("GET", "/topics/wide/partitions?page_size=10001", 400,
                           "INVALID_REQUEST")

    asyncio.run(scenario())
