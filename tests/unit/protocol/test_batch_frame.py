"""The batch frame: layout, round trips without copies, and every refusal with its Kafka error."""

from __future__ import annotations

import json
import struct

import pytest

from chunkraft.error_codes import Errors
from chunkraft.protocol.batch_frame import (
    ACCEPT_FRAME,
    MAGIC,
    MAX_HEADER_BYTES,
    MEDIA_TYPE,
    PREFIX_BYTES,
    FrameError,
    decode_answer,
    decode_frame,
    encode_frame,
    frame_bytes,
    is_frame_type,
)
from chunkraft.protocol.data_plane import (
    FetchPartitionResponse,
    FetchResponse,
    FetchTopicResponse,
    ProducePartitionData,
    ProduceRequest,
    ProduceTopicData,
)


def produce(*records: bytes, acks: int = -1) -> ProduceRequest:
    return ProduceRequest(acks=acks, transactional_id="tx", topics=(
        ProduceTopicData(name="orders", partition_count=len(records), partitions=tuple(
            ProducePartitionData(index=i, records=data) for i, data in enumerate(records))),))


def frame(header: bytes, payload: bytes = b"", *, magic: bytes = MAGIC,
          length: int | None = None) -> bytes:
    return struct.pack(">4sI", magic, len(header) if length is None else length) + header + \
        payload


def refusal(body: bytes) -> FrameError:
    with pytest.raises(FrameError) as refused:
        decode_frame(body, ProduceRequest)
    return refused.value


def test_the_layout_is_magic_length_json_header_then_the_raw_batches() -> None:
    body = frame_bytes(produce(b"first", b"", b"third"))
    assert body[:4] == b"CKB1"
    (length,) = struct.unpack(">I", body[4:8])
    header = json.loads(body[PREFIX_BYTES:PREFIX_BYTES + length])
    assert [p["records"] for p in header["topics"][0]["partitions"]] == [[0, 5], [5, 0], [5, 5]]
    assert header["acks"] == -1 and header["transactional_id"] == "tx"
    assert body[PREFIX_BYTES + length:] == b"firstthird"


def test_encode_hands_out_the_records_themselves_not_copies() -> None:
    first, third = b"a" * 1000, b"b" * 2000
    pieces = encode_frame(produce(first, b"", third))
    assert len(pieces) == 3 and pieces[1] is first and pieces[2] is third


def test_a_produce_round_trips_with_views_of_the_body() -> None:
    request = produce(b"\x00\x01batch", b"", b"x" * 10_000, acks=1)
    body = frame_bytes(request)
    decoded = decode_frame(body, ProduceRequest)
    assert decoded == request
    records = decoded.topics[0].partitions[2].records
    assert isinstance(records, memoryview) and records.obj is body  # a view, not a copy


def test_a_fetch_answer_round_trips() -> None:
    answer = FetchResponse(responses=(FetchTopicResponse(topic="t", partitions=(
        FetchPartitionResponse(partition=0, high_watermark=7, records=b"\xff" * 300),
        FetchPartitionResponse(partition=1, error_code=6))),))
    assert decode_frame(frame_bytes(answer), FetchResponse) == answer


def test_decode_answer_reads_a_frame_or_json_by_content_type() -> None:
    request = produce(b"abc")
    assert decode_answer(frame_bytes(request), MEDIA_TYPE + "; q=1", ProduceRequest) == request
    as_json = ProduceRequest.__pydantic_serializer__.to_json(request)
    assert decode_answer(as_json, "application/json", ProduceRequest) == request


def test_media_types() -> None:
    assert is_frame_type(MEDIA_TYPE) and is_frame_type("Application/Vnd.Chunkraft.Batches ;x=1")
    assert not is_frame_type("application/json") and not is_frame_type(None)
    assert is_frame_type(ACCEPT_FRAME.split(",")[0])


@pytest.mark.parametrize("body", [b"", b"CKB1", b"CKB1\x00\x00\x00"])
def test_a_body_shorter_than_the_prefix_is_invalid(body: bytes) -> None:
    assert refusal(body).error is Errors.INVALID_REQUEST


def test_a_wrong_magic_is_invalid() -> None:
    failure = refusal(frame(b'{"topics":[]}', magic=b"CKB2"))
    assert failure.error is Errors.INVALID_REQUEST and "CKB1" in failure.message


@pytest.mark.parametrize("length", [0, 1, MAX_HEADER_BYTES + 1, 2**32 - 1])
def test_a_header_length_outside_the_limits_is_invalid(length: int) -> None:
    assert refusal(frame(b'{"topics":[]}', length=length)).error is Errors.INVALID_REQUEST


def test_a_header_length_past_the_body_is_invalid() -> None:
    header = b'{"topics":[]}'
    failure = refusal(frame(header, length=len(header) + 1))
    assert failure.error is Errors.INVALID_REQUEST and "past the body" in failure.message


@pytest.mark.parametrize("header", [b"{not json", b'"a string"', b"\xff\xfe{}",
                                    b'{"topics":[], "unknown": 1}', b'{"acks": 1}'])
def test_a_header_that_is_not_a_message_is_invalid(header: bytes) -> None:
    assert refusal(frame(header)).error is Errors.INVALID_REQUEST


@pytest.mark.parametrize("reference", [[0, 4], [3, 1], [4, 0], [2**40, 1]])
def test_a_reference_past_the_payload_is_a_corrupt_message(reference: list[int]) -> None:
    header = json.dumps({"topics": [{"name": "t", "partition_count": 1, "partitions": [
        {"index": 0, "records": reference}]}]}).encode()
    failure = refusal(frame(header, b"abc"))
    assert failure.error is Errors.CORRUPT_MESSAGE and "outside" in failure.message


@pytest.mark.parametrize("records", ["YWJj", [-1, 2], [0], [0, 1, 2], [0, "1"], [0.0, 1],
                                     [True, 1], None])
def test_records_in_a_frame_must_be_an_offset_and_a_length(records: object) -> None:
    header = json.dumps({"topics": [{"name": "t", "partition_count": 1, "partitions": [
        {"index": 0, "records": records}]}]}).encode()
    failure = refusal(frame(header, b"abc"))
    expected = Errors.CORRUPT_MESSAGE if records == [-1, 2] else Errors.INVALID_REQUEST
    assert failure.error is expected


def test_one_bad_reference_refuses_the_whole_frame() -> None:
    good = frame_bytes(produce(b"abc", b"def"))
    # Cut the last payload byte: the first partition is fine, the second points past the end.
    failure = refusal(good[:-1])
    assert failure.error is Errors.CORRUPT_MESSAGE and "partitions.1.records" in failure.message


def test_frame_error_is_a_value_error() -> None:
    assert isinstance(refusal(b""), ValueError)
