"""Three ReplicaManagers that reach each other through the broker HTTP app (in process, ASGI):
the KIP-1114 chunk move and a replicated acks=all produce over the real routes and JSON."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from chunkraft.broker_agent.peer_client import HttpPeerClient
from chunkraft.broker_agent.replica_manager import ReplicaManager
from chunkraft.broker_agent.server.app import create_broker_app
from chunkraft.controller.image import MetadataDelta, MetadataImage
from chunkraft.records import (
    BrokerEndpoint,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from tests.unit.broker_agent.replica_harness import (
    BROKER_EPOCH_BASE,
    FAST,
    TOPIC,
    TOPIC_ID,
    Cluster,
    consume,
    eventually,
    produce,
    values_of,
)

PORT_BASE = 19_090


class _Dispatch(httpx.AsyncBaseTransport):
    """Routes a request to the ASGI app of the broker whose port it names."""

    def __init__(self, apps: dict[int, Any]) -> None:
        self.apps = apps

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        port = request.url.port or 0
        app = self.apps.get(port)
        if app is None:
            raise httpx.ConnectError(f"nothing listens on {port}")
        return await httpx.ASGITransport(app=app).handle_async_request(request)


@dataclass
class _Follower:
    cluster: Cluster

    @property
    def image(self) -> MetadataImage:
        return self.cluster.controller.image

    @property
    def offset(self) -> int:
        return self.cluster.controller.image.offset


@dataclass
class _Lifecycle:
    broker_epoch: int
    fenced: bool = False
    shutting_down: bool = False


@dataclass
class _Runtime:
    node_id: int
    follower: _Follower
    lifecycle: _Lifecycle
    replica_manager: ReplicaManager
    cluster_id: str = "MkU3OEVBNTcwNTJENDM2Qg"
    producer_ids: Any = None
    authenticator: Any = None
    authorizer: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


class HttpCluster(Cluster):
    """Cluster whose peers go over HTTP to each broker's app."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.apps: dict[int, Any] = {}
        self.clients: list[HttpPeerClient] = []

    async def start_broker(self, broker_id: int) -> ReplicaManager:
        peers = HttpPeerClient(lambda: self.controller.image, "token",
                               transport=_Dispatch(self.apps))
        self.clients.append(peers)
        manager = ReplicaManager(broker_id, self.log_manager(broker_id), FAST,
                                 self.controller, peers,
                                 lambda: BROKER_EPOCH_BASE + broker_id, caught_up=lambda: True)
        self.managers[broker_id] = manager
        self.controller.brokers[broker_id] = manager
        runtime = _Runtime(broker_id, _Follower(self), _Lifecycle(BROKER_EPOCH_BASE + broker_id),
                           manager)
        self.apps[PORT_BASE + broker_id] = create_broker_app(runtime)
        await manager.start()
        delta = MetadataDelta(MetadataImage.EMPTY)
        delta.replay_all(self.controller.image.to_records())
        await manager.apply_delta(delta, self.controller.image)
        return manager

    async def start(self, replicas: tuple[int, ...] = (0,)) -> None:
        for broker_id in range(self.count):
            await self.start_broker(broker_id)
        await self.controller.commit(
            [RegisterBrokerRecord(broker_id=b, broker_epoch=BROKER_EPOCH_BASE + b, fenced=False,
                                  end_points=(BrokerEndpoint(name="HTTP", host="127.0.0.1",
                                                             port=PORT_BASE + b),))
             for b in range(self.count)]
            + [TopicRecord(name=TOPIC, topic_id=TOPIC_ID),
               PartitionRecord(partition_id=0, topic_id=TOPIC_ID, replicas=replicas,
                               isr=replicas, leader=replicas[0], leader_epoch=0,
                               partition_epoch=0)])

    async def close(self) -> None:
        await super().close()
        for client in self.clients:
            await client.close()


def test_replication_and_a_chunk_move_over_http(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = HttpCluster(tmp_path)
        await cluster.start(replicas=(0, 1))
        b0 = cluster.managers[0]
        try:
            first = await produce(b0, [b"a", b"b"])
            assert (first.error_code, first.base_offset) == (0, 0)
            log1 = cluster.managers[1].logs.get(TOPIC, 0)
            assert log1 is not None and log1.log_end_offset == 2
            assert await b0.roll_chunk(TOPIC, 0, (1, 2), 1) == (0, None)
            await cluster.controller.move_chunk(0, (2, 1))

            def moved() -> bool:
                t = cluster.controller.image.topics.get_by_name(TOPIC)
                return t is not None and sorted(t.chunks_of(0)[0].isr) == [1, 2]

            await eventually(moved, "the move of chunk 0 to brokers 2 and 1")
            assert b0.logs.get(TOPIC, 0) is None
            assert values_of(await consume(cluster.managers[2], 0)) == [b"a", b"b"]
            second = await produce(cluster.managers[1], [b"c"])
            assert (second.error_code, second.base_offset) == (0, 2)
        finally:
            await cluster.close()

    asyncio.run(asyncio.wait_for(scenario(), 30))
