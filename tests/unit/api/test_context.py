"""ControllerContext: the forwarding pool is built once, with one TLS context for all."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import pytest

from chunkraft.api.context import FORWARDING_CLIENTS, ControllerContext
from chunkraft.controller.operations.heartbeats import BrokerHeartbeatTracker
from chunkraft.controller.quorum_controller import QuorumController
from chunkraft.controller.raft.local import LocalRaft
from tests.unit.api.support import CLUSTER_ID


def _context(**options: Any) -> ControllerContext:
    return ControllerContext(controller=QuorumController(LocalRaft(1)), cluster_id=CLUSTER_ID,
                             node_id=1, controller_urls={}, heartbeats=BrokerHeartbeatTracker(),
                             **options)


def test_the_forwarding_pool_loads_the_ca_bundle_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each default TLS context loads the system's CA bundle; 16 of them held the loop for
    seconds at the first forwarded write on a busy host."""
    made: list[ssl.SSLContext] = []
    real = ssl.create_default_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(ssl, "create_default_context", counting)

    async def scenario() -> set[int]:
        context = _context()
        clients = {id(context.client()) for _ in range(FORWARDING_CLIENTS * 2)}
        await context.aclose()
        return clients

    assert len(asyncio.run(scenario())) == FORWARDING_CLIENTS
    assert len(made) == 1


def test_a_configured_tls_context_is_used_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ssl, "create_default_context",
                        lambda *a, **k: pytest.fail("no default context with a configured one"))
    configured = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)

    async def scenario() -> None:
        context = _context(ssl_context=configured)
        context.client()
        await context.aclose()

    asyncio.run(scenario())
