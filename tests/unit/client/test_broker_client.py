"""BrokerClient / AsyncBrokerClient: requests as the routes expect them, answers parsed,
refusals raised; the record helpers (one batch per produce, read_committed decoding)."""

from __future__ import annotations

import asyncio
import base64
import json

import httpx
import pytest

from chunkraft.broker_agent.server import create_broker_app
from chunkraft.client.broker_client import (
    AsyncBrokerClient,
    BrokerClient,
    BrokerClientError,
    decode_fetch,
    decode_partition,
    fetch_request,
    list_offsets_request,
    produce_request,
)
from chunkraft.dataplane.record_batch import build_batch, build_control_batch, iter_batches
from chunkraft.error_codes import Errors
from chunkraft.protocol.batch_frame import MEDIA_TYPE, decode_frame
from chunkraft.protocol.data_plane import (
    AbortedTransaction,
    FetchPartitionResponse,
    FetchResponse,
    FetchTopicResponse,
    InitProducerIdRequest,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
    ProduceRequest,
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from tests.unit.broker_agent.server.support import FakeRuntime


def b64(*batches: bytes) -> str:
    return base64.b64encode(b"".join(batches)).decode()


def test_produce_request_puts_the_records_in_one_batch_with_the_producer_fields() -> None:
    request = produce_request("orders", 2, 4, [(b"k", b"v", 5), (None, b"w", 6)], acks=1,
                              producer_id=9, producer_epoch=1, base_sequence=3)
    topic = request.topics[0]
    assert (topic.name, topic.partition_count, topic.partitions[0].index, request.acks) == (
        "orders", 4, 2, 1)
    (header, _), = iter_batches(topic.partitions[0].records)
    assert (header.record_count, header.producer_id, header.producer_epoch,
            header.base_sequence) == (2, 9, 1, 3)


def test_decode_partition_skips_control_records_and_aborted_transactions() -> None:
    committed = build_batch([(b"a", b"1", 1)], base_offset=0, producer_id=7, producer_epoch=0,
                            base_sequence=0, transactional=True)
    aborted = build_batch([(b"b", b"2", 2), (b"c", b"3", 2)], base_offset=1, producer_id=8,
                          producer_epoch=0, base_sequence=0, transactional=True)
    abort = build_control_batch(False, producer_id=8, producer_epoch=0, base_offset=3,
                                timestamp_ms=3)
    commit = build_control_batch(True, producer_id=7, producer_epoch=0, base_offset=4,
                                 timestamp_ms=4)
    later = build_batch([(b"d", b"4", 5)], base_offset=5, producer_id=8, producer_epoch=0,
                        base_sequence=2, transactional=True)
    plain = build_batch([(None, b"5", 6)], base_offset=6)
    partition = FetchPartitionResponse(
        partition=0, records=b"".join((committed, aborted, abort, commit, later, plain)),
        aborted_transactions=(AbortedTransaction(producer_id=8, first_offset=1),))
    assert [(r.offset, r.value) for r in decode_partition(partition)] == [
        (0, b"1"), (5, b"4"), (6, b"5")]
    uncommitted = partition.model_copy(update={"aborted_transactions": None})
    assert [r.offset for r in decode_partition(uncommitted)] == [0, 1, 2, 5, 6]
    assert [r.offset for r in decode_partition(uncommitted, include_control=True)] == [
        0, 1, 2, 3, 4, 5, 6]
    response = FetchResponse(responses=(FetchTopicResponse(topic="t", partitions=(
        uncommitted, FetchPartitionResponse(partition=1, error_code=6))),))
    decoded = decode_fetch(response)
    assert [r.offset for r in decoded[("t", 0)]] == [0, 1, 2, 5, 6]
    assert decoded[("t", 1)] == []


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decode_partition_reads_compressed_batches_and_their_transactions(codec: int) -> None:
    committed = build_batch([(b"a", b"1", 1), (b"a", b"2", 1)], base_offset=0, producer_id=7,
                            producer_epoch=0, base_sequence=0, transactional=True,
                            compression=codec)
    aborted = build_batch([(b"b", b"3", 2)], base_offset=2, producer_id=8, producer_epoch=0,
                          base_sequence=0, transactional=True, compression=codec)
    abort = build_control_batch(False, producer_id=8, producer_epoch=0, base_offset=3,
                                timestamp_ms=3)
    commit = build_control_batch(True, producer_id=7, producer_epoch=0, base_offset=4,
                                 timestamp_ms=4)
    plain = build_batch([(None, b"5", 6)] * 3, base_offset=5, compression=codec)
    partition = FetchPartitionResponse(
        partition=0, records=b"".join((committed, aborted, abort, commit, plain)),
        aborted_transactions=(AbortedTransaction(producer_id=8, first_offset=2),))
    assert [(r.offset, r.value) for r in decode_partition(partition)] == [
        (0, b"1"), (1, b"2"), (5, b"5"), (6, b"5"), (7, b"5")]
    uncommitted = partition.model_copy(update={"aborted_transactions": None})
    assert [r.offset for r in decode_partition(uncommitted)] == [0, 1, 2, 5, 6, 7]


def test_the_sync_client_posts_json_with_the_token_and_raises_refusals() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/broker/v1/write-txn-markers":
            return httpx.Response(403, json={"error_code": 31,
                                             "error_name": "CLUSTER_AUTHORIZATION_FAILED",
                                             "message": "no"})
        if request.url.path == "/broker/v1/status":
            return httpx.Response(200, json={"node_id": 1, "cluster_id": "c",
                                             "image_hash": request.url.params.get("hash")})
        if request.url.path == "/broker/v1/fetch":
            batch = build_batch([(b"k", b"v", 1), (b"k", b"w", 2)], base_offset=10)
            return httpx.Response(200, json={"responses": [{"topic": "orders", "partitions": [
                {"partition": 0, "high_watermark": 12, "records": b64(batch)}]}]})
        return httpx.Response(200, json={"topics": [{"name": "orders", "partitions": [
            {"index": 0, "base_offset": 42}]}]})

    with BrokerClient("http://b:1/", token="secret",
                      transport=httpx.MockTransport(handler)) as client:
        outcome = client.produce_records("orders", 0, 1, [(b"k", b"v", 1)], acks=1)
        assert outcome.base_offset == 42
        part, records = client.fetch_records("orders", 0, 11, max_wait_ms=0)
        assert part.high_watermark == 12 and [r.value for r in records] == [b"w"]
        assert client.status(with_hash=True).image_hash == "true"
        with pytest.raises(BrokerClientError) as refused:
            client.write_txn_markers(WriteTxnMarkersRequest(markers=()))
    assert refused.value.status == 403
    assert refused.value.error is Errors.CLUSTER_AUTHORIZATION_FAILED
    assert all(r.headers["authorization"] == "Bearer secret" for r in seen)
    # A produce goes as a batch frame with its batch raw; a fetch as JSON asking for a frame.
    assert seen[0].headers["content-type"] == MEDIA_TYPE
    sent = decode_frame(seen[0].content, ProduceRequest)
    assert sent.acks == 1 and sent.topics[0].partitions[0].index == 0
    ((header, _),) = iter_batches(sent.topics[0].partitions[0].records)
    assert header.record_count == 1
    assert MEDIA_TYPE in seen[1].headers["accept"]
    assert json.loads(seen[1].content)["topics"][0]["partitions"][0]["fetch_offset"] == 11


def test_a_non_json_error_answer_still_raises_with_its_text() -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(502, text="bad gateway"))
    with BrokerClient("http://b:1", transport=transport) as client, pytest.raises(
            BrokerClientError) as failed:
        client.list_offsets(list_offsets_request("orders", 0, -1))
    assert failed.value.status == 502 and "bad gateway" in str(failed.value)


def test_the_async_client_against_the_app() -> None:
    async def scenario() -> None:
        runtime = FakeRuntime()
        transport = httpx.ASGITransport(app=create_broker_app(runtime))
        async with AsyncBrokerClient("http://broker-0", transport=transport) as client:
            produced = await client.produce_records("orders", 1, 2, [(b"k", b"v", 1)])
            assert produced.error_code == 0 and produced.base_offset == 10
            fetched = await client.fetch(fetch_request("orders", 1, 0, key_range=(0, 9)))
            assert fetched.responses[0].partitions[0].high_watermark == 5
            offsets = await client.list_offsets(list_offsets_request("orders", 1, -2))
            assert offsets.topics[0].partitions[0].offset == 7
            epochs = await client.offsets_for_leader_epoch(OffsetForLeaderEpochRequest(
                topics=(OffsetForLeaderTopic(topic="orders", partitions=(
                    OffsetForLeaderPartition(partition=1, leader_epoch=2),)),)))
            assert epochs.topics[0].partitions[0].end_offset == 9
            ids = await client.init_producer_id(InitProducerIdRequest())
            assert (ids.producer_id, ids.producer_epoch) == (1000, 0)
            markers = await client.write_txn_markers(WriteTxnMarkersRequest(markers=(
                WritableTxnMarker(producer_id=1000, producer_epoch=0, transaction_result=True,
                                  topics=(WritableTxnMarkerTopic(name="orders",
                                                                 partition_indexes=(1,)),)),)))
            assert markers.markers[0].topics[0].partitions[0].error_code == 0
            cut = await client.create_chunks([("orders", 1, (0, 1), 0)])
            assert cut.topics[0].partitions[0].partition_index == 1
            status = await client.status(with_hash=True)
            assert status.image_hash == runtime.follower.image.content_hash()
            with pytest.raises(BrokerClientError) as invalid:
                await client.fetch(fetch_request("orders", 1, 0).model_copy(
                    update={"max_wait_ms": 10**6}))
            assert invalid.value.status == 400
        key_range = runtime.replica_manager.calls[1][1].topics[0].partitions[0].key_range
        assert key_range == (0, 9)
        assert runtime.replica_manager.calls[-1] == ("roll_chunk", ("orders", 1, (0, 1), 0))

    asyncio.run(scenario())
