"""The RPC routes (chunkraft.api.rpc, controller_routes): every route, bodies, idempotency, reads.

Each test runs a real app (create_app over QuorumController on LocalRaft) through httpx's ASGI
transport inside ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from pydantic import BaseModel

from chunkraft.api.rpc import MAX_BODY_BYTES
from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import (
    CreateAclsResponse,
    DeleteAclsResponse,
    DescribeAclsResponse,
)
from chunkraft.protocol.brokers import (
    AlterPartitionResponse,
    BrokerHeartbeatResponse,
    BrokerRegistrationResponse,
    UnregisterBrokerResponse,
)
from chunkraft.protocol.chunk_sizes import ChunkSizesResponse
from chunkraft.protocol.chunks import (
    AlterChunkAssignmentsResponse,
    ChunkReplicaStateResponse,
    CreateChunksResponse,
)
from chunkraft.protocol.configs import (
    AlterConfigsResponse,
    DescribeConfigsResponse,
    IncrementalAlterConfigsResponse,
)
from chunkraft.protocol.producer_ids import AllocateProducerIdsResponse
from chunkraft.protocol.topics import (
    CreatePartitionsResponse,
    CreateTopicsResponse,
    DeleteTopicsResponse,
    MetadataResponse,
)
from chunkraft.records import TopicRecord, decode_record
from chunkraft.records.uuids import kafka_uuid_str
from tests.unit.api.support import V1, Node, offset_of, registration, running_node, start_brokers


def error_codes(value: Any) -> list[int]:
    """Every non-zero error code anywhere in a JSON answer."""
    if isinstance(value, dict):
        own = [value["error_code"]] if value.get("error_code") else []
        return own + [code for inner in value.values() for code in error_codes(inner)]
    if isinstance(value, list):
        return [code for inner in value for code in error_codes(inner)]
    return []


class RouteWalk:
    """Calls routes in order, checking each answer: 200, the response model, no error code, and
    an X-Metadata-Offset equal to the committed offset that the answer reflects."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.called: set[str] = set()

    async def call(self, route: str, body: dict[str, Any], model: type[BaseModel],
                   *, writes: bool = True) -> dict[str, Any]:
        before = self.node.context.controller.image.offset
        answer = await self.node.post(route, body)
        assert answer.status_code == 200, (route, answer.text)
        assert answer.headers["content-type"] == "application/json"
        model.model_validate_json(answer.content)  # the documented response model
        payload: dict[str, Any] = answer.json()
        assert error_codes(payload) == [], (route, payload)
        after = self.node.context.controller.image.offset
        assert offset_of(answer) == after, route
        if writes:
            assert after > before, f"{route} committed nothing"
        self.called.add(f"{V1}/{route}")
        return payload


def test_every_route_answers_its_model_with_the_metadata_offset() -> None:
    async def scenario() -> set[str]:
        async with running_node() as node:
            walk = RouteWalk(node)
            epochs: dict[int, int] = {}
            for broker_id in (1, 2, 3, 4):
                answer = await walk.call("broker-registration", registration(broker_id),
                                         BrokerRegistrationResponse)
                epochs[broker_id] = answer["broker_epoch"]
            for broker_id, epoch in epochs.items():
                answer = await walk.call("broker-heartbeat", {
                    "broker_id": broker_id, "broker_epoch": epoch,
                    "current_metadata_offset": node.context.controller.image.offset},
                    BrokerHeartbeatResponse)
                assert answer["is_fenced"] is False
            await walk.call("create-topics", {"topics": [
                {"name": "orders", "assignments": [
                    {"partition_index": 0, "broker_ids": [1, 2, 3]},
                    {"partition_index": 1, "broker_ids": [2, 3, 1]}]}]}, CreateTopicsResponse)
            await walk.call("create-partitions", {"topics": [{"name": "orders", "count": 3}]},
                            CreatePartitionsResponse)
            await walk.call("create-chunks", {
                "broker_id": 1, "broker_epoch": epochs[1],
                "topics": [{"name": "orders", "partitions": [{
                    "partition_index": 0, "broker_ids": [2, 3, 1], "prev_stop_offset": 99,
                    "prev_end_offset": 104, "start_offset": 100, "start_timestamp": 1000}]}]},
                CreateChunksResponse)
            await walk.call("alter-chunk-assignments", {"chunks": [{
                "topic_name": "orders", "partition_id": 0, "start_offset": 0,
                "chunk_epoch": 0, "broker_ids": [4, 2, 3]}]}, AlterChunkAssignmentsResponse)
            await walk.call("chunk-replica-state", {
                "broker_id": 4, "broker_epoch": epochs[4], "chunks": [{
                    "topic_name": "orders", "partition_id": 0, "start_offset": 0,
                    "state": "in_sync"}]}, ChunkReplicaStateResponse)
            sizes = await walk.call("chunk-sizes", {
                "broker_id": 4, "broker_epoch": epochs[4], "sizes": [{
                    "topic_name": "orders", "partition_id": 0, "start_offset": 0,
                    "size_in_bytes": 4096}]}, ChunkSizesResponse,
                writes=False)  # the leader keeps sizes in memory: no records
            assert (sizes["error_code"], sizes["accepted"]) == (0, 1)
            topic = node.context.controller.image.topics.get_by_name("orders")
            assert topic is not None
            partition = topic.partitions[1]
            await walk.call("alter-partition", {
                "broker_id": partition.leader, "broker_epoch": epochs[partition.leader],
                "topics": [{"topic_id": kafka_uuid_str(topic.topic_id), "partitions": [{
                    "partition_index": 1, "leader_epoch": partition.leader_epoch,
                    "partition_epoch": partition.partition_epoch,
                    "new_isr": [partition.leader]}]}]}, AlterPartitionResponse)
            await walk.call("allocate-producer-ids",
                            {"broker_id": 2, "broker_epoch": epochs[2]},
                            AllocateProducerIdsResponse)
            acl = {"resource_type": "TOPIC", "resource_name": "orders", "principal": "User:a",
                   "operation": "READ", "permission_type": "ALLOW"}
            await walk.call("create-acls", {"creations": [acl]}, CreateAclsResponse)
            described = await walk.call("describe-acls", {"principal_filter": "User:a"},
                                        DescribeAclsResponse, writes=False)
            assert [r["resource_name"] for r in described["resources"]] == ["orders"]
            metadata = await walk.call("metadata", {"topics": [{"name": "orders"}]},
                                       MetadataResponse, writes=False)
            chunk = metadata["topics"][0]["partitions"][0]["chunks"][0]
            assert (chunk["stop_offset"], chunk["replicas"]) == (99, [4, 2, 3])
            assert len(metadata["topics"][0]["partitions"]) == 3
            await walk.call("incremental-alter-configs", {"resources": [{
                "resource_type": 2, "resource_name": "orders", "configs": [
                    {"name": "retention.ms", "value": "1000", "config_operation": 0}]}]},
                IncrementalAlterConfigsResponse)
            await walk.call("alter-configs", {"resources": [{
                "resource_type": 4, "resource_name": "", "configs": [
                    {"name": "log.retention.ms", "value": "5000"}]}]}, AlterConfigsResponse)
            configs = await walk.call("describe-configs", {"resources": [
                {"resource_type": 2, "resource_name": "orders"}]}, DescribeConfigsResponse,
                writes=False)
            assert [c["value"] for c in configs["results"][0]["configs"]] == ["1000"]
            await walk.call("delete-acls", {"filters": [{
                "resource_type_filter": "ANY", "pattern_type_filter": "ANY",
                "operation": "ANY", "permission_type": "ANY"}]}, DeleteAclsResponse)
            await walk.call("delete-topics", {"topic_names": ["orders"]}, DeleteTopicsResponse)
            await walk.call("unregister-broker", {"broker_id": 4}, UnregisterBrokerResponse)
            image = node.context.controller.image
            assert len(image.topics) == 0 and len(image.acls) == 0
            assert sorted(b.broker_id for b in image.brokers) == [1, 2, 3]
            paths = node.app.openapi()["paths"]
            # The quorum's voter changes are not RPC operations on the image: they need a
            # Raft quorum (tests/unit/api/test_quorum_voters.py, integration tests).
            posts = {path for path, methods in paths.items()
                     if "post" in methods and path.startswith(V1)
                     and not path.startswith(f"{V1}/quorum/")}
            assert posts == walk.called, posts ^ walk.called
            return walk.called

    called = asyncio.run(scenario())
    assert len(called) == 19


def test_an_answer_with_errors_inside_is_still_200_and_writes_nothing() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            before = node.context.controller.image.offset
            answer = await node.post("create-partitions", {"topics": [
                {"name": "missing", "count": 2}]})
            assert answer.status_code == 200
            result = CreatePartitionsResponse.model_validate_json(answer.content).results[0]
            assert result.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION.code
            assert node.context.controller.image.offset == before == offset_of(answer)

    asyncio.run(scenario())


@pytest.mark.parametrize(("body", "field"), [
    (b'{"topics": [{"name": 5}]}', "topics.0.name"),
    (b'{"topics": [{"name": "a", "num_partitions": "3"}]}', "topics.0.num_partitions"),
    (b'{"topics": [{"name": "a", "replication_factor": 70000}]}',
     "topics.0.replication_factor"),
    (b'{"topics": [{"name": "a", "configs": {}}]}', "topics.0.configs"),
    (b'{"topic": []}', "topics"),
    (b'{"topics": [', "body"),
])
def test_a_malformed_body_is_400_invalid_request_naming_the_field(body: bytes, field: str) -> None:
    async def scenario() -> None:
        async with running_node() as node:
            answer = await node.http.post(f"{V1}/create-topics", content=body,
                                          headers={"content-type": "application/json"})
            assert answer.status_code == 400
            error = answer.json()
            assert error["error_code"] == Errors.INVALID_REQUEST.code == 42
            assert error["error_name"] == "INVALID_REQUEST"
            assert f"{field}:" in error["message"], error["message"]
            assert node.context.controller.image.offset == -1

    asyncio.run(scenario())


def test_a_malformed_read_is_400_too() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            answer = await node.post("metadata", {"include_chunks": "yes please"})
            assert answer.status_code == 400
            assert answer.json()["error_code"] == 42
            assert "include_chunks" in answer.json()["message"]

    asyncio.run(scenario())


def test_an_oversized_body_is_413_whether_or_not_its_length_is_announced() -> None:
    big = b'{"topics": [], "pad": "' + b"x" * MAX_BODY_BYTES + b'"}'

    async def chunks() -> Any:
        for start in range(0, len(big), 1 << 20):
            yield big[start:start + (1 << 20)]

    async def scenario() -> None:
        async with running_node() as node:
            announced = await node.http.post(f"{V1}/create-topics", content=big)
            assert "content-length" in announced.request.headers
            streamed = await node.http.post(f"{V1}/create-topics", content=chunks())
            assert "content-length" not in streamed.request.headers
            for answer in (announced, streamed):
                assert answer.status_code == 413
                assert answer.json()["error_code"] == Errors.MESSAGE_TOO_LARGE.code
            assert node.context.controller.image.offset == -1

    asyncio.run(scenario())


@pytest.mark.parametrize("key", ["retry-me-please", "0123456789abcdef0123456789abcdef"])
def test_a_retried_idempotency_key_gets_the_first_answer_and_commits_once(key: str) -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            body = {"topics": [{"name": "once", "num_partitions": 2, "replication_factor": 2}]}
            first = await node.post("create-topics", body, headers={"Idempotency-Key": key})
            again = await node.post("create-topics", body, headers={"Idempotency-Key": key})
            other = await node.post("create-topics", body, headers={"Idempotency-Key": "new"})
            assert first.status_code == again.status_code == 200
            assert first.json() == again.json()
            assert first.json()["topics"][0]["error_code"] == 0
            assert offset_of(first) == offset_of(again)
            # without the key the same request is validated anew, and refused
            assert other.json()["topics"][0]["error_code"] == Errors.TOPIC_ALREADY_EXISTS.code
            read = node.raft.state_machine.read_after(-1, max_records=10_000,
                                                      max_bytes=1 << 30)
            topics = [decode_record(r) for b in read.batches for r in b.records]
            assert [r.name for r in topics if isinstance(r, TopicRecord)] == ["once"]

    asyncio.run(scenario())


def test_a_read_with_min_offset_waits_for_that_offset() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            epochs = await start_brokers(node)
            target = node.context.controller.image.offset + 1

            async def write_later() -> None:
                await asyncio.sleep(0.2)
                answer = await node.post("allocate-producer-ids", {
                    "broker_id": 1, "broker_epoch": epochs[1]})
                assert answer.status_code == 200 and answer.json()["error_code"] == 0

            started = time.monotonic()
            read, _ = await asyncio.gather(
                node.http.post(f"{V1}/metadata", params={"min_offset": target, "wait_ms": 5000},
                               json={}),
                write_later())
            assert read.status_code == 200
            assert offset_of(read) >= target
            assert MetadataResponse.model_validate_json(read.content).metadata_offset >= target
            assert 0.15 < time.monotonic() - started < 4

    asyncio.run(scenario())


def test_a_read_with_min_offset_times_out_with_503() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            started = time.monotonic()
            answer = await node.http.post(f"{V1}/metadata",
                                          params={"min_offset": 50, "wait_ms": 150}, json={})
            elapsed = time.monotonic() - started
            assert answer.status_code == 503
            assert answer.json()["error_code"] == Errors.REQUEST_TIMED_OUT.code
            assert "applied offset -1, not yet 50" in answer.json()["message"]
            assert 0.1 < elapsed < 3

    asyncio.run(scenario())


def test_a_key_reused_for_another_request_does_not_get_that_requests_answer() -> None:
    """An Idempotency-Key names one request (route and body): sent with a different request it
    must not answer with the first request's outcome and skip the second."""

    async def scenario() -> None:
        async with running_node() as node:
            epochs = await start_brokers(node, (1, 2))
            same = {"Idempotency-Key": "reused"}
            first = await node.post("create-topics", {"topics": [{"name": "a"}]}, headers=same)
            second = await node.post("create-topics", {"topics": [{"name": "b"}]}, headers=same)
            assert [r.json()["topics"][0]["name"] for r in (first, second)] == ["a", "b"]
            assert node.context.controller.image.topics.get_by_name("b") is not None
            unregistered = await node.post("unregister-broker", {"broker_id": 1}, headers=same)
            assert unregistered.status_code == 200
            fence = await node.post("broker-heartbeat", {
                "broker_id": 2, "broker_epoch": epochs[2], "current_metadata_offset": 100,
                "want_fence": True}, headers=same)
            assert fence.status_code == 200 and fence.json()["is_fenced"] is True
            fenced = node.context.controller.image.brokers.get(2)
            assert fenced is not None and fenced.fenced  # the heartbeat really ran

    asyncio.run(scenario())
