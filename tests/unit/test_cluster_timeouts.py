"""cluster_timeouts: a node gives a connection attempt 2 s whatever the request's timeout, and
every client a broker or controller uses inside the cluster is built with it."""

from __future__ import annotations

import asyncio

from chunkraft.api.context import ControllerContext
from chunkraft.broker_agent.controller_channel import ControllerChannel
from chunkraft.cluster_timeouts import CONNECT_TIMEOUT_S, cluster_timeout
from chunkraft.controller.operations.heartbeats import BrokerHeartbeatTracker
from chunkraft.controller.quorum_controller import QuorumController
from chunkraft.controller.raft.local import LocalRaft
from tests.unit.api.support import CLUSTER_ID


def test_connecting_is_bounded_apart_from_the_request() -> None:
    timeout = cluster_timeout(30.0)
    assert (timeout.connect, timeout.read, timeout.write, timeout.pool) == (2.0, 30.0, 30.0, 30.0)
    assert cluster_timeout(0.5).connect == 0.5  # never longer than the request's own
    assert CONNECT_TIMEOUT_S == 2.0


def test_the_brokers_controller_channel_and_the_forwarding_pool_use_it() -> None:
    async def scenario() -> None:
        channel = ControllerChannel(["http://198.18.0.1:9090"], timeout=10.0)
        context = ControllerContext(controller=QuorumController(LocalRaft(1)),
                                    cluster_id=CLUSTER_ID, node_id=1, controller_urls={},
                                    heartbeats=BrokerHeartbeatTracker(), forward_timeout=30.0)
        try:
            assert channel.client.timeout.connect == CONNECT_TIMEOUT_S
            assert channel.client.timeout.read == 10.0
            forwarding = context.client()
            assert forwarding.timeout.connect == CONNECT_TIMEOUT_S
            assert forwarding.timeout.read == 30.0
        finally:
            await channel.client.aclose()
            await context.aclose()
    asyncio.run(scenario())
