"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup handlers over a real GroupCoordinator (an
in-process ReplicaManager), with requests and answers through Kafka's codec at the versions
clients send: the leader gets every member's metadata, each member its opaque assignment;
bounds and authorization answer Kafka's errors."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from chunkraft.broker_agent.coordinator.groups.coordinator import (
    GroupCoordinator,
)
from chunkraft.error_codes import Errors
from chunkraft.kafka.codec.messages import RequestHeader, decode, encode
from chunkraft.kafka.groups.admin_handlers import group_admin_handlers
from chunkraft.kafka.groups.membership_handlers import membership_handlers
from chunkraft.kafka.server.requests import ApiHandler, KafkaRequest, KafkaSession
from chunkraft.security.principal import Principal
from tests.unit.broker_agent.replica_harness import Cluster, offsets_cluster

OFFSETS_ID = uuid.UUID(int=0x0FF5E77)
SESSION = KafkaSession("SASL_PLAINTEXT", "SASL_PLAINTEXT", "10.0.0.7",
                       principal=Principal("User:alice", "10.0.0.7"))
NAMES = {11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup",
         15: "DescribeGroups", 16: "ListGroups", 42: "DeleteGroups"}


class DenyAll:
    def authorize(self, *args: Any) -> bool:
        return False


class Served:
    """The group handlers over one coordinator; ``call`` goes through the codec both ways."""

    def __init__(self, cluster: Cluster, authorizer: Any = None) -> None:
        runtime = SimpleNamespace(authorizer=authorizer,
                                  follower=SimpleNamespace(image=cluster.controller.image))
        self.coordinator = GroupCoordinator(cluster.managers[0],
                                            lambda: cluster.controller.image)
        handlers = [*membership_handlers(runtime, lambda: self.coordinator),
                    *group_admin_handlers(runtime, lambda: self.coordinator)]
        self.handlers: dict[int, ApiHandler] = {h.api_key: h for h in handlers}

    async def call(self, key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        name = NAMES[key]
        request = KafkaRequest(RequestHeader(key, version, 1, "client-9", 0),
                               decode(f"{name}Request", version,
                                      encode(f"{name}Request", version, body)), SESSION)
        answer = await self.handlers[key].handle(request)
        assert isinstance(answer, dict)
        return decode(f"{name}Response", version, encode(f"{name}Response", version, answer))


def _join(member_id: str = "", protocols: tuple[str, ...] = ("range",),
          session_ms: int = 10_000) -> dict[str, Any]:
    return {"group_id": "g", "session_timeout_ms": session_ms, "rebalance_timeout_ms": 10_000,
            "member_id": member_id, "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": n, "metadata": f"meta-{n}".encode()} for n in protocols],
            "reason": None}


def test_two_members_form_a_generation_and_get_their_opaque_assignments(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = await offsets_cluster(tmp_path)
        try:
            served = Served(cluster)
            first = await served.call(11, 5, _join())
            assert first["error_code"] == 0 and first["protocol_name"] == "range"
            second_join = asyncio.ensure_future(served.call(11, 7, _join()))
            await asyncio.sleep(0.05)
            rejoined = await served.call(11, 7, _join(first["member_id"]))
            second = await second_join
            assert rejoined["generation_id"] == second["generation_id"] == 2
            assert rejoined["leader"] == first["member_id"]
            assert rejoined["protocol_type"] == "consumer"
            assert [m["metadata"] for m in rejoined["members"]] == [b"meta-range"] * 2
            assert second["members"] == []
            follower = asyncio.ensure_future(served.call(14, 5, {
                "group_id": "g", "generation_id": 2, "member_id": second["member_id"],
                "group_instance_id": None, "protocol_type": "consumer",
                "protocol_name": "range", "assignments": []}))
            await asyncio.sleep(0.05)
            leader = await served.call(14, 3, {
                "group_id": "g", "generation_id": 2, "member_id": first["member_id"],
                "group_instance_id": None, "assignments": [
                    {"member_id": first["member_id"], "assignment": b"to-first"},
                    {"member_id": second["member_id"], "assignment": b"to-second"}]})
            assert leader["assignment"] == b"to-first"
            got = await follower
            assert got["assignment"] == b"to-second" and got["protocol_name"] == "range"
            beat = await served.call(12, 4, {"group_id": "g", "generation_id": 2,
                                             "member_id": second["member_id"],
                                             "group_instance_id": None})
            assert beat["error_code"] == 0
            described = (await served.call(15, 5, {"groups": ["g"],
                                                   "include_authorized_operations": True}))
            group = described["groups"][0]
            assert (group["group_state"], group["protocol_data"]) == ("Stable", "range")
            assert {m["member_assignment"] for m in group["members"]} == {
                b"to-first", b"to-second"}
            assert group["authorized_operations"] == (1 << 3) | (1 << 6) | (1 << 8)
            left = await served.call(13, 5, {"group_id": "g", "members": [
                {"member_id": first["member_id"], "group_instance_id": None,
                 "reason": None},
                {"member_id": "nobody", "group_instance_id": None, "reason": None}]})
            assert left["error_code"] == 0
            assert [m["error_code"] for m in left["members"]] == [
                0, Errors.UNKNOWN_MEMBER_ID.code]
            stale = await served.call(12, 4, {"group_id": "g", "generation_id": 2,
                                              "member_id": second["member_id"],
                                              "group_instance_id": None})
            assert stale["error_code"] == Errors.REBALANCE_IN_PROGRESS.code
            listed = await served.call(16, 4, {"states_filter": ["PreparingRebalance"]})
            assert [g["group_id"] for g in listed["groups"]] == ["g"]
        finally:
            await cluster.close()
    asyncio.run(scenario())


def test_bad_joins_and_refused_principals_get_kafkas_errors(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = await offsets_cluster(tmp_path)
        try:
            served = Served(cluster)
            short = await served.call(11, 5, _join(session_ms=1000))
            assert short["error_code"] == Errors.INVALID_SESSION_TIMEOUT.code
            nameless = await served.call(11, 5, {**_join(), "group_id": ""})
            assert nameless["error_code"] == Errors.INVALID_GROUP_ID.code
            await served.call(11, 5, _join())
            other = await served.call(11, 5, _join(protocols=("sticky",)))
            assert other["error_code"] == Errors.INCONSISTENT_GROUP_PROTOCOL.code
            old = await served.call(11, 0, {**_join(), "member_id": "ghost"})
            assert old["error_code"] == Errors.UNKNOWN_MEMBER_ID.code
            refused = Served(cluster, DenyAll())
            for key, version, body in (
                    (11, 5, _join()),
                    (14, 5, {"group_id": "g", "generation_id": 1, "member_id": "m",
                             "group_instance_id": None, "protocol_type": "consumer",
                             "protocol_name": "range", "assignments": []}),
                    (12, 4, {"group_id": "g", "generation_id": 1, "member_id": "m",
                             "group_instance_id": None}),
                    (13, 0, {"group_id": "g", "member_id": "m"})):
                answer = await refused.call(key, version, body)
                assert answer["error_code"] == Errors.GROUP_AUTHORIZATION_FAILED.code, key
            deleted = await refused.call(42, 2, {"groups_names": ["g"]})
            assert deleted["results"][0]["error_code"] == (
                Errors.GROUP_AUTHORIZATION_FAILED.code)
            assert (await refused.call(16, 4, {"states_filter": []}))["groups"] == []
        finally:
            await cluster.close()
    asyncio.run(scenario())
