"""ControllerContext: what every HTTP handler of a controller needs, built once per process."""

from __future__ import annotations

import ssl
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from chunkraft.api.authentication import Authenticator
from chunkraft.api.limits import RequestLimits
from chunkraft.api.voter_standing import VoterStanding
from chunkraft.cluster_timeouts import cluster_timeout
from chunkraft.controller.operations.chunk_sizes import ChunkSizeTable
from chunkraft.controller.operations.heartbeats import BrokerHeartbeatTracker
from chunkraft.controller.quorum_controller import QuorumController
from chunkraft.records.uuids import kafka_uuid_str
from chunkraft.security.authorizer import Authorizer

__all__ = ["FORWARDING_CLIENTS", "ControllerContext"]

FORWARDING_CLIENTS = 16


@dataclass
class ControllerContext:
    """The controller node behind the HTTP surface.

    ``controller_urls`` maps every configured voter's node id to its HTTP URL
    (``controller.http.urls``), so a write that reaches a follower is forwarded to the leader;
    a controller registered in the image (added with ``chunkraft quorum add-controller``) is
    found there (:meth:`controller_url`). ``heartbeats`` is the leader's in-memory view of broker
    sessions (not replicated: a new leader starts every session afresh, as Kafka does), and
    ``chunk_sizes`` of the bytes brokers hold of each chunk (for ``retention.bytes``).
    """

    controller: QuorumController
    cluster_id: uuid.UUID
    node_id: int
    controller_urls: dict[int, str]
    heartbeats: BrokerHeartbeatTracker
    super_users: tuple[str, ...] = ()
    authorizer: Authorizer | None = None
    """None only for in-process tests of other layers: every request is then allowed."""
    authenticator: Authenticator | None = None
    """None only for in-process tests of other layers: every request is then anonymous."""
    forwarding_key: bytes = b""
    """Signs the principal of a write forwarded to the leader (see api.authentication)."""
    ssl_context: ssl.SSLContext | None = None
    """How forwarding verifies the other controllers (and presents this node's certificate)
    over https; None: httpx's default verification."""
    monotonic: Callable[[], float] = time.monotonic
    forward_timeout: float = 30.0
    export_dir: Path | None = None
    """``metadata.snapshot.export.dir``: where the console looks for the newest audit report."""
    limits: RequestLimits = field(default_factory=RequestLimits)
    """What one request may cost (:mod:`chunkraft.api.limits`); the defaults unless the
    configuration says otherwise."""
    chunk_sizes: ChunkSizeTable = field(default_factory=ChunkSizeTable)
    standing: VoterStanding = field(init=False, repr=False)
    """Whether the other controllers still count this node a voter; reads are refused while
    they do not (:mod:`chunkraft.api.voter_standing`)."""
    _client: httpx.AsyncClient | None = field(default=None, repr=False)
    _pool: list[httpx.AsyncClient] = field(default_factory=list, repr=False)
    _turn: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        self.standing = VoterStanding(self.node_id)

    @property
    def cluster_id_text(self) -> str:
        """The cluster id as Kafka writes it (base64, as in ``meta.properties``)."""
        return kafka_uuid_str(self.cluster_id)

    def client(self) -> httpx.AsyncClient:
        """An HTTP client to forward a write to the leader with (created on first use).

        Forwarding takes turns over 16 clients of 4 connections each rather than one client of
        64: httpcore checks every pooled connection on each request, so one large pool cost
        more CPU than the forwarded write itself (measured in bench/RESULTS.md). A test may set
        ``_client`` to use one client of its own.
        """
        if self._client is not None:
            return self._client
        if not self._pool:
            limits = httpx.Limits(max_connections=4, max_keepalive_connections=4)
            # One TLS context for all of them: each default one loads the system's CA bundle
            # (about 50 ms, 0.25 s on a busy host), which held the loop for seconds at the
            # first forwarded write when every client built its own (as a profile showed).
            verify = self.ssl_context or ssl.create_default_context()
            timeout = cluster_timeout(self.forward_timeout)
            self._pool = [httpx.AsyncClient(timeout=timeout, limits=limits, verify=verify)
                          for _ in range(FORWARDING_CLIENTS)]
        self._turn = (self._turn + 1) % len(self._pool)
        return self._pool[self._turn]

    def controller_url(self, node_id: int) -> str | None:
        """Controller ``node_id``'s HTTP URL: its registration in the committed image if it
        has one (newer than any configuration), else the configured one."""
        registered = self.controller.image.controllers.get(node_id)
        if registered is not None:
            return registered.http_url
        return self.controller_urls.get(node_id)

    def all_controller_urls(self) -> dict[int, str]:
        """Every controller's HTTP URL this node knows (:meth:`controller_url`), by id."""
        urls = dict(self.controller_urls)
        urls.update({r.controller_id: r.http_url for r in self.controller.image.controllers})
        return urls

    async def aclose(self) -> None:
        clients, self._pool = self._pool, []
        if self._client is not None:
            clients.append(self._client)
            self._client = None
        for client in clients:
            await client.aclose()
