"""fetch_answer writes exactly the serializer's JSON, splicing the records in."""

from __future__ import annotations

import base64
import json
import os

import pytest

from chunkraft.broker_agent.server import create_broker_app
from chunkraft.broker_agent.server.http import PiecesResponse, fetch_answer
from chunkraft.protocol.data_plane import (
    AbortedTransaction,
    FetchPartitionResponse,
    FetchResponse,
    FetchTopicResponse,
)
from tests.unit.broker_agent.server.support import AsgiClient, FakeRuntime


def response(*records: bytes, topic: str = 'odd "name" \\ "records":""') -> FetchResponse:
    return FetchResponse(responses=(
        FetchTopicResponse(topic=topic, partitions=tuple(
            FetchPartitionResponse(
                partition=index, records=text, high_watermark=index, error_message=topic,
                aborted_transactions=(AbortedTransaction(producer_id=1, first_offset=2),))
            for index, text in enumerate(records))),
        FetchTopicResponse(topic="second", partitions=(
            FetchPartitionResponse(partition=0, records=records[0]),))))


@pytest.mark.parametrize("records", [
    (os.urandom(9000), b"", b"x"),
    (b"\0\0\0",),  # small: the serializer writes it
    (b'"records":"\\' * 1000,),  # bytes that would need escaping as text: base64 needs none
])
def test_the_answer_is_the_serializers_json(records: tuple[bytes, ...]) -> None:
    answer = response(*records)
    sent = fetch_answer(answer)
    body = (b"".join(sent.pieces) if isinstance(sent, PiecesResponse) else bytes(sent.body))
    assert int(sent.headers["content-length"]) == len(body)
    assert body == FetchResponse.__pydantic_serializer__.to_json(answer)
    assert FetchResponse.model_validate_json(body) == answer
    assert json.loads(body)["responses"][0]["partitions"][0]["records"] == \
        base64.b64encode(records[0]).decode()


def test_a_large_fetch_answer_arrives_whole_over_http() -> None:
    big = os.urandom(100_000)
    runtime = FakeRuntime()

    async def fetch(request: object) -> FetchResponse:
        return response(big, big)

    runtime.replica_manager.fetch = fetch  # type: ignore[method-assign]
    answer = AsgiClient(create_broker_app(runtime)).post("/broker/v1/fetch", json={
        "topics": [{"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 0}]}]})
    assert answer.status_code == 200
    assert FetchResponse.model_validate_json(answer.content) == response(big, big)
