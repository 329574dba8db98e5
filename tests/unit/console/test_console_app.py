"""The console in-process: login and its cookie, CSRF on changes made with the cookie, pages
and /ui/api filtered by ACLs, the v3 API reached with the session (real tokens, the real
Authorizer, create_app over LocalRaft)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from chunkraft.api.authentication import Authenticator, forwarding_key
from chunkraft.console.access import ConsoleAccess
from chunkraft.console.events import change_event, event_stream
from chunkraft.console.pages import SCRIPTS
from chunkraft.console.sessions import CSRF_HEADER, cookie_name
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.credentials import CredentialStore, add_token, revoke_tokens
from chunkraft.security.principal import Principal
from tests.unit.api.support import Node, running_node, start_brokers
from tests.unit.api.v3.support import BASE, V3


def run(tmp_path: Path, scenario: Any) -> None:
    path = tmp_path / "credentials.json"
    tokens = {name: add_token(path, f"User:{name}") for name in ("admin", "alice")}

    async def main() -> None:
        store = CredentialStore(path, interval=0.0)
        authenticator = Authenticator(credentials=store, forwarding_key=forwarding_key("x"))
        async with running_node(authenticator=authenticator,
                                authorizer=Authorizer(["User:admin"])) as node:
            node.http.headers["Authorization"] = f"Bearer {tokens['admin']}"
            await start_brokers(node)
            admin = V3(node)
            for name in ("orders", "other", "payments"):
                await admin.create_topic(name, partitions=2, rf=1)
            del node.http.headers["Authorization"]
            await scenario(node, tokens, path)

    asyncio.run(main())


async def login(node: Node, token: str) -> str:
    """Logs in; the CSRF token of the session (the cookie stays in the client's jar)."""
    answer = await node.http.post("/ui/login", content=f"token={token}&next=/ui/topics",
                                  headers={"content-type": "application/x-www-form-urlencoded"})
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == "/ui/topics"
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(cookie_name(node.context.node_id) + "=")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    page = await node.http.get("/ui/topics")
    assert page.status_code == 200
    assert "default-src 'self'" in page.headers["content-security-policy"]
    found = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
    assert found is not None
    return found.group(1)


def test_pages_need_a_session_and_a_bad_token_is_refused(tmp_path: Path) -> None:
    async def scenario(node: Node, tokens: dict[str, str], path: Path) -> None:
        answer = await node.http.get("/ui/topics/orders")
        assert answer.status_code == 303
        assert answer.headers["location"] == "/ui/login?next=%2Fui%2Ftopics%2Forders"
        assert (await node.http.get("/ui/api/topics")).status_code == 401
        assert (await node.http.get("/ui/login")).status_code == 200
        for name in (*SCRIPTS, "console.css"):
            static = await node.http.get(f"/ui/static/{name}")
            assert static.status_code == 200 and static.content, name
        assert (await node.http.get("/ui/static/secrets.txt")).status_code == 404
        bad = await node.http.post("/ui/login", content="token=nope",
                                   headers={"content-type": "application/x-www-form-urlencoded"})
        assert bad.status_code == 401 and "invalid bearer token" in bad.text
        assert "set-cookie" not in bad.headers

    run(tmp_path, scenario)


def test_a_session_reads_what_its_principal_may_describe(tmp_path: Path) -> None:
    async def scenario(node: Node, tokens: dict[str, str], path: Path) -> None:
        await login(node, tokens["alice"])
        listed = (await node.http.get("/ui/api/topics")).json()
        assert listed["topics"] == [] and listed["total"] is None
        refused = await node.http.get("/ui/api/topics/orders")
        assert refused.status_code == 403
        assert refused.json()["error_name"] == "TOPIC_AUTHORIZATION_FAILED"
        missing = await node.http.get("/ui/api/topics/nope/partitions/0/timeline")
        assert missing.status_code == 403  # whether it exists or not
        brokers = (await node.http.get("/ui/api/brokers")).json()["brokers"]
        assert [b["broker_id"] for b in brokers] == [1, 2, 3]
        assert sum(b["partitions"] for b in brokers) == 0  # no topic of hers to count
        cluster = (await node.http.get("/ui/api/cluster")).json()
        assert cluster["quorum"] is None and "DESCRIBE" in cluster["quorum_refused"]

    run(tmp_path, scenario)


def test_the_admin_sees_pages_of_topics_and_a_timeline(tmp_path: Path) -> None:
    async def scenario(node: Node, tokens: dict[str, str], path: Path) -> None:
        await login(node, tokens["admin"])
        first = (await node.http.get("/ui/api/topics?page_size=2")).json()
        assert [t["name"] for t in first["topics"]] == ["orders", "other"]
        assert first["total"] == 3 and first["next"] and first["may_create"]
        second = (await node.http.get(f"/ui/api/topics?page_size=2&after={first['next']}"))
        assert [t["name"] for t in second.json()["topics"]] == ["payments"]
        assert second.json()["next"] is None
        found = (await node.http.get("/ui/api/topics?q=PAY")).json()
        assert [t["name"] for t in found["topics"]] == ["payments"] and found["total"] == 1
        topic = (await node.http.get("/ui/api/topics/orders")).json()
        assert topic["partitions"] == 2 and topic["may_alter"]
        assert [row[0] for row in topic["rows"]] == [0, 1]
        timeline = (await node.http.get("/ui/api/topics/orders/partitions/1/timeline")).json()
        assert timeline["chunks"] == 1 and timeline["may_alter"]
        active = timeline["bar_fields"].index("active")
        assert [bar[active] for bar in timeline["bars"]] == [True]
        cluster = (await node.http.get("/ui/api/cluster")).json()
        assert cluster["quorum"]["leader_id"] == 1 and cluster["quorum"]["ready"] in (True, False)

    run(tmp_path, scenario)


def test_changes_with_the_cookie_need_the_csrf_token_and_the_own_origin(tmp_path: Path) -> None:
    async def scenario(node: Node, tokens: dict[str, str], path: Path) -> None:
        csrf = await login(node, tokens["admin"])
        body = {"topics": [{"topic_name": "orders", "partitions_count": 3}]}
        url = f"{BASE}/topics:create-partitions"
        forged = await node.http.post(url, json=body)
        assert forged.status_code == 403 and CSRF_HEADER in forged.json()["message"]
        wrong = await node.http.post(url, json=body, headers={CSRF_HEADER: "x" + csrf})
        assert wrong.status_code == 403
        elsewhere = await node.http.post(url, json=body, headers={
            CSRF_HEADER: csrf, "Origin": "http://evil.example"})
        assert elsewhere.status_code == 403 and "another origin" in elsewhere.text
        assert (await node.http.get("/ui/api/topics/orders")).json()["partitions"] == 2
        done = await node.http.post(url, json=body, headers={
            CSRF_HEADER: csrf, "Origin": "http://controller-1"})
        assert done.status_code == 200, done.text
        assert done.json()["data"][0]["error_code"] == 0
        offset = done.headers["x-metadata-offset"]
        after = await node.http.get(f"/ui/api/topics/orders?min_offset={offset}")
        assert after.json()["partitions"] == 3
        # A login forged by another site is refused too.
        login_elsewhere = await node.http.post(
            "/ui/login", content=f"token={tokens['alice']}",
            headers={"content-type": "application/x-www-form-urlencoded",
                     "origin": "http://evil.example"})
        assert login_elsewhere.status_code == 403
        logout = await node.http.post("/ui/logout", headers={CSRF_HEADER: csrf})
        assert logout.status_code == 204
        assert (await node.http.get("/ui/api/topics")).status_code == 401

    run(tmp_path, scenario)


def test_a_revoked_token_ends_its_session(tmp_path: Path) -> None:
    async def scenario(node: Node, tokens: dict[str, str], path: Path) -> None:
        await login(node, tokens["alice"])
        assert (await node.http.get("/ui/api/brokers")).status_code == 200
        revoke_tokens(path, principal="User:alice")
        assert (await node.http.get("/ui/api/brokers")).status_code == 401

    run(tmp_path, scenario)


def test_explicit_credentials_win_over_a_cookie(tmp_path: Path) -> None:
    async def scenario(node: Node, tokens: dict[str, str], path: Path) -> None:
        await login(node, tokens["admin"])
        as_alice = await node.http.get(f"{BASE}/topics", headers={
            "Authorization": f"Bearer {tokens['alice']}"})
        assert as_alice.json()["data"] == []
        bad = await node.http.get(f"{BASE}/topics", headers={"Authorization": "Bearer nope"})
        assert bad.status_code == 401

    run(tmp_path, scenario)


def test_events_stream_names_the_topics_a_change_touched(tmp_path: Path) -> None:
    # httpx's ASGI transport answers only once a body is complete, so the stream is read from
    # its generator; the HTTP route around it is the browser tests'.
    async def scenario(node: Node, tokens: dict[str, str], path: Path) -> None:
        csrf = await login(node, tokens["admin"])
        context = node.context
        start = context.controller.image.offset

        def access(name: str) -> ConsoleAccess:
            return ConsoleAccess(context.controller.image, Principal(name), context.authorizer)

        async def read(name: str) -> list[bytes]:
            received = []
            async for message in event_stream(context, lambda: access(name), start, seconds=5):
                if message.startswith(b"id:"):
                    received.append(message)
                    if len(received) == 2:
                        break
            return received

        readers = [asyncio.create_task(read(n)) for n in ("User:admin", "User:alice")]
        await asyncio.sleep(0.1)
        answer = await node.http.post(
            f"{BASE}/topics:create-partitions", headers={CSRF_HEADER: csrf},
            json={"topics": [{"topic_name": "orders", "partitions_count": 4}]})
        assert answer.status_code == 200
        offset = int(answer.headers["x-metadata-offset"])
        admin, alice = await asyncio.wait_for(asyncio.gather(*readers), 5)
        assert admin[0].startswith(f"id: {start}\n".encode())
        assert admin[1] == change_event(offset, ["orders"], False)
        assert alice[1] == change_event(offset, [], True)  # something changed, not what

    run(tmp_path, scenario)


def test_events_end_when_the_node_stops_rather_than_spin(tmp_path: Path) -> None:
    async def scenario(node: Node, tokens: dict[str, str], path: Path) -> None:
        context = node.context
        context.controller.release_waiters()  # what a stopping node does
        access = ConsoleAccess(context.controller.image, Principal("User:admin"),
                               context.authorizer)
        began = asyncio.get_running_loop().time()
        messages = [m async for m in event_stream(context, lambda: access, -1, seconds=20)]
        assert asyncio.get_running_loop().time() - began < 2
        assert len(messages) == 2 and messages[0].startswith(b"retry:")

    run(tmp_path, scenario)
