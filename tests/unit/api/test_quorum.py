"""``GET /controller/v1/quorum`` (chunkraft.api.quorum): the quorum and the image as this node
sees them."""

from __future__ import annotations

import asyncio

from tests.unit.api.support import (
    CLUSTER_ID_TEXT,
    V1,
    offset_of,
    running_node,
    start_brokers,
)


def test_the_quorum_status_describes_the_node_and_its_image() -> None:
    async def scenario() -> None:
        urls = {1: "http://controller-1:9090", 2: "http://controller-2:9090"}
        async with running_node(controller_urls=urls) as node:
            await start_brokers(node, (1, 2))
            await node.post("create-topics", {"topics": [
                {"name": "q", "num_partitions": 3, "replication_factor": 2}]})
            await node.post("create-chunks", {"topics": [{"name": "q", "partitions": [{
                "partition_index": 0, "broker_ids": [1, 2], "prev_stop_offset": 9,
                "prev_end_offset": 9, "start_offset": 10, "start_timestamp": 5}]}]})
            image = node.context.controller.image
            answer = await node.http.get(f"{V1}/quorum")
            assert answer.status_code == 200
            status = answer.json()
            assert status["node_id"] == 1
            assert status["state"] == "leader" and status["leader_id"] == 1
            assert status["has_quorum"] is True and status["failure"] is None
            assert status["epoch"] == node.raft.epoch()
            assert status["high_watermark"] == image.offset + 1
            assert status["commit_index"] == status["last_applied_index"] > 0
            assert status["metadata_offset"] == image.offset == offset_of(answer)
            assert status["metadata_epoch"] == image.epoch
            assert status["cluster_id"] == CLUSTER_ID_TEXT
            assert status["controller_urls"] == {"1": urls[1], "2": urls[2]}
            assert (status["brokers"], status["topics"], status["partitions"],
                    status["chunks"]) == (2, 1, 3, 1)
            assert status["image_hash"] is None  # hashing costs: only when asked
            (voter,) = status["voters"]
            assert voter["node_id"] == 1 and voter["connected"] is True
            hashed = (await node.http.get(f"{V1}/quorum", params={"hash": "true"})).json()
            assert hashed["image_hash"] == image.content_hash()

    asyncio.run(scenario())


def test_the_status_follows_leadership_changes() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            first = (await node.http.get(f"{V1}/quorum")).json()
            node.raft.set_leader(False)
            await asyncio.sleep(0.01)  # the controller hears of it on its loop
            follower = (await node.http.get(f"{V1}/quorum")).json()
            assert follower["state"] == "follower" and follower["leader_id"] is None
            assert follower["has_quorum"] is False
            assert follower["leader_changes"] == first["leader_changes"] + 1
            node.raft.set_leader(True)
            await asyncio.sleep(0.01)
            again = (await node.http.get(f"{V1}/quorum")).json()
            assert again["state"] == "leader" and again["epoch"] == first["epoch"] + 1
            assert again["leader_changes"] == first["leader_changes"] + 2

    asyncio.run(scenario())
