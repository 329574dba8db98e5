"""What the broker's HTTP data plane needs from the rest of the broker agent.

Structural types (``typing.Protocol``) of the runtime the app finds in ``app.state.runtime``:
the process builds a ``chunkraft.broker_agent.runtime.BrokerRuntime`` that has these
attributes, and unit tests build small fakes. The data plane only reads the runtime; every
call runs on the broker's event loop.
"""

from __future__ import annotations

import uuid
from typing import Any, Protocol

from chunkraft.api.authentication import Authenticator
from chunkraft.controller.image import MetadataImage
from chunkraft.protocol.data_plane import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    ProduceRequest,
    ProduceResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from chunkraft.security.authorizer import Authorizer

__all__ = [
    "BrokerRuntimeLike",
    "ControllerChannelLike",
    "LifecycleLike",
    "MetadataFollowerLike",
    "ProducerIdsLike",
    "ReplicaManagerLike",
]


class ReplicaManagerLike(Protocol):
    """The ReplicaManager's data-plane operations (per-item errors inside the responses)."""

    async def produce(self, request: ProduceRequest) -> ProduceResponse: ...

    async def fetch(self, request: FetchRequest) -> FetchResponse: ...

    def list_offsets(self, request: ListOffsetsRequest) -> ListOffsetsResponse: ...

    def offsets_for_leader_epoch(
        self, request: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse: ...

    async def write_txn_markers(
        self, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse: ...

    async def roll_chunk(self, topic: str, partition: int, broker_ids: tuple[int, ...],
                         leader: int) -> tuple[int, str | None]: ...

    def status_counts(self) -> tuple[int, int, int]: ...


class MetadataFollowerLike(Protocol):
    """The broker's metadata image and the last metadata offset it holds."""

    @property
    def image(self) -> MetadataImage: ...

    @property
    def offset(self) -> int: ...


class LifecycleLike(Protocol):
    """Registration state: ``broker_epoch`` is -1 until registered."""

    @property
    def broker_epoch(self) -> int: ...

    @property
    def fenced(self) -> bool: ...

    @property
    def shutting_down(self) -> bool: ...


class ControllerChannelLike(Protocol):
    """``await call(path, body) -> dict``: one controller RPC, retried; raises
    ``chunkraft.client.controller_rpc.ControllerRpcError`` when it gives up."""

    async def call(self, path: str, body: dict[str, Any]) -> dict[str, Any]: ...


class ProducerIdsLike(Protocol):
    """Hands out producer ids (:class:`chunkraft.broker_agent.producer_ids.ProducerIdManager`)."""

    async def next_id(self) -> int: ...


class BrokerRuntimeLike(Protocol):
    """The broker agent as the HTTP app sees it. ``authenticator`` None: every request is
    anonymous (in-process tests); ``authorizer`` None: everything is allowed."""

    @property
    def node_id(self) -> int: ...

    @property
    def cluster_id(self) -> str | uuid.UUID: ...

    @property
    def follower(self) -> MetadataFollowerLike: ...

    @property
    def lifecycle(self) -> LifecycleLike: ...

    @property
    def replica_manager(self) -> ReplicaManagerLike: ...

    @property
    def producer_ids(self) -> ProducerIdsLike: ...

    @property
    def authenticator(self) -> Authenticator | None: ...

    @property
    def authorizer(self) -> Authorizer | None: ...
