"""What the router answers around the routes: no redirect for a trailing slash, 405 with
``Allow``, 400 for read parameters out of their bounds, and a forwarded write's links naming
the controller that was asked (chunkraft.api.errors, chunkraft.api.parameters,
chunkraft.api.authentication.adopt_forwarded_origin)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import httpx
import pytest

from chunkraft.api.authentication import Authenticator, forwarding_key
from chunkraft.security.credentials import CredentialStore, add_token
from tests.unit.api.support import (
    CLUSTER_ID_TEXT,
    V1,
    FollowerRaft,
    running_node,
    start_brokers,
)

TOPICS = f"/v3/clusters/{CLUSTER_ID_TEXT}/topics"


def _concrete(template: str) -> str:
    """A path of ``template`` with every parameter filled in."""
    values = {"cluster_id": CLUSTER_ID_TEXT, "topic_name": "orders"}
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), "1"), template)


def test_a_trailing_slash_is_a_404_on_every_route_and_never_a_redirect() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node, (1,))
            created = await node.http.post(TOPICS, json={"topic_name": "orders"})
            assert created.status_code == 201, created.text
            paths = (await node.http.get("/openapi.json")).json()["paths"]
            assert len(paths) > 30
            for template, operations in paths.items():
                for method in operations:
                    answer = await node.http.request(method.upper(),
                                                     _concrete(template) + "/")
                    assert answer.status_code == 404, (method, template, answer.text)
                    assert "location" not in answer.headers
                    assert answer.json()["error_name"] == "INVALID_REQUEST"
            # The same write without the slash is served.
            patched = await node.http.patch(f"{TOPICS}/orders", json={"partitions_count": 2})
            assert patched.status_code == 200, patched.text

    asyncio.run(scenario())


@pytest.mark.parametrize(("method", "path", "allow"), [
    ("OPTIONS", TOPICS, "GET, HEAD, POST"),
    ("PUT", TOPICS, "GET, HEAD, POST"),
    ("OPTIONS", f"{TOPICS}/orders", "DELETE, GET, HEAD, PATCH"),
    ("GET", f"{V1}/create-topics", "POST"),
    ("OPTIONS", "/healthz", "GET, HEAD"),
])
def test_a_method_a_path_does_not_serve_is_405_with_allow(method: str, path: str,
                                                          allow: str) -> None:
    async def scenario() -> None:
        async with running_node() as node:
            answer = await node.http.request(method, path)
            assert answer.status_code == 405, answer.text
            assert answer.headers["allow"] == allow
            assert answer.json()["error_name"] == "INVALID_REQUEST"
            assert f"allowed: {allow}" in answer.json()["message"]

    asyncio.run(scenario())


@pytest.mark.parametrize("query", [
    "min_offset=9223372036854775808", "min_offset=-2", "wait_ms=-1", "min_offset=5&wait_ms=-1",
    "min_offset=1e3", "wait_ms=ten",
])
@pytest.mark.parametrize(("method", "path"), [
    ("GET", TOPICS), ("GET", f"/v3/clusters/{CLUSTER_ID_TEXT}"),
    ("POST", f"{V1}/metadata"), ("POST", f"{V1}/describe-configs"),
])
def test_read_parameters_out_of_bounds_are_400_not_503(query: str, method: str,
                                                       path: str) -> None:
    async def scenario() -> None:
        async with running_node() as node:
            body = {"topics": None} if path.endswith("metadata") else {"resources": []}
            answer = await node.http.request(method, f"{path}?{query}",
                                             json=body if method == "POST" else None)
            assert answer.status_code == 400, answer.text
            name = query.split("=")[0] if "&" not in query else "wait_ms"
            assert answer.json()["error_name"] == "INVALID_REQUEST"
            assert f"query.{name}" in answer.json()["message"]

    asyncio.run(scenario())


def test_the_largest_min_offset_is_a_read_that_times_out() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            answer = await node.http.get(f"{TOPICS}?min_offset=9223372036854775807&wait_ms=0")
            assert answer.status_code == 503, answer.text
            assert answer.json()["error_name"] == "REQUEST_TIMED_OUT"

    asyncio.run(scenario())


def test_a_forwarded_writes_links_name_the_controller_that_was_asked(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    token = add_token(path, "User:admin")
    key = forwarding_key("raft-password")

    def authenticator() -> Authenticator:
        return Authenticator(credentials=CredentialStore(path), forwarding_key=key)

    async def scenario() -> None:
        async with running_node(node_id=1, authenticator=authenticator(),
                                forwarding_key=key) as leader:
            leader.http.headers["Authorization"] = f"Bearer {token}"
            await start_brokers(leader, (1,))
            to_leader = httpx.AsyncClient(transport=httpx.ASGITransport(app=leader.app),
                                          base_url="http://leader.invalid:9090")
            async with running_node(FollowerRaft(2, leader=1),
                                    controller_urls={1: "http://leader.invalid:9090"},
                                    forward_client=to_leader, authenticator=authenticator(),
                                    forwarding_key=key) as follower:
                answer = await follower.http.post(
                    TOPICS, json={"topic_name": "forwarded"},
                    headers={"Authorization": f"Bearer {token}"})
                assert answer.status_code == 201, answer.text
                body = answer.json()
                follower_base = "http://controller-2"
                assert body["metadata"]["self"] == f"{follower_base}{TOPICS}/forwarded"
                assert body["partitions"]["related"].startswith(follower_base)
                assert "leader.invalid" not in answer.text
                # Asked directly, the leader names itself.
                direct = await leader.http.get(f"{TOPICS}/forwarded")
                assert direct.json()["metadata"]["self"] == f"http://controller-1{TOPICS}/forwarded"
            await to_leader.aclose()

    asyncio.run(scenario())
