"""Properties of the batch frame (chunkraft.protocol.batch_frame): any produce request and any
fetch answer round trip through a frame and through JSON to the same message, and any damage to
a frame is refused with a Kafka error, never decoded into a different message."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from chunkraft.error_codes import Errors
from chunkraft.protocol.batch_frame import PREFIX_BYTES, FrameError, decode_frame, frame_bytes
from chunkraft.protocol.data_plane import (
    AbortedTransaction,
    FetchPartitionResponse,
    FetchResponse,
    FetchTopicResponse,
    ProducePartitionData,
    ProduceRequest,
    ProduceTopicData,
)

SETTINGS = settings(max_examples=200, deadline=None)

names = st.text(min_size=0, max_size=12)  # any text: quotes, backslashes, non-ASCII
records = st.binary(max_size=600)
INT64 = st.integers(-(2**63), 2**63 - 1)

produce_requests = st.builds(
    ProduceRequest,
    transactional_id=st.none() | names,
    acks=st.sampled_from([-1, 0, 1]),
    timeout_ms=st.integers(0, 300_000),
    topics=st.lists(st.builds(
        ProduceTopicData, name=names, partition_count=st.integers(1, 2**31 - 1),
        partitions=st.lists(st.builds(ProducePartitionData, index=st.integers(0, 2**31 - 1),
                                      records=records), max_size=4).map(tuple)),
        max_size=3).map(tuple))

fetch_responses = st.builds(
    FetchResponse,
    throttle_time_ms=st.integers(0, 2**31 - 1),
    responses=st.lists(st.builds(
        FetchTopicResponse, topic=names,
        partitions=st.lists(st.builds(
            FetchPartitionResponse, partition=st.integers(0, 2**31 - 1),
            error_code=st.integers(-1, 200), error_message=st.none() | names,
            high_watermark=INT64, last_stable_offset=INT64,
            aborted_transactions=st.none() | st.lists(st.builds(
                AbortedTransaction, producer_id=INT64, first_offset=INT64),
                max_size=2).map(tuple),
            records=records), max_size=4).map(tuple)),
        max_size=3).map(tuple))


@SETTINGS
@given(produce_requests)
def test_a_produce_request_round_trips_through_a_frame_and_json(
        request: ProduceRequest) -> None:
    body = frame_bytes(request)
    assert decode_frame(body, ProduceRequest) == request
    assert ProduceRequest.model_validate_json(request.model_dump_json()) == request
    # Only the records travel after the header, each once, unencoded.
    total = sum(len(p.records) for t in request.topics for p in t.partitions)
    header_length = int.from_bytes(body[4:PREFIX_BYTES], "big")
    assert len(body) == PREFIX_BYTES + header_length + total


@SETTINGS
@given(fetch_responses)
def test_a_fetch_answer_round_trips_through_a_frame_and_json(response: FetchResponse) -> None:
    assert decode_frame(frame_bytes(response), FetchResponse) == response
    assert FetchResponse.model_validate_json(response.model_dump_json()) == response


@SETTINGS
@given(produce_requests, st.data())
def test_a_cut_frame_is_refused_or_is_the_same_message(request: ProduceRequest,
                                                       data: st.DataObject) -> None:
    body = frame_bytes(request)
    cut = data.draw(st.integers(0, len(body) - 1), label="cut")
    try:
        decoded = decode_frame(body[:cut], ProduceRequest)
    except FrameError as refused:
        assert refused.error in (Errors.INVALID_REQUEST, Errors.CORRUPT_MESSAGE)
        return
    # Only bytes no reference covers (the trailing empty records) may go unnoticed.
    assert decoded == request


@SETTINGS
@given(produce_requests, st.data())
def test_a_flipped_prefix_or_header_byte_never_decodes_silently_wrong(
        request: ProduceRequest, data: st.DataObject) -> None:
    body = bytearray(frame_bytes(request))
    header_end = PREFIX_BYTES + int.from_bytes(body[4:PREFIX_BYTES], "big")
    position = data.draw(st.integers(0, header_end - 1), label="position")
    body[position] ^= data.draw(st.integers(1, 255), label="mask")
    try:
        decoded = decode_frame(bytes(body), ProduceRequest)
    except FrameError as refused:
        assert refused.error in (Errors.INVALID_REQUEST, Errors.CORRUPT_MESSAGE)
        return
    # A flip inside a name or a number may still be a valid message: then it is a different
    # one, but its records are always slices of the payload.
    payload = bytes(body[header_end:])
    for topic in decoded.topics:
        for partition in topic.partitions:
            assert bytes(partition.records) in payload or not partition.records
