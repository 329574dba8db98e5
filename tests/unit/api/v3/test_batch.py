"""The v3 batch operations: KIP-195 createPartitions and KIP-1114 CreateChunks and
AlterChunkAssignments, every per-item error, validate_only and the whole-request bounds.

The admin form of CreateChunks asks the partition's leader broker over real HTTP: a tiny
``http.server`` on 127.0.0.1 stands in for the broker, and a port nobody listens on for a broker
that is down.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from chunkraft.api.v3.models import (
    ChunkAssignmentResultList,
    CreateChunksResultList,
    CreatePartitionsResultList,
)
from chunkraft.controller.raft.entry import ProposedBatch
from chunkraft.controller.raft.local import LocalRaft
from chunkraft.controller.raft.state_machine import BatchOutcome
from chunkraft.local.local_cluster import free_ports
from tests.unit.api.support import Node, registration, running_node, start_brokers
from tests.unit.api.v3.support import V3, names, results

CP = "/topics:create-partitions"


def test_create_partitions_kip_195_per_topic_errors() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            v3 = V3(node)
            await v3.create_topic("a", partitions=2, rf=2)
            await v3.create_topic("b", partitions=2, rf=2)
            await v3.create_topic("c", partitions=2, rf=2)

            async def batch(topics: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
                return await v3.ok("POST", CP, CreatePartitionsResultList,
                                   {"topics": topics, **extra})

            before = node.context.controller.image.offset
            checked = await batch([{"topic_name": "a", "partitions_count": 4}],
                                  validate_only=True)
            assert names(checked) == ["NONE"]
            assert node.context.controller.image.offset == before

            answer = await batch([
                {"topic_name": "a", "partitions_count": 3},
                {"topic_name": "dup", "partitions_count": 3},
                {"topic_name": "dup", "partitions_count": 4},
                {"topic_name": "nope", "partitions_count": 3},
                {"topic_name": "b", "partitions_count": 2},
                {"topic_name": "c", "partitions_count": 1},
            ])
            assert [item["topic_name"] for item in answer["data"]] == [
                "a", "dup", "nope", "b", "c"]
            assert results(answer) == [
                ("NONE", None),
                ("INVALID_REQUEST", "Duplicate topic name."),
                ("UNKNOWN_TOPIC_OR_PARTITION", "Topic 'nope' does not exist."),
                ("INVALID_PARTITIONS", "Topic already has 2 partition(s)."),
                ("INVALID_PARTITIONS",
                 "The topic c currently has 2 partition(s); 1 would not be an increase."),
            ]
            assert answer["data"][0]["error_code"] == 0
            assert len(node.context.controller.image.topics.get_by_name("a").partitions) == 3

            answer = await batch([
                {"topic_name": "b", "partitions_count": 4, "assignments": [[1, 2]]},
                {"topic_name": "c", "partitions_count": 3, "assignments": [[1, 9]]},
            ])
            assert names(answer) == ["INVALID_REPLICA_ASSIGNMENT"] * 2
            assert "only 1 assignment(s)" in answer["data"][0]["error_message"]
            answer = await batch([
                {"topic_name": "b", "partitions_count": 3, "assignments": [[1, 2, 3]]},
                {"topic_name": "c", "partitions_count": 3, "assignments": [[3, 1]]},
            ])
            assert names(answer) == ["INVALID_REPLICA_ASSIGNMENT", "NONE"]
            assert "2 replica(s)" in answer["data"][0]["error_message"]

    asyncio.run(scenario())


def test_create_partitions_timeout_and_bounds() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            v3 = V3(node)
            await v3.create_topic("a", partitions=1, rf=1)
            before = node.context.controller.image.offset
            answer = await v3.ok("POST", CP, CreatePartitionsResultList, {
                "topics": [{"topic_name": "a", "partitions_count": 2}], "timeout_ms": 0})
            assert names(answer) == ["REQUEST_TIMED_OUT"]
            assert node.context.controller.image.offset == before
            answer = await v3.ok("POST", CP, CreatePartitionsResultList, {
                "topics": [{"topic_name": "a", "partitions_count": 2}], "timeout_ms": 5000})
            assert names(answer) == ["NONE"]
            await v3.error("POST", CP, 400, "INVALID_REQUEST", {
                "topics": [{"topic_name": "a", "partitions_count": 3}], "timeout_ms": -1})
            message = await v3.error("POST", CP, 400, "INVALID_REQUEST", {"topics": [
                {"topic_name": f"t{i}", "partitions_count": 2} for i in range(1001)]})
            assert "1000" in message
            await v3.error("POST", CP, 400, "INVALID_REQUEST", {"topics": "a"})
            await v3.error("POST", CP, 400, "INVALID_REQUEST", {"topics": [
                {"topic_name": "a", "partitions_count": 2**31}]})

    asyncio.run(scenario())


def _cut(topic: str, partition: int, replicas: list[int], **offsets: int) -> dict[str, Any]:
    return {"topic": topic, "partition": partition, "replicas": replicas, **offsets}


OFFSETS = {"prev_stop_offset": 99, "prev_end_offset": 104, "start_offset": 100,
           "start_timestamp": 1000}


def test_create_chunks_with_offsets_kip_1114_errors() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            v3 = V3(node)
            await v3.ok("POST", "/topics", None, {"topic_name": "t", "replicas_assignments": [
                {"partition_id": 0, "broker_ids": [1, 2]},
                {"partition_id": 1, "broker_ids": [2, 3]},
                {"partition_id": 2, "broker_ids": [3, 1]}]}, status=201)

            async def cut(items: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
                return await v3.ok("POST", "/chunks:create", CreateChunksResultList,
                                   {"partitions": items, **extra})

            before = node.context.controller.image.offset
            checked = await cut([_cut("t", 0, [2, 3], **OFFSETS), _cut("t", 1, [1, 2])],
                                validate_only=True)
            assert names(checked) == ["NONE", "NONE"]  # the admin form is validated too
            assert node.context.controller.image.offset == before

            answer = await cut([
                _cut("t", 0, [2, 3], **OFFSETS),
                _cut("t", 1, [1, 2], **OFFSETS), _cut("t", 1, [1, 3], **OFFSETS),
                _cut("nope", 0, [1, 2], **OFFSETS),
                _cut("t", 9, [1, 2], **OFFSETS),
                _cut("t", 2, [1, 2, 3], **OFFSETS),
            ])
            assert names(answer) == ["NONE", "INVALID_REQUEST", "INVALID_REQUEST",
                                     "UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_OR_PARTITION",
                                     "INVALID_REPLICA_ASSIGNMENT"]
            assert answer["data"][1]["error_message"] == "Duplicate partition t-1."
            assert [(d["topic_name"], d["partition_id"]) for d in answer["data"]][3:5] == [
                ("nope", 0), ("t", 9)]

            answer = await cut([
                _cut("t", 1, [1, 9], **OFFSETS),
                _cut("t", 2, [1, 2], leader=3, **OFFSETS),
                _cut("t", 0, [2, 3], prev_stop_offset=99, prev_end_offset=99,
                     start_offset=100),  # the active chunk of t-0 starts at 100: empty
            ])
            assert names(answer) == ["INVALID_REPLICA_ASSIGNMENT", "INVALID_REPLICA_ASSIGNMENT",
                                     "INVALID_REQUEST"]
            assert "nothing to cut" in answer["data"][2]["error_message"]
            answer = await cut([
                _cut("t", 1, [1, 2], prev_stop_offset=9, prev_end_offset=9, start_offset=11),
                _cut("t", 2, [1, 2], prev_stop_offset=0, prev_end_offset=0, start_offset=0),
                _cut("t", 0, [2, 3], prev_stop_offset=199, prev_end_offset=199,
                     start_offset=200, start_timestamp=500),
                _cut("t", 9, [1, 2], start_offset=5),
                _cut("t", 8, [1, 2], start_timestamp=5),
            ])
            assert names(answer) == ["INVALID_CHUNK_OFFSETS", "INVALID_CHUNK_OFFSETS",
                                     "INVALID_CHUNK_OFFSETS", "INVALID_REQUEST",
                                     "INVALID_REQUEST"]
            assert "before the start timestamp" in answer["data"][2]["error_message"]
            assert "together" in answer["data"][3]["error_message"]

    asyncio.run(scenario())


class _Broker:
    """A stand-in for a broker's HTTP API: records each cut request and answers ``reply``."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.status = 200
        self.error_code = 0
        broker = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["content-length"])
                body = json.loads(self.rfile.read(length))
                broker.requests.append({"path": self.path, "body": body})
                answer = {"topics": [{"name": t["name"], "partitions": [
                    {"partition_index": p["partition_index"], "error_code": broker.error_code,
                     "error_message": "no" if broker.error_code else None}
                    for p in t["partitions"]]} for t in body["topics"]]}
                data = json.dumps(answer).encode()
                self.send_response(broker.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]


@contextmanager
def broker_server() -> Iterator[_Broker]:
    broker = _Broker()
    thread = threading.Thread(target=broker.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield broker
    finally:
        broker.server.shutdown()
        broker.server.server_close()
        thread.join(timeout=10)


async def _brokers_at(node: Node, ports: dict[int, int]) -> None:
    """Registers and unfences brokers whose listener ``HTTP`` is at the given ports."""
    epochs = {}
    for broker_id, port in ports.items():
        body = registration(broker_id)
        body["listeners"] = [{"name": "HTTP", "host": "127.0.0.1", "port": port,
                              "security_protocol": 0}]
        answer = await node.post("broker-registration", body)
        assert answer.status_code == 200 and answer.json()["error_code"] == 0, answer.text
        epochs[broker_id] = answer.json()["broker_epoch"]
    for broker_id, epoch in epochs.items():
        answer = await node.post("broker-heartbeat", {
            "broker_id": broker_id, "broker_epoch": epoch,
            "current_metadata_offset": node.context.controller.image.offset})
        assert answer.status_code == 200 and answer.json()["is_fenced"] is False


def test_the_admin_form_asks_the_leader_broker() -> None:
    async def scenario() -> None:
        with broker_server() as broker:
            async with running_node() as node:
                [down] = free_ports(1)
                await _brokers_at(node, {1: broker.port, 2: down, 3: down})
                v3 = V3(node)
                await v3.ok("POST", "/topics", None, {
                    "topic_name": "t", "replicas_assignments": [
                        {"partition_id": 0, "broker_ids": [1, 2]},
                        {"partition_id": 1, "broker_ids": [2, 3]}]}, status=201)
                answer = await v3.ok("POST", "/chunks:create", CreateChunksResultList, {
                    "partitions": [_cut("t", 0, [2, 3]), _cut("t", 1, [3, 1], leader=1)]})
                assert names(answer) == ["NONE", "LEADER_NOT_AVAILABLE"]
                message = answer["data"][1]["error_message"]
                assert f"broker 2 at http://127.0.0.1:{down}" in message
                assert "did not answer" in message
                [asked] = broker.requests
                assert asked == {"path": "/broker/v1/create-chunks", "body": {"topics": [
                    {"name": "t", "partitions": [
                        {"partition_index": 0, "broker_ids": [2, 3], "leader": -1}]}]}}

                broker.error_code = 10003
                answer = await v3.ok("POST", "/chunks:create", CreateChunksResultList,
                                     {"partitions": [_cut("t", 0, [2, 3])]})
                assert results(answer) == [("INVALID_CHUNK_OFFSETS", "no")]
                broker.status = 500
                answer = await v3.ok("POST", "/chunks:create", CreateChunksResultList,
                                     {"partitions": [_cut("t", 0, [2, 3])]})
                assert names(answer) == ["LEADER_NOT_AVAILABLE"]
                assert "answered HTTP 500" in answer["data"][0]["error_message"]

                asked_before = len(broker.requests)
                answer = await v3.ok("POST", "/chunks:create", CreateChunksResultList, {
                    "partitions": [_cut("t", 0, [2, 3])], "validate_only": True})
                assert names(answer) == ["NONE"]
                assert len(broker.requests) == asked_before  # validated here, not asked

    asyncio.run(scenario())


def _alter(topic: str, partition: int, start: int, replicas: list[int],
           **extra: Any) -> dict[str, Any]:
    return {"topic": topic, "partition": partition, "start_offset": start, "replicas": replicas,
            **extra}


def test_alter_chunk_assignments_kip_1114_errors() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node, (1, 2, 3, 4))
            v3 = V3(node)
            await v3.ok("POST", "/topics", None, {"topic_name": "t", "replicas_assignments": [
                {"partition_id": 0, "broker_ids": [1, 2]}]}, status=201)
            await v3.ok("POST", "/chunks:create", CreateChunksResultList,
                        {"partitions": [_cut("t", 0, [2, 3], **OFFSETS)]})

            async def alter(items: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
                return await v3.ok("POST", "/chunks:alter-assignments",
                                   ChunkAssignmentResultList, {"chunks": items, **extra})

            before = node.context.controller.image.offset
            checked = await alter([_alter("t", 0, 0, [3, 4])], validate_only=True)
            assert names(checked) == ["NONE"]
            assert node.context.controller.image.offset == before

            answer = await alter([
                _alter("t", 0, 0, [3, 4], chunk_epoch=5),
                _alter("t", 0, 0, [3, 4]), _alter("t", 0, 0, [3, 1]),
                _alter("nope", 0, 0, [1, 2]), _alter("t", 3, 0, [1, 2]),
                _alter("t", 0, 50, [1, 2]),
            ])
            assert names(answer) == ["INVALID_REQUEST", "INVALID_REQUEST", "INVALID_REQUEST",
                                     "UNKNOWN_TOPIC_OR_PARTITION",
                                     "UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_CHUNK"]
            assert [d["start_offset"] for d in answer["data"]] == [0, 0, 0, 0, 0, 50]

            answer = await alter([_alter("t", 0, 0, [3, 4], chunk_epoch=5)])
            assert names(answer) == ["FENCED_CHUNK_EPOCH"]
            answer = await alter([_alter("t", 0, 0, [3, 9])])
            assert names(answer) == ["INVALID_REPLICA_ASSIGNMENT"]
            answer = await alter([_alter("t", 0, 0, [1, 2, 3])])
            assert names(answer) == ["INVALID_REPLICA_ASSIGNMENT"]
            answer = await alter([_alter("t", 0, 0, [3, 4], chunk_epoch=0)])
            assert names(answer) == ["NONE"]
            answer = await alter([_alter("t", 0, 0, [4, 1])])
            assert names(answer) == ["REASSIGNMENT_IN_PROGRESS"]
            answer = await alter([_alter("t", 0, 0, [3, 4])])
            assert names(answer) == ["NONE"]  # the move in progress: nothing to change
            answer = await alter([_alter("t", 0, 100, [1, 2])])
            assert names(answer) == ["UNKNOWN_CHUNK"]  # the active chunk is not moved here

    asyncio.run(scenario())


class _SlowRaft(LocalRaft):
    """A LocalRaft whose proposals commit ``delay`` seconds later, from another thread (as a
    real quorum's do), so a write can outlast its request's timeout_ms."""

    delay = 0.0

    def propose(self, batches: Sequence[ProposedBatch]) -> Future[tuple[BatchOutcome, ...]]:
        if not self.delay:
            return super().propose(batches)
        future: Future[tuple[BatchOutcome, ...]] = Future()

        def commit() -> None:
            inner = super(_SlowRaft, self).propose(batches)
            try:
                future.set_result(inner.result())
            except Exception as error:  # the proposal's own failure, passed on
                future.set_exception(error)

        timer = threading.Timer(self.delay, commit)
        timer.start()
        return future


def test_a_write_that_outlasts_timeout_ms_answers_request_timed_out() -> None:
    async def scenario() -> None:
        raft = _SlowRaft(1)
        async with running_node(raft) as node:
            await start_brokers(node)
            v3 = V3(node)
            await v3.create_topic("a", partitions=1, rf=1)
            raft.delay = 0.5
            answer = await v3.ok("POST", CP, CreatePartitionsResultList, {
                "topics": [{"topic_name": "a", "partitions_count": 2}], "timeout_ms": 50})
            assert results(answer) == [("REQUEST_TIMED_OUT", answer["data"][0]["error_message"])]
            assert "may still take effect" in answer["data"][0]["error_message"]
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                topic = node.context.controller.image.topics.get_by_name("a")
                if topic is not None and len(topic.partitions) == 2:
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError("the timed-out write never committed")

    asyncio.run(scenario())


def test_an_illegal_topic_name_in_a_batch_is_invalid_topic_exception_per_item() -> None:
    """Kafka's INVALID_TOPIC_EXCEPTION (17) with its message, per item (not the whole request,
    and not UNKNOWN_TOPIC_OR_PARTITION); the other items go on."""
    illegal = ["", ".", "..", "x" * 250, "bad name"]

    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node)
            v3 = V3(node)
            await v3.create_topic("t", partitions=1, rf=2)
            expanded = await v3.ok("POST", CP, CreatePartitionsResultList, {"topics": [
                *({"topic_name": name, "partitions_count": 2} for name in illegal),
                {"topic_name": "t", "partitions_count": 2}], "validate_only": True})
            cut = await v3.ok("POST", "/chunks:create", CreateChunksResultList, {"partitions": [
                *(_cut(name, 0, [1, 2], **OFFSETS) for name in illegal[:4]),
                _cut("bad name", 0, [1, 2])], "validate_only": True})  # the admin form too
            moved = await v3.ok("POST", "/chunks:alter-assignments", ChunkAssignmentResultList,
                                {"chunks": [_alter(name, 0, 0, [1, 2]) for name in illegal]})
            for answer in (expanded, cut, moved):
                items = answer["data"]
                for item in items[:len(illegal)]:
                    assert (item["error_code"], item["error_name"]) == (
                        17, "INVALID_TOPIC_EXCEPTION"), item
            assert expanded["data"][-1]["error_name"] == "NONE"
            messages = [item["error_message"] for item in moved["data"]]
            assert messages[0] == "Topic name is illegal, it can't be empty"
            assert messages[1] == messages[2] == 'Topic name cannot be "." or ".."'
            assert messages[3].startswith("Topic name is illegal, it can't be longer than 249")
            assert messages[4] == ('Topic name "bad name" is illegal, it contains a character '
                                   "other than ASCII alphanumerics, '.', '_' and '-'")

    asyncio.run(scenario())
