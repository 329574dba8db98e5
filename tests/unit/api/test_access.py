"""Whole-request authorization of the RPC routes (chunkraft.api.access and its use in
controller_routes, stream and quorum), in-process with real tokens and the real Authorizer."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from chunkraft.api.authentication import Authenticator, forwarding_key
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.credentials import CredentialStore, add_token
from tests.unit.api.support import V1, Node, registration, running_node, start_brokers

NOBODY_ROUTES: list[tuple[str, str, dict[str, Any] | None]] = [
    ("GET", "/quorum", None),
    ("GET", "/metadata-log", None),
    ("GET", "/snapshot", None),
    ("POST", "/describe-acls", {}),
    ("POST", "/create-acls", {"creations": []}),
    ("POST", "/delete-acls", {"filters": []}),
    ("POST", "/unregister-broker", {"broker_id": 1}),
    ("POST", "/broker-registration", registration(1)),
    ("POST", "/broker-heartbeat", {"broker_id": 1, "broker_epoch": 1,
                                   "current_metadata_offset": 0}),
    ("POST", "/alter-partition", {"broker_id": 1, "broker_epoch": 1, "topics": []}),
    ("POST", "/allocate-producer-ids", {"broker_id": 1, "broker_epoch": 1}),
    ("POST", "/chunk-replica-state", {"broker_id": 1, "broker_epoch": 1, "chunks": []}),
    ("POST", "/chunk-sizes", {"broker_id": 1, "broker_epoch": 1, "sizes": []}),
    ("POST", "/create-chunks", {"broker_id": 1, "topics": []}),
]


def cluster_acl(principal: str, operation: str) -> dict[str, Any]:
    return {"resource_type": "CLUSTER", "resource_name": "kafka-cluster",
            "principal": principal, "operation": operation, "permission_type": "ALLOW"}


async def send(node: Node, method: str, route: str, body: dict[str, Any] | None,
               token: str) -> httpx.Response:
    return await node.http.request(method, V1 + route, json=body,
                                   headers={"Authorization": f"Bearer {token}"})


def run(tmp_path: Path, scenario: Any) -> None:
    path = tmp_path / "credentials.json"
    tokens = {name: add_token(path, f"User:{name}")
              for name in ("admin", "nobody", "broker-1", "broker-2", "reader")}

    async def main() -> None:
        authenticator = Authenticator(credentials=CredentialStore(path),
                                      forwarding_key=forwarding_key("x"))
        async with running_node(authenticator=authenticator,
                                authorizer=Authorizer(["User:admin"])) as node:
            node.http.headers["Authorization"] = f"Bearer {tokens['admin']}"
            await start_brokers(node)
            await scenario(node, tokens)

    asyncio.run(main())


def test_a_principal_without_acls_is_refused_every_cluster_level_route(tmp_path: Path) -> None:
    async def scenario(node: Node, tokens: dict[str, str]) -> None:
        for method, route, body in NOBODY_ROUTES:
            answer = await send(node, method, route, body, tokens["nobody"])
            assert answer.status_code == 403, (route, answer.text)
            error = answer.json()
            assert error["error_name"] == "CLUSTER_AUTHORIZATION_FAILED", route
            assert error["error_code"] == 31
            assert "User:nobody" in error["message"], route
        # the admin (a super user) may do each of them
        assert (await send(node, "GET", "/quorum", None, tokens["admin"])).status_code == 200
        assert (await send(node, "GET", "/snapshot", None, tokens["admin"])).status_code == 200

    run(tmp_path, scenario)


def test_a_broker_may_act_only_as_itself(tmp_path: Path) -> None:
    async def scenario(node: Node, tokens: dict[str, str]) -> None:
        granted = await send(node, "POST", "/create-acls", {"creations": [
            cluster_acl("User:broker-1", "CLUSTER_ACTION"),
            cluster_acl("User:broker-2", "CLUSTER_ACTION")]}, tokens["admin"])
        assert granted.status_code == 200, granted.text
        assert [r["error_code"] for r in granted.json()["results"]] == [0, 0]
        as_other = await send(node, "POST", "/broker-registration", registration(2),
                              tokens["broker-1"])
        assert as_other.status_code == 403, as_other.text
        assert "may not act as broker 2" in as_other.json()["message"]
        assert "User:broker-2" in as_other.json()["message"]
        itself = await send(node, "POST", "/broker-registration", registration(1),
                            tokens["broker-1"])
        assert itself.status_code == 200, itself.text
        assert itself.json()["error_code"] == 0
        # CLUSTER_ACTION also opens the metadata stream; not ACL changes
        stream = await send(node, "GET", "/metadata-log", None, tokens["broker-1"])
        assert stream.status_code == 200
        alter = await send(node, "POST", "/create-acls", {"creations": []}, tokens["broker-1"])
        assert alter.status_code == 403

    run(tmp_path, scenario)


def test_describe_on_the_cluster_opens_quorum_and_acls_only(tmp_path: Path) -> None:
    async def scenario(node: Node, tokens: dict[str, str]) -> None:
        granted = await send(node, "POST", "/create-acls", {"creations": [
            cluster_acl("User:reader", "DESCRIBE")]}, tokens["admin"])
        assert granted.status_code == 200, granted.text
        assert (await send(node, "GET", "/quorum", None, tokens["reader"])).status_code == 200
        described = await send(node, "POST", "/describe-acls", {}, tokens["reader"])
        assert described.status_code == 200, described.text
        assert (await send(node, "GET", "/metadata-log", None,
                           tokens["reader"])).status_code == 403
        assert (await send(node, "POST", "/delete-acls", {"filters": []},
                           tokens["reader"])).status_code == 403

    run(tmp_path, scenario)
