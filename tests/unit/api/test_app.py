"""create_app (chunkraft.api.app): health, readiness, the lifespan and the session monitor."""

from __future__ import annotations

import asyncio
import dataclasses
import time

import httpx

from chunkraft.api.app import READY_MAX_LAG_ENTRIES
from chunkraft.controller.operations.heartbeats import BrokerHeartbeatTracker
from chunkraft.controller.raft.log import QuorumStatus
from tests.unit.api.support import FollowerRaft, running_node, start_brokers


def test_healthz_answers_while_the_process_is_up() -> None:
    async def scenario() -> None:
        async with running_node(node_id=3) as node:
            node.raft.set_leader(False)
            answer = await node.http.get("/healthz")
            assert answer.status_code == 200
            assert answer.json() == {"status": "ok", "node_id": 3}

    asyncio.run(scenario())


def test_readyz_needs_a_known_leader_and_a_healthy_log() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            await start_brokers(node, (1,))
            ready = await node.http.get("/readyz")
            assert ready.status_code == 200
            assert ready.json() == {"ready": True, "reason": None, "leader_id": 1,
                                    "has_quorum": True, "lag_entries": 0,
                                    "tick_lag_seconds": None, "failure": None,
                                    "metadata_offset": node.context.controller.image.offset,
                                    "voter_ids": [1]}
            node.raft.set_leader(False)
            leaderless = await node.http.get("/readyz")
            assert leaderless.status_code == 503
            assert leaderless.json()["ready"] is False
            assert leaderless.json()["leader_id"] is None
            node.raft.set_leader(True)
            node.raft.state_machine.apply_entry(b"corrupt")
            failed = await node.http.get("/readyz")
            assert failed.status_code == 503
            assert "corrupt" in failed.json()["failure"]

    asyncio.run(scenario())


class LaggingRaft(FollowerRaft):
    """A follower with a quorum that knows of ``lag`` committed entries it has not applied."""

    def __init__(self, lag: int) -> None:
        super().__init__(2, leader=1)
        self.lag = lag

    def status(self) -> QuorumStatus:
        status = super().status()
        return dataclasses.replace(status, has_quorum=True,
                                   commit_index=status.last_applied_index + self.lag)


def test_a_follower_far_behind_the_commit_index_is_not_ready() -> None:
    async def scenario() -> None:
        async with running_node(LaggingRaft(READY_MAX_LAG_ENTRIES)) as node:
            close = await node.http.get("/readyz")
            assert close.status_code == 200, close.json()
        async with running_node(LaggingRaft(READY_MAX_LAG_ENTRIES + 1)) as node:
            behind = await node.http.get("/readyz")
            assert behind.status_code == 503
            assert behind.json()["lag_entries"] == READY_MAX_LAG_ENTRIES + 1

    asyncio.run(scenario())


def test_a_follower_that_knows_the_leader_is_not_ready_without_quorum() -> None:
    async def scenario() -> None:
        async with running_node(FollowerRaft(2, leader=1)) as node:
            # LocalRaft reports has_quorum only while it leads
            answer = await node.http.get("/readyz")
            assert answer.status_code == 503 and answer.json()["leader_id"] == 1

    asyncio.run(scenario())


def test_the_lifespan_binds_the_controller_and_closes_the_forwarding_client() -> None:
    async def scenario() -> httpx.AsyncClient:
        async with running_node() as node:
            client = node.context.client()
            assert node.app.state.context is node.context
            # start() subscribed the controller: a write commits and wakes readers
            await start_brokers(node, (1,))
            assert node.context.controller.image.offset >= 1
            assert not client.is_closed
        assert node.context._client is None
        return client

    client = asyncio.run(scenario())
    assert client.is_closed


def test_the_openapi_schema_documents_each_route_with_its_request_body() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            schema = (await node.http.get("/openapi.json")).json()
            topics = schema["paths"]["/controller/v1/create-topics"]["post"]
            body = topics["requestBody"]["content"]["application/json"]["schema"]
            assert "topics" in body["properties"]
            for path in ("/controller/v1/metadata-log", "/controller/v1/snapshot",
                         "/controller/v1/quorum", "/healthz", "/readyz"):
                assert "get" in schema["paths"][path], path

    asyncio.run(scenario())


def test_the_session_monitor_fences_a_broker_whose_heartbeats_stopped() -> None:
    clock = [0.0]

    async def scenario() -> None:
        tracker = BrokerHeartbeatTracker(session_timeout=9.0, now=0.0)
        async with running_node(monitor_sessions=True, heartbeats=tracker,
                                monotonic=lambda: clock[0]) as node:
            await start_brokers(node, (1, 2))
            image = node.context.controller.image
            assert not any(b.fenced for b in image.brokers)
            await asyncio.sleep(0.7)  # the monitor has looked once: nothing expired yet
            assert not any(b.fenced for b in node.context.controller.image.brokers)
            clock[0] = 30.0  # 30 s without a heartbeat from either broker
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                if all(b.fenced for b in node.context.controller.image.brokers):
                    break
                await asyncio.sleep(0.05)
            assert all(b.fenced for b in node.context.controller.image.brokers)

    asyncio.run(scenario())
