"""How a broker reaches other brokers (followers -> leaders, chunk copiers -> chunk replicas).

:class:`PeerClientLike` is the seam the ReplicaManager uses; :class:`HttpPeerClient` posts the
data-plane messages to the peer's ``/broker/v1/fetch`` and ``/broker/v1/offsets-for-leader-epoch``
with this broker's bearer token (a fetch asks for its answer as a batch frame, so the record
batches arrive raw, as views of the body); tests wire brokers together in memory instead.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any, Protocol

import httpx

from chunkraft.broker_endpoints import broker_url
from chunkraft.cluster_timeouts import cluster_timeout
from chunkraft.controller.image import MetadataImage
from chunkraft.protocol.batch_frame import ACCEPT_FRAME, decode_answer
from chunkraft.protocol.data_plane import (
    FetchRequest,
    FetchResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)

__all__ = ["ControllerChannelLike", "HttpPeerClient", "PeerClientLike", "PeerUnavailable"]

FETCH_PATH = "/broker/v1/fetch"
OFFSETS_FOR_LEADER_EPOCH_PATH = "/broker/v1/offsets-for-leader-epoch"


class PeerUnavailable(Exception):
    """A peer broker could not be reached or did not answer with a valid message."""


class PeerClientLike(Protocol):
    """Sends one request to broker ``broker_id``; raises :class:`PeerUnavailable` on failure."""

    async def fetch(self, broker_id: int, request: FetchRequest) -> FetchResponse: ...

    async def offsets_for_leader_epoch(
        self, broker_id: int, request: OffsetForLeaderEpochRequest
    ) -> OffsetForLeaderEpochResponse: ...


class ControllerChannelLike(Protocol):
    """The controller RPC (part B's ControllerChannel): POST ``path`` with ``body``, the JSON
    answer back; raises (``ControllerRpcError``) when it gives up."""

    async def call(self, path: str, body: dict[str, Any]) -> dict[str, Any]: ...


class HttpPeerClient:
    """:class:`PeerClientLike` over HTTP; peer URLs come from the current image's registrations.

    One ``httpx.AsyncClient`` (connection pool) for all peers; ``close()`` releases it. The
    timeout must exceed the longest long poll (``replica.fetch.wait.max.ms``). ``transport``
    replaces the network (tests).
    """

    def __init__(
        self,
        image: Callable[[], MetadataImage],
        token: str | None = None,
        *,
        verify: ssl.SSLContext | bool = True,
        timeout_s: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._image = image
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.AsyncClient(
            headers=headers, verify=verify, timeout=cluster_timeout(timeout_s),
            transport=transport,
        )

    def _url(self, broker_id: int) -> str:
        registration = self._image().brokers.get(broker_id)
        url = broker_url(registration) if registration is not None else None
        if url is None:
            raise PeerUnavailable(f"broker {broker_id} is not registered with a listener")
        return url

    async def _post(self, broker_id: int, path: str, body: bytes) -> httpx.Response:
        url = self._url(broker_id) + path
        try:
            answer = await self._client.post(
                url, content=body,
                headers={"content-type": "application/json", "accept": ACCEPT_FRAME},
            )
        except httpx.HTTPError as error:
            raise PeerUnavailable(f"broker {broker_id} at {url}: {error!r}") from error
        if answer.status_code != 200:
            raise PeerUnavailable(
                f"broker {broker_id} at {url} answered HTTP {answer.status_code}: "
                f"{answer.text[:200]}"
            )
        return answer

    async def fetch(self, broker_id: int, request: FetchRequest) -> FetchResponse:
        answer = await self._post(broker_id, FETCH_PATH, _json(request))
        try:
            return decode_answer(answer.content, answer.headers.get("content-type"),
                                 FetchResponse)
        except ValueError as error:
            raise PeerUnavailable(f"broker {broker_id}: bad fetch answer: {error}") from error

    async def offsets_for_leader_epoch(
        self, broker_id: int, request: OffsetForLeaderEpochRequest
    ) -> OffsetForLeaderEpochResponse:
        answer = await self._post(broker_id, OFFSETS_FOR_LEADER_EPOCH_PATH, _json(request))
        try:
            return OffsetForLeaderEpochResponse.model_validate_json(answer.content)
        except ValueError as error:
            raise PeerUnavailable(
                f"broker {broker_id}: bad OffsetsForLeaderEpoch answer: {error}"
            ) from error

    async def close(self) -> None:
        await self._client.aclose()


def _json(request: FetchRequest | OffsetForLeaderEpochRequest) -> bytes:
    return type(request).__pydantic_serializer__.to_json(request)
