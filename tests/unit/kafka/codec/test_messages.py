"""kafka/codec: what a malformed frame gets (a KafkaDecodeError naming the byte), tagged fields,
and the frames' headers."""

from __future__ import annotations

import struct

import pytest

from chunkraft.kafka.codec.codegen import uvarint
from chunkraft.kafka.codec.messages import (
    KafkaDecodeError,
    decode,
    decode_request_header,
    encode,
    encode_response_header,
    request_header_version,
    response_header_version,
)


def test_missing_keys_take_the_fields_defaults_and_absent_versions_are_filled_in() -> None:
    wire = encode("MetadataResponse", 7, {"topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "leader_id": 1}]}]})
    message = decode("MetadataResponse", 7, wire)
    assert message["controller_id"] == -1 and message["cluster_id"] is None
    partition = message["topics"][0]["partitions"][0]
    assert partition["leader_epoch"] == -1 and partition["replica_nodes"] == []
    assert message["topics"][0]["topic_id"].int == 0  # v10+ only: the default


def test_truncated_trailing_and_bad_frames_are_refused_with_their_position() -> None:
    wire = encode("CreateTopicsRequest", 5, {"topics": [{"name": "orders", "num_partitions": 3,
                                                         "replication_factor": 3}]})
    with pytest.raises(KafkaDecodeError, match="at byte"):
        decode("CreateTopicsRequest", 5, wire[:-3])
    with pytest.raises(KafkaDecodeError, match="1 bytes left"):
        decode("CreateTopicsRequest", 5, wire + b"\x00")
    bad_name = b"\x02" + b"\x03\xff\xfe"  # one topic, a 2-byte name that is not UTF-8
    with pytest.raises(KafkaDecodeError, match="not UTF-8"):
        decode("CreateTopicsRequest", 5, bad_name + wire[len(bad_name):])
    null_name = struct.pack(">ih", 1, -1)  # v4: a non-nullable name sent as null
    with pytest.raises(KafkaDecodeError, match="a null Name"):
        decode("CreateTopicsRequest", 4, null_name + b"\x00" * 20)
    with pytest.raises(KafkaDecodeError, match="more items than bytes"):
        decode("CreateTopicsRequest", 4, struct.pack(">i", 2**31 - 1))
    with pytest.raises(KafkaDecodeError, match="varint"):
        decode("CreateTopicsRequest", 5, b"\xff" * 11)


def test_tagged_fields_are_written_only_when_set_and_unknown_tags_are_skipped() -> None:
    plain = encode("ApiVersionsResponse", 3, {"error_code": 0, "api_keys": []})
    tagged = encode("ApiVersionsResponse", 3, {"error_code": 0, "api_keys": [],
                                               "finalized_features_epoch": 7})
    assert len(tagged) > len(plain)
    assert decode("ApiVersionsResponse", 3, tagged)["finalized_features_epoch"] == 7
    assert decode("ApiVersionsResponse", 3, plain)["finalized_features_epoch"] == -1
    # A tag no definition knows (a newer client's): skipped, the rest is read.
    unknown = plain[:-1] + uvarint(1) + uvarint(99) + uvarint(2) + b"zz"
    assert decode("ApiVersionsResponse", 3, unknown)["error_code"] == 0


def test_headers_follow_the_flexible_versions_and_api_versions_answers_use_v0() -> None:
    assert request_header_version(3, 8) == 1 and request_header_version(3, 9) == 2
    assert response_header_version(3, 9) == 1 and response_header_version(3, 8) == 0
    assert response_header_version(18, 3) == 0  # ApiVersions, whatever its version
    assert encode_response_header(3, 12, 42) == struct.pack(">i", 42) + b"\x00"
    frame = encode("RequestHeader", 2, {"request_api_key": 3, "request_api_version": 12,
                                        "correlation_id": 9, "client_id": "kcat"})
    header = decode_request_header(frame + b"body")
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
        3, 12, 9, "kcat")
    assert frame[header.size:] == b"" and (frame + b"body")[header.size:] == b"body"
    with pytest.raises(KafkaDecodeError, match="shorter than its header"):
        decode_request_header(b"\x00\x03")
