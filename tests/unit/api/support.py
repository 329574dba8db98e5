"""Running controller apps in-process: create_app over a QuorumController on LocalRaft, driven
through httpx's ASGI transport (no sockets, no threads), with the lifespan run for real."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import FastAPI

from chunkraft.api.app import create_app
from chunkraft.api.context import ControllerContext
from chunkraft.controller.operations.heartbeats import BrokerHeartbeatTracker
from chunkraft.controller.quorum_controller import QuorumController
from chunkraft.controller.raft.local import LocalRaft
from chunkraft.records.uuids import kafka_uuid_str

CLUSTER_ID = uuid.UUID("5b7f9c3e-0d1a-4c2b-9e8f-112233445566")
CLUSTER_ID_TEXT = kafka_uuid_str(CLUSTER_ID)
V1 = "/controller/v1"


class FollowerRaft(LocalRaft):
    """A LocalRaft that is a follower and knows which node leads (LocalRaft alone only knows
    itself): what a real follower's RaftLog reports while another node leads."""

    def __init__(self, node_id: int, leader: int | None) -> None:
        super().__init__(node_id)
        self.known_leader = leader
        self.set_leader(False)

    def leader_id(self) -> int | None:
        return self.node_id if self.is_leader() else self.known_leader


@dataclass
class Node:
    """One controller's app, its context and a client that talks to it."""

    app: FastAPI
    context: ControllerContext
    http: httpx.AsyncClient

    @property
    def raft(self) -> LocalRaft:
        raft = self.context.controller.raft
        assert isinstance(raft, LocalRaft)
        return raft

    async def post(self, route: str, body: Any, **kwargs: Any) -> httpx.Response:
        return await self.http.post(f"{V1}/{route}", json=body, **kwargs)


@contextlib.asynccontextmanager
async def running_node(
    raft: LocalRaft | None = None,
    *,
    node_id: int = 1,
    controller_urls: dict[int, str] | None = None,
    forward_client: httpx.AsyncClient | None = None,
    monitor_sessions: bool = False,
    heartbeats: BrokerHeartbeatTracker | None = None,
    monotonic: Callable[[], float] | None = None,
    **security: Any,
) -> AsyncIterator[Node]:
    """A controller app with its lifespan running (the controller bound to this loop).
    ``security``: ControllerContext's ``authenticator``, ``authorizer``, ``forwarding_key``."""
    raft = raft if raft is not None else LocalRaft(node_id)
    context = ControllerContext(
        controller=QuorumController(raft, request_timeout=5.0),
        cluster_id=CLUSTER_ID,
        node_id=raft.node_id,
        controller_urls=controller_urls or {},
        heartbeats=heartbeats or BrokerHeartbeatTracker(),
        _client=forward_client,
        **security,
    )
    if monotonic is not None:
        context.monotonic = monotonic
    app = create_app(context, monitor_sessions=monitor_sessions)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport,
                                     base_url=f"http://controller-{raft.node_id}") as http:
            yield Node(app, context, http)


def listener(broker_id: int) -> dict[str, Any]:
    return {"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9092 + broker_id,
            "security_protocol": 0}


def registration(broker_id: int, rack: str | None = None) -> dict[str, Any]:
    return {"broker_id": broker_id, "cluster_id": CLUSTER_ID_TEXT,
            "incarnation_id": kafka_uuid_str(uuid.UUID(int=0xB000 + broker_id)),
            "rack": rack, "listeners": [listener(broker_id)]}


async def start_brokers(node: Node, broker_ids: tuple[int, ...] = (1, 2, 3)) -> dict[int, int]:
    """Registers and unfences ``broker_ids`` through the HTTP surface; their epochs by id."""
    epochs = {}
    for broker_id in broker_ids:
        answer = await node.post("broker-registration", registration(broker_id))
        assert answer.status_code == 200 and answer.json()["error_code"] == 0, answer.text
        epochs[broker_id] = answer.json()["broker_epoch"]
    for broker_id, epoch in epochs.items():
        answer = await node.post("broker-heartbeat", {
            "broker_id": broker_id, "broker_epoch": epoch,
            "current_metadata_offset": node.context.controller.image.offset})
        assert answer.status_code == 200 and answer.json()["is_fenced"] is False, answer.text
    return epochs


def offset_of(answer: httpx.Response) -> int:
    return int(answer.headers["x-metadata-offset"])
