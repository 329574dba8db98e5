"""The group routes: Kafka's authorization (group READ / DESCRIBE, topic READ / DESCRIBE,
transactional id WRITE) in front of a stand-in coordinator, and unknown topics."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from chunkraft.broker_agent.coordinator.groups.coordinator import TopicPartition
from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import AclOperation, AclResourceType
from chunkraft.protocol.coordinators import (
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitTopic,
    OffsetFetchPartition,
    OffsetFetchTopic,
    OffsetFetchTopicRequest,
)
from chunkraft.records import PartitionRecord, TopicRecord
from tests.unit.broker_agent.server.support import SecuredBroker, acl, image_with, secured_broker

READ, DESCRIBE, WRITE = AclOperation.READ, AclOperation.DESCRIBE, AclOperation.WRITE
GROUP = AclResourceType.GROUP


class StandIn:
    """Records what reached the coordinator; answers every partition NONE."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def commit_offsets(self, group_id: str, generation_id: int, member_id: str,
                             topics: list[OffsetCommitTopic], **txn: Any
                             ) -> tuple[Errors, dict[TopicPartition, Errors]]:
        self.calls.append(("commit", (group_id, [t.name for t in topics], txn)))
        return Errors.NONE, {(t.name, p.partition_index): Errors.NONE
                             for t in topics for p in t.partitions}

    async def fetch_offsets(self, group_id: str, topics: Any, **options: Any
                            ) -> tuple[Errors, tuple[OffsetFetchTopic, ...]]:
        asked: tuple[OffsetFetchTopicRequest, ...] = topics or ()
        self.calls.append(("fetch", (group_id, [t.name for t in asked])))
        return Errors.NONE, tuple(OffsetFetchTopic(name=t.name, partitions=tuple(
            OffsetFetchPartition(partition_index=p, committed_offset=5)
            for p in t.partition_indexes)) for t in asked)

    async def join_group(self, request: JoinGroupRequest) -> JoinGroupResponse:
        self.calls.append(("join", request.group_id))
        return JoinGroupResponse(generation_id=1, member_id="m", leader="m")

    async def heartbeat(self, group_id: str, generation_id: int, member_id: str
                        ) -> HeartbeatResponse:
        self.calls.append(("heartbeat", group_id))
        return HeartbeatResponse()


def _broker(tmp_path: Path, *acls: Any) -> tuple[SecuredBroker, StandIn]:
    broker = secured_broker(tmp_path)
    topic_id = uuid.UUID(int=7)
    broker.runtime.follower.image = image_with(
        TopicRecord(name="orders", topic_id=topic_id),
        PartitionRecord(partition_id=0, topic_id=topic_id, replicas=(0,), isr=(0,), leader=0,
                        leader_epoch=0, partition_epoch=0),
        TopicRecord(name="audit", topic_id=uuid.UUID(int=8)),
        PartitionRecord(partition_id=0, topic_id=uuid.UUID(int=8), replicas=(0,), isr=(0,),
                        leader=0, leader_epoch=0, partition_epoch=0),
        *acls)
    stand_in = StandIn()
    broker.app.state.group_coordinator = stand_in
    return broker, stand_in


def _commit(*topics: str, partition: int = 0, **extra: Any) -> dict[str, Any]:
    return {"group_id": "g", "topics": [
        {"name": name, "partitions": [{"partition_index": partition, "committed_offset": 1}]}
        for name in topics], **extra}


def _codes(answer: Any) -> list[int]:
    return [p["error_code"] for t in answer.json()["topics"] for p in t["partitions"]]


def test_offset_commit_needs_read_on_the_group_and_each_topic(tmp_path: Path) -> None:
    broker, stand_in = _broker(tmp_path, acl("orders", READ), acl("g", READ,
                                                                  resource_type=GROUP))
    answer = broker.post("/broker/v1/offset-commit", "alice", _commit("orders", "audit"))
    assert _codes(answer) == [0, Errors.TOPIC_AUTHORIZATION_FAILED.code]
    assert stand_in.calls == [("commit", ("g", ["orders"], {
        "producer_id": -1, "producer_epoch": -1, "transactional_id": None}))]
    refused = broker.post("/broker/v1/offset-commit", "bob", _commit("orders"))
    assert _codes(refused) == [Errors.GROUP_AUTHORIZATION_FAILED.code]
    unknown = broker.post("/broker/v1/offset-commit", "admin", _commit("orders", partition=3))
    assert _codes(unknown) == [Errors.UNKNOWN_TOPIC_OR_PARTITION.code]
    assert len(stand_in.calls) == 1


def test_txn_offset_commit_also_needs_write_on_the_transactional_id(tmp_path: Path) -> None:
    broker, stand_in = _broker(tmp_path, acl("orders", READ), acl("g", READ,
                                                                  resource_type=GROUP))
    body = _commit("orders", transactional_id="t", producer_id=9, producer_epoch=0)
    answer = broker.post("/broker/v1/txn-offset-commit", "alice", body)
    assert _codes(answer) == [Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code]
    assert stand_in.calls == []
    broker.runtime.follower.image = image_with(*broker.runtime.follower.image.to_records(),
                                               acl("t", WRITE,
                                                   resource_type=AclResourceType.TRANSACTIONAL_ID))
    answer = broker.post("/broker/v1/txn-offset-commit", "alice", body)
    assert _codes(answer) == [0]
    assert stand_in.calls[0][1][2]["producer_id"] == 9


def test_offset_fetch_needs_describe_on_the_group_and_the_topics(tmp_path: Path) -> None:
    broker, stand_in = _broker(tmp_path, acl("orders", DESCRIBE),
                               acl("g", DESCRIBE, resource_type=GROUP))
    body = {"group_id": "g", "topics": [{"name": "orders", "partition_indexes": [0]},
                                        {"name": "audit", "partition_indexes": [0]}]}
    answer = broker.post("/broker/v1/offset-fetch", "alice", body).json()
    assert answer["error_code"] == 0
    assert [(t["name"], t["partitions"][0]["error_code"], t["partitions"][0]["committed_offset"])
            for t in answer["topics"]] == [
        ("orders", 0, 5), ("audit", Errors.TOPIC_AUTHORIZATION_FAILED.code, -1)]
    assert stand_in.calls == [("fetch", ("g", ["orders"]))]
    refused = broker.post("/broker/v1/offset-fetch", "bob", body).json()
    assert refused["error_code"] == Errors.GROUP_AUTHORIZATION_FAILED.code


def test_membership_needs_read_on_the_group(tmp_path: Path) -> None:
    broker, stand_in = _broker(tmp_path, acl("g", READ, resource_type=GROUP))
    join = {"group_id": "g", "topics": ["orders"]}
    assert broker.post("/broker/v1/join-group", "alice", join).json()["generation_id"] == 1
    refused = broker.post("/broker/v1/join-group", "bob", join).json()
    assert refused["error_code"] == Errors.GROUP_AUTHORIZATION_FAILED.code
    beat = {"group_id": "g", "generation_id": 1, "member_id": "m"}
    assert broker.post("/broker/v1/heartbeat", "alice", beat).json()["error_code"] == 0
    assert broker.post("/broker/v1/heartbeat", "bob", beat).json()["error_code"] == \
        Errors.GROUP_AUTHORIZATION_FAILED.code
    assert [c[0] for c in stand_in.calls] == ["join", "heartbeat"]
