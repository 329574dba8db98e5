"""Authorization of the v3 routes, in-process with real tokens, the real Authorizer and ACLs
created through the v3 acls route: filtered lists, 403 on a topic the principal may not
describe, per-topic TOPIC_AUTHORIZATION_FAILED in batches, cluster-level ACL routes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from chunkraft.api.authentication import Authenticator, forwarding_key
from chunkraft.api.v3.acl_models import KafkaAcl, KafkaAclList
from chunkraft.api.v3.models import (
    ChunkAssignmentResultList,
    CreateChunksResultList,
    CreatePartitionsResultList,
    KafkaBrokerList,
    KafkaCluster,
    KafkaTopicList,
)
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.credentials import CredentialStore, add_token
from tests.unit.api.support import Node, running_node, start_brokers
from tests.unit.api.v3.support import BASE, V3, names


def run(tmp_path: Path, scenario: Any) -> None:
    path = tmp_path / "credentials.json"
    tokens = {name: add_token(path, f"User:{name}") for name in ("admin", "alice")}

    async def main() -> None:
        authenticator = Authenticator(credentials=CredentialStore(path),
                                      forwarding_key=forwarding_key("x"))
        async with running_node(authenticator=authenticator,
                                authorizer=Authorizer(["User:admin"])) as node:
            node.http.headers["Authorization"] = f"Bearer {tokens['admin']}"
            await start_brokers(node)
            admin = V3(node)
            for name in ("orders", "other"):
                await admin.create_topic(name, partitions=1, rf=1)
            await scenario(node, admin, tokens)

    asyncio.run(main())


def as_user(token: str) -> dict[str, Any]:
    return {"headers": {"Authorization": f"Bearer {token}"}}


def test_without_acls_alice_sees_no_topic_and_may_not_name_one(tmp_path: Path) -> None:
    async def scenario(node: Node, admin: V3, tokens: dict[str, str]) -> None:
        alice = as_user(tokens["alice"])
        listed = await admin.ok("GET", "/topics", KafkaTopicList, **alice)
        assert listed["data"] == []
        for path in ("/topics/orders", "/topics/nope", "/topics/orders/partitions",
                     "/topics/orders/partitions/0", "/topics/orders/partitions/0/chunks",
                     "/topics/orders/partitions/0/replicas"):
            message = await admin.error("GET", path, 403, "TOPIC_AUTHORIZATION_FAILED",
                                        **alice)
            assert "describe" in message
        await admin.ok("GET", "", KafkaCluster, **alice)
        await admin.ok("GET", "/brokers", KafkaBrokerList, **alice)
        await admin.error("GET", "/acls", 403, "CLUSTER_AUTHORIZATION_FAILED", **alice)
        acl = {"resource_type": "TOPIC", "resource_name": "orders", "principal": "User:alice",
               "operation": "ALTER", "permission": "ALLOW"}
        await admin.error("POST", "/acls", 403, "CLUSTER_AUTHORIZATION_FAILED", acl, **alice)
        await admin.error("DELETE", "/acls?resource_type=ANY", 403,
                          "CLUSTER_AUTHORIZATION_FAILED", **alice)
        await admin.error("POST", "/topics", 403, "TOPIC_AUTHORIZATION_FAILED",
                          {"topic_name": "mine"}, **alice)
        answer = await node.http.get(f"{BASE}/topics", headers={"Authorization": "Bearer x"})
        assert answer.status_code == 401
        assert answer.json()["error_name"] == "SASL_AUTHENTICATION_FAILED"

    run(tmp_path, scenario)


def test_alter_on_one_topic_allows_it_and_refuses_the_other_per_item(tmp_path: Path) -> None:
    async def scenario(node: Node, admin: V3, tokens: dict[str, str]) -> None:
        alice = as_user(tokens["alice"])
        created = await admin.ok("POST", "/acls", KafkaAcl, {
            "resource_type": "TOPIC", "resource_name": "orders", "principal": "User:alice",
            "operation": "ALTER", "permission": "ALLOW"}, status=201)
        assert created["pattern_type"] == "LITERAL" and created["host"] == "*"
        acls = await admin.ok("GET", "/acls?principal=User:alice", KafkaAclList)
        assert [(a["resource_name"], a["operation"]) for a in acls["data"]] == [
            ("orders", "ALTER")]

        listed = await admin.ok("GET", "/topics", KafkaTopicList, **alice)
        assert [t["topic_name"] for t in listed["data"]] == ["orders"]  # ALTER implies DESCRIBE
        await admin.error("GET", "/topics/other", 403, "TOPIC_AUTHORIZATION_FAILED", **alice)

        answer = await admin.ok("POST", "/topics:create-partitions", CreatePartitionsResultList, {
            "topics": [{"topic_name": "orders", "partitions_count": 2},
                       {"topic_name": "other", "partitions_count": 2}]}, **alice)
        assert names(answer) == ["NONE", "TOPIC_AUTHORIZATION_FAILED"]
        assert answer["data"][1]["error_code"] == 29
        await admin.error("PATCH", "/topics/other", 403, "TOPIC_AUTHORIZATION_FAILED",
                          {"partitions_count": 3}, **alice)
        await admin.error("DELETE", "/topics/orders", 403, "TOPIC_AUTHORIZATION_FAILED",
                          **alice)

        cuts = await admin.ok("POST", "/chunks:create", CreateChunksResultList, {
            "partitions": [{"topic": "other", "partition": 0, "replicas": [1]},
                           {"topic": "other", "partition": 0, "replicas": [1],
                            "prev_stop_offset": 9, "prev_end_offset": 9, "start_offset": 10}]},
            **alice)
        assert names(cuts) == ["INVALID_REQUEST", "INVALID_REQUEST"]  # duplicates first
        cuts = await admin.ok("POST", "/chunks:create", CreateChunksResultList, {
            "partitions": [{"topic": "other", "partition": 0, "replicas": [1]},
                           {"topic": "orders", "partition": 0, "replicas": [1],
                            "prev_stop_offset": 9, "prev_end_offset": 9, "start_offset": 10}]},
            **alice)
        assert names(cuts) == ["TOPIC_AUTHORIZATION_FAILED", "NONE"]
        moves = await admin.ok("POST", "/chunks:alter-assignments", ChunkAssignmentResultList, {
            "chunks": [{"topic": "other", "partition": 0, "start_offset": 0, "replicas": [2]},
                       {"topic": "orders", "partition": 0, "start_offset": 0,
                        "replicas": [2]}]}, **alice)
        assert names(moves) == ["TOPIC_AUTHORIZATION_FAILED", "NONE"]

        deleted = await admin.ok("DELETE", "/acls?resource_type=TOPIC&principal=User:alice",
                                 KafkaAclList)
        assert [a["resource_name"] for a in deleted["data"]] == ["orders"]
        assert await admin.acls() == []
        await admin.error("GET", "/topics/orders", 403, "TOPIC_AUTHORIZATION_FAILED", **alice)

    run(tmp_path, scenario)


def test_acl_routes_validate_their_input(tmp_path: Path) -> None:
    async def scenario(node: Node, admin: V3, tokens: dict[str, str]) -> None:
        await admin.error("POST", "/acls", 400, "INVALID_REQUEST", {
            "resource_type": "TOPIC", "resource_name": "x", "principal": "User:a",
            "operation": "READ", "permission": "MAYBE"})
        await admin.error("POST", "/acls", 400, "INVALID_REQUEST", {
            "resource_type": "ANY", "resource_name": "x", "principal": "User:a",
            "operation": "READ", "permission": "ALLOW"})
        await admin.error("POST", "/acls", 400, "INVALID_REQUEST", {
            "resource_type": "TOPIC", "resource_name": "x", "principal": "alice",
            "operation": "READ", "permission": "ALLOW"})
        await admin.error("DELETE", "/acls", 400, "INVALID_REQUEST")
        await admin.error("GET", "/acls?operation=FLY", 400, "INVALID_REQUEST")
        prefixed = await admin.ok("POST", "/acls", KafkaAcl, {
            "resource_type": "TOPIC", "resource_name": "ord", "pattern_type": "PREFIXED",
            "principal": "User:a", "operation": "READ", "permission": "DENY"}, status=201)
        assert prefixed["pattern_type"] == "PREFIXED"
        matched = await admin.ok("GET", "/acls?resource_type=TOPIC&resource_name=orders"
                                 "&pattern_type=MATCH", KafkaAclList)
        assert [a["resource_name"] for a in matched["data"]] == ["ord"]

    run(tmp_path, scenario)
