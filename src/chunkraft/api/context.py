"""ControllerContext: what every HTTP handler of a controller needs, built once per process."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from chunkraft.controller.operations.heartbeats import BrokerHeartbeatTracker
from chunkraft.controller.quorum_controller import QuorumController
from chunkraft.records.uuids import kafka_uuid_str

__all__ = ["ControllerContext"]


@dataclass
class ControllerContext:
    """The controller node behind the HTTP surface.

    ``controller_urls`` maps every voter's node id to its HTTP URL, so a write that reaches a
    follower is forwarded to the leader. ``heartbeats`` is the leader's in-memory view of broker
    sessions (not replicated: a new leader starts every session afresh, as Kafka does).
    """

    controller: QuorumController
    cluster_id: uuid.UUID
    node_id: int
    controller_urls: dict[int, str]
    heartbeats: BrokerHeartbeatTracker
    super_users: tuple[str, ...] = ()
    monotonic: Callable[[], float] = time.monotonic
    forward_timeout: float = 30.0
    _client: httpx.AsyncClient | None = field(default=None, repr=False)

    @property
    def cluster_id_text(self) -> str:
        """The cluster id as Kafka writes it (base64, as in ``meta.properties``)."""
        return kafka_uuid_str(self.cluster_id)

    def client(self) -> httpx.AsyncClient:
        """The HTTP client used to forward writes to the leader (created on first use)."""
        if self._client is None:
            limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
            self._client = httpx.AsyncClient(timeout=self.forward_timeout, limits=limits)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
