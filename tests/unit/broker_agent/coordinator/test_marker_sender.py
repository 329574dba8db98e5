"""MarkerSender: markers by leader, local ones to the ReplicaManager, retries until done."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
import pytest

from chunkraft.broker_agent.coordinator import marker_sender
from chunkraft.broker_agent.coordinator.marker_sender import MarkerSender
from chunkraft.controller.image import MetadataDelta, MetadataImage
from chunkraft.error_codes import Errors
from chunkraft.protocol.data_plane import (
    TxnMarkerPartitionResult,
    TxnMarkerResult,
    TxnMarkerTopicResult,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from chunkraft.records import BrokerEndpoint, PartitionRecord, RegisterBrokerRecord, TopicRecord


def _image() -> MetadataImage:
    delta = MetadataDelta(MetadataImage.EMPTY)
    for broker_id in (0, 1):
        delta.replay(RegisterBrokerRecord(broker_id=broker_id, broker_epoch=5, fenced=False,
                                          end_points=(BrokerEndpoint(
                                              name="HTTP", host="127.0.0.1",
                                              port=9100 + broker_id, security_protocol=0),)))
    topic_id = uuid.UUID(int=5)
    delta.replay(TopicRecord(name="t", topic_id=topic_id))
    for index, leader in ((0, 0), (1, 1)):
        delta.replay(PartitionRecord(partition_id=index, topic_id=topic_id, replicas=(0, 1),
                                     isr=(0, 1), leader=leader, leader_epoch=0,
                                     partition_epoch=0))
    return delta.apply()


def _answer(request: WriteTxnMarkersRequest, code: int) -> WriteTxnMarkersResponse:
    marker = request.markers[0]
    return WriteTxnMarkersResponse(markers=(TxnMarkerResult(
        producer_id=marker.producer_id, topics=tuple(TxnMarkerTopicResult(
            name=topic.name, partitions=tuple(
                TxnMarkerPartitionResult(partition_index=i, error_code=code)
                for i in topic.partition_indexes)) for topic in marker.topics)),))


class LocalReplicas:
    def __init__(self) -> None:
        self.requests: list[WriteTxnMarkersRequest] = []

    async def write_txn_markers(self, request: WriteTxnMarkersRequest
                                ) -> WriteTxnMarkersResponse:
        self.requests.append(request)
        return _answer(request, 0)


def test_local_and_remote_markers_with_a_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(marker_sender, "FIRST_BACKOFF_S", 0.01)
    remote: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        remote.append(body)
        code = Errors.NOT_LEADER_OR_FOLLOWER.code if len(remote) == 1 else 0
        parsed = WriteTxnMarkersRequest.model_validate(body)
        return httpx.Response(200, content=_answer(parsed, code).model_dump_json())

    local = LocalReplicas()
    sender = MarkerSender(0, _image, local, token="secret",
                          transport=httpx.MockTransport(handler))

    async def run() -> bool:
        try:
            return await sender.deliver([("t", 0), ("t", 1), ("gone", 0)], 7, 3, True, 2,
                                        lambda: True)
        finally:
            await sender.close()

    assert asyncio.run(run())
    assert len(local.requests) == 1 and local.requests[0].markers[0].coordinator_epoch == 2
    assert len(remote) == 2  # NOT_LEADER_OR_FOLLOWER once, then written
    assert remote[1]["markers"][0]["topics"] == [{"name": "t", "partition_indexes": [1]}]


def test_stops_when_no_longer_valid() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, content=b"{}")

    sender = MarkerSender(0, _image, LocalReplicas(), transport=httpx.MockTransport(handler))
    calls = 0

    def still_valid() -> bool:
        nonlocal calls
        calls += 1
        return calls < 3

    async def run() -> bool:
        try:
            return await sender.deliver([("t", 1)], 7, 3, False, 0, still_valid)
        finally:
            await sender.close()

    assert asyncio.run(run()) is False
