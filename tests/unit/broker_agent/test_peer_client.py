"""HttpPeerClient: peer URLs from the image, the broker token, answers and failures."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from chunkraft.broker_agent.peer_client import HttpPeerClient, PeerUnavailable
from chunkraft.controller.image import MetadataDelta, MetadataImage
from chunkraft.protocol.data_plane import (
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from chunkraft.records import BrokerEndpoint, RegisterBrokerRecord


def _image() -> MetadataImage:
    delta = MetadataDelta(MetadataImage.EMPTY)
    delta.replay(RegisterBrokerRecord(broker_id=1, broker_epoch=5, fenced=False, end_points=(
        BrokerEndpoint(name="HTTP", host="127.0.0.1", port=9193, security_protocol=0),)))
    delta.replay(RegisterBrokerRecord(broker_id=2, broker_epoch=6, fenced=False))
    return delta.apply()


FETCH = FetchRequest(replica_id=0, topics=(FetchTopic(topic="t", partitions=(
    FetchPartition(partition=0, fetch_offset=3),)),))


def test_posts_to_the_registered_listener_with_the_token() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/broker/v1/fetch":
            return httpx.Response(200, content=FetchResponse().model_dump_json())
        return httpx.Response(200, content=OffsetForLeaderEpochResponse().model_dump_json())

    async def scenario() -> None:
        client = HttpPeerClient(_image, "secret", transport=httpx.MockTransport(handler))
        try:
            assert await client.fetch(1, FETCH) == FetchResponse()
            answer = await client.offsets_for_leader_epoch(1, OffsetForLeaderEpochRequest(
                topics=(OffsetForLeaderTopic(topic="t", partitions=(
                    OffsetForLeaderPartition(partition=0, leader_epoch=1),)),)))
            assert answer == OffsetForLeaderEpochResponse()
        finally:
            await client.close()

    asyncio.run(scenario())
    assert [str(r.url) for r in seen] == [
        "http://127.0.0.1:9193/broker/v1/fetch",
        "http://127.0.0.1:9193/broker/v1/offsets-for-leader-epoch",
    ]
    assert seen[0].headers["authorization"] == "Bearer secret"
    assert FetchRequest.model_validate_json(seen[0].content) == FETCH


@pytest.mark.parametrize("broker_id", [2, 3])
def test_a_broker_without_a_listener_is_unavailable(broker_id: int) -> None:
    async def scenario() -> None:
        client = HttpPeerClient(_image, transport=httpx.MockTransport(
            lambda r: httpx.Response(200)))
        try:
            with pytest.raises(PeerUnavailable):
                await client.fetch(broker_id, FETCH)
        finally:
            await client.close()

    asyncio.run(scenario())


def test_errors_and_bad_bodies_are_unavailable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.headers.get("x-case") == "boom":
            raise httpx.ConnectError("refused")
        return httpx.Response(200, content=b"{not json")

    async def scenario() -> None:
        for status in (403, 503):
            client = HttpPeerClient(_image, transport=httpx.MockTransport(
                lambda r, s=status: httpx.Response(s, text="no")))
            with pytest.raises(PeerUnavailable, match=str(status)):
                await client.fetch(1, FETCH)
            await client.close()
        client = HttpPeerClient(_image, transport=httpx.MockTransport(handler))
        with pytest.raises(PeerUnavailable, match="bad fetch answer"):
            await client.fetch(1, FETCH)
        await client.close()

    asyncio.run(scenario())
