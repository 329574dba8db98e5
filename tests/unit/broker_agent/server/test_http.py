"""fetch_answer writes exactly the serializer's JSON, splicing the records in; produce and fetch
take batch frames, and a fetch answers with one when asked."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import AsyncIterator

import pytest

from chunkraft.broker_agent.server import create_broker_app
from chunkraft.broker_agent.server.http import MAX_BODY_BYTES, PiecesResponse, fetch_answer
from chunkraft.error_codes import Errors
from chunkraft.protocol.batch_frame import ACCEPT_FRAME, MEDIA_TYPE, decode_frame, frame_bytes
from chunkraft.protocol.data_plane import (
    AbortedTransaction,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopicResponse,
    ListOffsetsRequest,
    ProducePartitionData,
    ProduceRequest,
    ProduceTopicData,
)
from tests.unit.broker_agent.server.support import RECORD_BYTES, AsgiClient, FakeRuntime


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


# ------------------------------------------------------------------ batch frames over HTTP

FRAME_HEADERS = {"content-type": MEDIA_TYPE, "accept": ACCEPT_FRAME}


def _produce_frame(*records: bytes) -> bytes:
    return frame_bytes(ProduceRequest(acks=1, topics=(ProduceTopicData(
        name="orders", partition_count=3, partitions=tuple(
            ProducePartitionData(index=i, records=data) for i, data in enumerate(records))),)))


def test_a_framed_produce_reaches_the_replica_manager_with_its_raw_batches() -> None:
    runtime = FakeRuntime()
    answer = AsgiClient(create_broker_app(runtime)).post(
        "/broker/v1/produce", content=_produce_frame(b"\x00batch one", b"two"),
        headers=FRAME_HEADERS)
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    assert [p["base_offset"] for p in answer.json()["topics"][0]["partitions"]] == [0, 10]
    ((kind, request),) = runtime.replica_manager.calls
    assert kind == "produce" and request.acks == 1
    assert [bytes(p.records) for p in request.topics[0].partitions] == [b"\x00batch one", b"two"]


def test_a_fetch_answer_is_a_frame_when_accepted_and_json_otherwise() -> None:
    runtime = FakeRuntime()
    client = AsgiClient(create_broker_app(runtime))
    body = {"topics": [{"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 0}]}]}
    framed = client.post("/broker/v1/fetch", json=body, headers={"accept": ACCEPT_FRAME})
    assert framed.status_code == 200 and framed.headers["content-type"] == MEDIA_TYPE
    answer = decode_frame(framed.content, FetchResponse)
    assert answer.responses[0].partitions[0].records == RECORD_BYTES
    assert int(framed.headers["content-length"]) == len(framed.content)
    plain = client.post("/broker/v1/fetch", json=body)
    assert plain.headers["content-type"] == "application/json"
    assert FetchResponse.model_validate_json(plain.content) == answer
    # A fetch request may itself be a frame (it has no records: only the header).
    again = client.post("/broker/v1/fetch", content=frame_bytes(FetchRequest.model_validate(body)),
                        headers=FRAME_HEADERS)
    assert decode_frame(again.content, FetchResponse) == answer


@pytest.mark.parametrize(("body", "error"), [
    (b"", Errors.INVALID_REQUEST),
    (b"CKB9\x00\x00\x00\x02{}", Errors.INVALID_REQUEST),
    (b"CKB1\x00\x00\x10\x00{}", Errors.INVALID_REQUEST),
    (b"CKB1\x00\x00\x00\x05{oops", Errors.INVALID_REQUEST),
    (_produce_frame(b"abc", b"def")[:-1], Errors.CORRUPT_MESSAGE),
])
def test_a_malformed_frame_is_refused_400_before_the_replica_manager(
        body: bytes, error: Errors) -> None:
    runtime = FakeRuntime()
    answer = AsgiClient(create_broker_app(runtime)).post(
        "/broker/v1/produce", content=body, headers=FRAME_HEADERS)
    assert answer.status_code == 400
    assert answer.json()["error_code"] == error.code
    assert runtime.replica_manager.calls == []


def test_a_frame_over_the_body_limit_is_refused_413_unread() -> None:
    runtime = FakeRuntime()

    async def huge() -> AsyncIterator[bytes]:
        yield _produce_frame(b"abc")

    answer = AsgiClient(create_broker_app(runtime)).post(
        "/broker/v1/produce", content=huge(),
        headers={**FRAME_HEADERS, "content-length": str(MAX_BODY_BYTES + 1)})
    assert answer.status_code == 413
    assert answer.json()["error_code"] == Errors.MESSAGE_TOO_LARGE.code
    assert runtime.replica_manager.calls == []


def test_metadata_routes_take_json_only() -> None:
    runtime = FakeRuntime()
    body = frame_bytes(ListOffsetsRequest(topics=()))
    answer = AsgiClient(create_broker_app(runtime)).post(
        "/broker/v1/list-offsets", content=body, headers=FRAME_HEADERS)
    assert answer.status_code == 400 and runtime.replica_manager.calls == []
