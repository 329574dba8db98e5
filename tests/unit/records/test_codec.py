"""The binary codec (chunkraft.records.codec): known bytes, every decode error and its position."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from chunkraft.errors import RecordDecodeError, RecordEncodeError
from chunkraft.records import (
    BrokerEndpoint,
    BrokerRegistrationChangeRecord,
    ChunkChangeRecord,
    ChunkRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    PriorPartitionEpoch,
    RegisterBrokerRecord,
    TopicRecord,
    decode_record,
    decode_record_from,
    decode_records,
    encode_record,
    latest_version,
    record_version_of,
)
from chunkraft.records.codegen import read_uvarint, uvarint

TOPIC_ID = uuid.UUID(bytes=bytes(range(16)))
DIR_A = uuid.UUID(bytes=bytes(range(16, 32)))
DIR_B = uuid.UUID(bytes=bytes(range(32, 48)))

# TopicRecord v0, written out by hand from docs/records.md:
# frame (frame version 1, apiKey 2, version 0), Name as a compact string (length + 1 = 4),
# TopicId as 16 raw bytes, then the tagged-field section (count 0).
TOPIC = TopicRecord(name="foo", topic_id=TOPIC_ID)
TOPIC_BYTES = bytes.fromhex(
    "01" "02" "00"  # frame
    "04" "666f6f"  # Name "foo"
    "000102030405060708090a0b0c0d0e0f"  # TopicId
    "00"  # no tagged fields
)

# ChunkChangeRecord v0 (apiKey 29). Untagged fields in declaration order: PartitionId, TopicId,
# StartOffset, Epoch (one run of fixed-width fields); then the tagged fields that differ from
# their defaults, by tag: Replicas (tag 0) and Isr (tag 2), each a compact int32 array.
CHUNK_CHANGE = ChunkChangeRecord(
    partition_id=3, topic_id=TOPIC_ID, start_offset=100, replicas=(1, 2), isr=(1, 2), epoch=1
)
CHUNK_CHANGE_BYTES = bytes.fromhex(
    "01" "1d" "00"  # frame: apiKey 29, version 0
    "00000003"  # PartitionId
    "000102030405060708090a0b0c0d0e0f"  # TopicId
    "0000000000000064"  # StartOffset 100
    "00000001"  # Epoch 1
    "02"  # two tagged fields
    "00" "09" "03" "00000001" "00000002"  # tag 0 (Replicas), 9 bytes: [1, 2]
    "02" "09" "03" "00000001" "00000002"  # tag 2 (Isr), 9 bytes: [1, 2]
)


def _decode_error(data: bytes) -> RecordDecodeError:
    with pytest.raises(RecordDecodeError) as info:
        decode_record(data)
    return info.value


# ---------------------------------------------------------------- known bytes


def test_topic_record_known_bytes() -> None:
    assert encode_record(TOPIC) == TOPIC_BYTES
    assert decode_record(TOPIC_BYTES) == TOPIC


def test_chunk_change_record_known_bytes() -> None:
    assert encode_record(CHUNK_CHANGE) == CHUNK_CHANGE_BYTES
    assert decode_record(CHUNK_CHANGE_BYTES) == CHUNK_CHANGE


def test_chunk_record_known_bytes() -> None:
    record = ChunkRecord(
        partition_id=0,
        topic_id=TOPIC_ID,
        start_offset=0,
        start_timestamp=5,
        stop_offset=9,
        end_offset=10,
        chunk_epoch=2,
        replicas=(7,),
        isr=(7,),
        epoch=2,
    )
    expected = bytes.fromhex(
        "01" "1c" "00"
        "00000000" "000102030405060708090a0b0c0d0e0f"
        "0000000000000000" "0000000000000005" "0000000000000009" "000000000000000a"
        "00000002"  # ChunkEpoch
        "02" "00000007"  # Replicas [7]
        "01"  # Directories []
        "02" "00000007"  # Isr [7]
        "01" "01"  # RemovingReplicas [], AddingReplicas []
        "00000002"  # Epoch
        "00"
    )
    assert encode_record(record) == expected
    assert decode_record(expected) == record


def test_null_and_empty_are_different_on_the_wire() -> None:
    null = ChunkChangeRecord(topic_id=TOPIC_ID, start_offset=0, directories=None)
    empty = null._replace(directories=())
    one = null._replace(directories=(DIR_A,))
    assert encode_record(null).endswith(b"\xff\xff\xff\xff\x00")  # epoch -1, no tagged field
    # An empty array differs from the null default: tag 1, one byte, length + 1 = 1.
    assert encode_record(empty).endswith(b"\x01" + b"\x01\x01\x01")
    assert encode_record(one).endswith(b"\x01\x01\x11\x02" + DIR_A.bytes)
    assert decode_record(encode_record(null)).directories is None
    assert decode_record(encode_record(empty)).directories == ()
    assert decode_record(encode_record(one)).directories == (DIR_A,)


def test_nullable_untagged_string() -> None:
    with_rack = RegisterBrokerRecord(broker_id=1, rack="r1")
    without = with_rack._replace(rack=None)
    assert decode_record(encode_record(with_rack)).rack == "r1"
    assert decode_record(encode_record(without)).rack is None
    assert len(encode_record(with_rack)) == len(encode_record(without)) + 2


def test_non_ascii_strings_are_utf8() -> None:
    record = TopicRecord(name="tópico-🦀", topic_id=TOPIC_ID)
    data = encode_record(record)
    raw = "tópico-🦀".encode()
    assert data[3:4 + len(raw)] == uvarint(len(raw) + 1) + raw
    assert decode_record(data) == record


def test_long_arrays_use_multi_byte_lengths() -> None:
    replicas = tuple(range(200))
    record = ChunkChangeRecord(topic_id=TOPIC_ID, start_offset=0, replicas=replicas, isr=replicas)
    data = encode_record(record)
    assert uvarint(201) in data
    assert decode_record(data) == record


def test_struct_arrays_round_trip() -> None:
    record = RegisterBrokerRecord(
        broker_id=1,
        incarnation_id=TOPIC_ID,
        broker_epoch=10,
        end_points=(
            BrokerEndpoint("PLAINTEXT", "h1", 9092, 0),
            BrokerEndpoint("SSL", "h1", 65535, 1),
        ),
        log_dirs=(DIR_A, DIR_B),
    )
    assert decode_record(encode_record(record)) == record
    partition = PartitionRecord(
        partition_id=2,
        topic_id=TOPIC_ID,
        replicas=(1,),
        isr=(1,),
        leader=1,
        prior_partition_epochs=(PriorPartitionEpoch(0, 4), PriorPartitionEpoch(1, 7)),
    )
    assert decode_record(encode_record(partition)) == partition


def test_record_without_fields() -> None:
    assert encode_record(NoOpRecord()) == b"\x01\x14\x00\x00"
    assert decode_record(b"\x01\x14\x00\x00") == NoOpRecord()


def test_decode_record_from_reads_one_record_inside_a_larger_buffer() -> None:
    data = b"xx" + TOPIC_BYTES + CHUNK_CHANGE_BYTES
    assert decode_record_from(data, 2, 2 + len(TOPIC_BYTES)) == TOPIC
    assert decode_record_from(memoryview(data), 2 + len(TOPIC_BYTES), len(data)) == CHUNK_CHANGE
    # Ending the slice one byte early must not read the byte beyond ``end``.
    with pytest.raises(RecordDecodeError):
        decode_record_from(data, 2, 1 + len(TOPIC_BYTES))


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview])
def test_bytes_like_inputs(wrap: Any) -> None:
    record = PartitionRecord(
        partition_id=0, topic_id=TOPIC_ID, replicas=(1, 2), directories=(DIR_A, DIR_B)
    )
    assert decode_record(wrap(encode_record(record))) == record


def test_uuid_cache_never_keeps_a_view_of_the_input() -> None:
    fresh = uuid.uuid4()
    record = ChunkChangeRecord(topic_id=TOPIC_ID, start_offset=0, directories=(fresh,))
    buffer = bytearray(encode_record(record))
    view = memoryview(buffer)
    assert decode_record(view).directories == (fresh,)
    view.release()
    buffer.extend(b"x")  # raises BufferError if a view of ``buffer`` were still alive


def test_decode_records_decodes_each_blob_in_order() -> None:
    blobs = [TOPIC_BYTES, CHUNK_CHANGE_BYTES, encode_record(NoOpRecord()), TOPIC_BYTES]
    assert decode_records(blobs) == [TOPIC, CHUNK_CHANGE, NoOpRecord(), TOPIC]
    assert decode_records([]) == []
    # A record whose frame the fast path does not know yet is decoded by the careful path.
    old = encode_record(PartitionRecord(topic_id=TOPIC_ID), 0)
    assert decode_records([old]) == [PartitionRecord(topic_id=TOPIC_ID)]


@pytest.mark.parametrize(
    ("bad", "position"),
    [
        (TOPIC_BYTES[:-1], len(TOPIC_BYTES) - 1),  # truncated
        (TOPIC_BYTES + b"\x00", len(TOPIC_BYTES)),  # trailing byte
        (b"\x01\x63\x00\x00", 1),  # unknown apiKey
        (b"\x01", 1),  # frame only
        (b"", 0),
    ],
)
def test_decode_records_has_the_same_checks(bad: bytes, position: int) -> None:
    with pytest.raises(RecordDecodeError) as info:
        decode_records([TOPIC_BYTES, bad, TOPIC_BYTES])
    assert info.value.position == position


def test_record_version_of() -> None:
    assert record_version_of(TOPIC_BYTES) == (2, 0)
    assert record_version_of(encode_record(PartitionRecord(topic_id=TOPIC_ID), 1)) == (3, 1)
    with pytest.raises(RecordDecodeError):
        record_version_of(b"\x01\x02")


def test_latest_version_is_the_highest_declared() -> None:
    assert latest_version(PartitionRecord) == 3
    assert latest_version(TopicRecord) == 0
    assert encode_record(PartitionRecord(topic_id=TOPIC_ID))[2] == 3


# ---------------------------------------------------------------- versions


def test_older_versions_omit_newer_fields() -> None:
    record = PartitionRecord(partition_id=1, topic_id=TOPIC_ID, replicas=(1,), isr=(1,), leader=1)
    sizes = {v: len(encode_record(record, v)) for v in range(4)}
    assert sizes[0] == sizes[1] - 1  # v1 adds Directories, an untagged array (empty: one byte)
    assert sizes[1] == sizes[2] == sizes[3]  # v2 and v3 add tagged fields, left at defaults
    for version in range(4):
        data = encode_record(record, version)
        assert data[2] == version
        assert decode_record(data) == record
    # The same record with a v3 field set is only writable at v3.
    chunked = record._replace(start_offset=50)
    assert decode_record(encode_record(chunked, 3)) == chunked
    for version in range(3):
        with pytest.raises(RecordEncodeError, match="start_offset is not in version"):
            encode_record(chunked, version)


def test_tagged_field_added_in_a_later_version() -> None:
    record = BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=3, fenced=1)
    v0 = encode_record(record, 0)
    assert decode_record(v0) == record
    with pytest.raises(RecordEncodeError):
        encode_record(record._replace(in_controlled_shutdown=1), 0)
    assert decode_record(encode_record(record._replace(in_controlled_shutdown=1), 1)) == (
        record._replace(in_controlled_shutdown=1)
    )


@pytest.mark.parametrize(
    ("record", "version"),
    [
        (PartitionRecord(topic_id=TOPIC_ID, directories=(DIR_A,)), 0),
        (PartitionRecord(topic_id=TOPIC_ID, directories=None), 0),  # type: ignore[arg-type]
        (PartitionRecord(topic_id=TOPIC_ID, eligible_leader_replicas=()), 1),
        (RegisterBrokerRecord(is_migrating_zk_broker=True), 1),
    ],
)
def test_a_field_not_in_the_version_must_keep_its_default(record: Any, version: int) -> None:
    with pytest.raises(RecordEncodeError, match="not in version"):
        encode_record(record, version)


def test_unknown_version_to_encode() -> None:
    with pytest.raises(RecordEncodeError, match="no version 4"):
        encode_record(PartitionRecord(), 4)
    with pytest.raises(RecordEncodeError, match="not a metadata record"):
        encode_record(BrokerEndpoint())


# ---------------------------------------------------------------- encode errors


@pytest.mark.parametrize(
    "record",
    [
        TopicRecord(name=5, topic_id=TOPIC_ID),  # type: ignore[arg-type]
        TopicRecord(name="t", topic_id="not a uuid"),  # type: ignore[arg-type]
        ChunkRecord(partition_id="0"),  # type: ignore[arg-type]
        ChunkRecord(start_offset=1.5),  # type: ignore[arg-type]
        ChunkRecord(replicas=("1",)),  # type: ignore[arg-type]
        ChunkRecord(replicas=None),  # type: ignore[arg-type]
        ChunkChangeRecord(isr=None),  # type: ignore[arg-type]
        ChunkChangeRecord(directories=("x",)),  # type: ignore[arg-type]
        TopicRecord(name=None),  # type: ignore[arg-type]
        RegisterBrokerRecord(end_points=(BrokerEndpoint(port="x"),)),  # type: ignore[arg-type]
        RegisterBrokerRecord(end_points=((1, 2),)),  # type: ignore[arg-type]
    ],
)
def test_wrong_types_fail_to_encode(record: Any) -> None:
    with pytest.raises(RecordEncodeError):
        encode_record(record)


@pytest.mark.parametrize(
    "record",
    [
        ChunkRecord(partition_id=2**31),
        ChunkRecord(partition_id=-(2**31) - 1),
        ChunkRecord(start_offset=2**63),
        ChunkRecord(replicas=(2**31,)),
        PartitionRecord(leader_recovery_state=128),
        PartitionChangeRecord(leader_recovery_state=-129),
        RegisterBrokerRecord(end_points=(BrokerEndpoint(port=65536),)),
        RegisterBrokerRecord(end_points=(BrokerEndpoint(port=-1),)),
        RegisterBrokerRecord(end_points=(BrokerEndpoint(security_protocol=2**15),)),
        ChunkChangeRecord(replicas=(*range(126), 2**31)),
        ChunkChangeRecord(replicas=(*range(200), -(2**31) - 1)),
    ],
)
def test_out_of_range_integers_fail_to_encode(record: Any) -> None:
    with pytest.raises(RecordEncodeError):
        encode_record(record)


def test_integer_limits_encode() -> None:
    record = ChunkRecord(
        partition_id=2**31 - 1, topic_id=TOPIC_ID, start_offset=-(2**63), end_offset=2**63 - 1
    )
    assert decode_record(encode_record(record)) == record
    broker = RegisterBrokerRecord(end_points=(BrokerEndpoint(port=65535, security_protocol=-1),))
    assert decode_record(encode_record(broker)) == broker


# ---------------------------------------------------------------- decode errors and positions


def test_unknown_frame_version() -> None:
    error = _decode_error(b"\x02" + TOPIC_BYTES[1:])
    assert error.position == 0
    assert "frame version 2" in str(error)
    assert _decode_error(b"\x00\x02\x00").position == 0


def test_unknown_api_key() -> None:
    error = _decode_error(b"\x01\x63\x00\x00")
    assert error.position == 1
    assert "apiKey 99" in str(error)
    # No record of chunkraft has apiKey 8.
    assert _decode_error(b"\x01\x08\x00\x00").position == 1
    # A two-byte varint apiKey is out of the range of any declared record.
    assert _decode_error(b"\x01\x80\x01\x00\x00").position == 1


def test_unknown_version() -> None:
    error = _decode_error(b"\x01\x02\x01" + TOPIC_BYTES[3:])
    assert error.position == 2
    assert "TopicRecord version 1" in str(error)
    assert _decode_error(b"\x01\x03\x04\x00").position == 2
    assert _decode_error(b"\x01\x03\x80\x00").position == 2


def _item_starts_topic() -> list[int]:
    # Where each item of TOPIC_BYTES begins: 0 frame, 1 apiKey, 2 version, 3 name length,
    # 4 name bytes, 7 topic id, 23 tagged-field count.
    starts = []
    for end in range(len(TOPIC_BYTES)):
        starts.append(max(s for s in (0, 1, 2, 3, 4, 7, 23) if s <= end))
    return starts


def test_truncated_topic_record_names_the_item_that_does_not_fit() -> None:
    for length, start in enumerate(_item_starts_topic()):
        error = _decode_error(TOPIC_BYTES[:length])
        assert error.position == start, (length, str(error))


def test_truncated_chunk_change_record_names_the_item_that_does_not_fit() -> None:
    # 0-2 frame; 3 the fixed-width run (32 bytes); 35 tag count; 36 tag, 37 size, 38 value;
    # 47 tag, 48 size, 49 value; 58 is the end.
    starts = (0, 1, 2, 3, 35, 36, 37, 38, 47, 48, 49)
    assert len(CHUNK_CHANGE_BYTES) == 58
    for length in range(len(CHUNK_CHANGE_BYTES)):
        error = _decode_error(CHUNK_CHANGE_BYTES[:length])
        assert error.position == max(s for s in starts if s <= length), (length, str(error))


@pytest.mark.parametrize(
    "record",
    [
        RegisterBrokerRecord(
            broker_id=1,
            incarnation_id=TOPIC_ID,
            end_points=(BrokerEndpoint("PLAINTEXT", "höst", 9092, 0),),
            rack="r",
            log_dirs=(DIR_A,),
        ),
        PartitionRecord(
            topic_id=TOPIC_ID,
            replicas=(1, 2),
            directories=(DIR_A, DIR_B),
            eligible_leader_replicas=(1,),
            start_offset=4,
            prior_partition_epochs=(PriorPartitionEpoch(0, 1),),
        ),
        PartitionChangeRecord(topic_id=TOPIC_ID, isr=(1,), leader=1, directories=(DIR_A,)),
        CHUNK_CHANGE,
    ],
)
def test_every_strict_prefix_is_a_decode_error(record: Any) -> None:
    data = encode_record(record)
    for length in range(len(data)):
        with pytest.raises(RecordDecodeError) as info:
            decode_record(data[:length])
        assert 0 <= info.value.position <= length


def test_trailing_bytes() -> None:
    error = _decode_error(TOPIC_BYTES + b"\x00")
    assert error.position == len(TOPIC_BYTES)
    assert "1 trailing bytes" in str(error)
    error = _decode_error(CHUNK_CHANGE_BYTES + b"abc")
    assert error.position == len(CHUNK_CHANGE_BYTES)
    # The slow path (a frame that needs the generic reader) reports the same.
    error = _decode_error(encode_record(NoOpRecord()) + b"\x00\x00")
    assert error.position == 4


def test_null_in_a_non_nullable_field() -> None:
    # Name's length byte 0 means null; Name is not nullable.
    error = _decode_error(TOPIC_BYTES[:3] + b"\x00" + TOPIC_BYTES[7:])
    assert error.position == 3
    assert "null" in str(error)
    # ChunkRecord's Replicas array (after 59 bytes of frame and fixed fields) set to null.
    chunk = encode_record(ChunkRecord(topic_id=TOPIC_ID, replicas=(1,)))
    assert chunk[59] == 2
    error = _decode_error(chunk[:59] + b"\x00" + chunk[64:])
    assert error.position == 59


def test_nullable_field_reads_null() -> None:
    null_isr = bytearray(encode_record(PartitionChangeRecord(topic_id=TOPIC_ID, isr=())))
    # The tagged Isr field holds one byte: 1 (empty). 0 instead means null, the default.
    assert null_isr[-3:] == b"\x00\x01\x01"
    null_isr[-1] = 0
    assert decode_record(bytes(null_isr)).isr is None


def test_tagged_field_size_mismatch() -> None:
    # Replicas (tag 0) declares 10 bytes but its value takes 9: the value ends at byte 47.
    data = CHUNK_CHANGE_BYTES[:37] + b"\x0a" + CHUNK_CHANGE_BYTES[38:47] + b"\x00"
    data += CHUNK_CHANGE_BYTES[47:]
    error = _decode_error(data)
    assert error.position == 47
    assert "Replicas" in str(error) or "replicas" in str(error)
    # Declaring 8 bytes: the value still takes 9 and ends past its field.
    data = CHUNK_CHANGE_BYTES[:37] + b"\x08" + CHUNK_CHANGE_BYTES[38:]
    assert _decode_error(data).position == 47
    # A fixed-width tagged field (PartitionRecord's LeaderRecoveryState, int8) with size 2.
    record = encode_record(PartitionRecord(topic_id=TOPIC_ID, leader_recovery_state=1))
    tagged = b"\x00\x01\x01"
    assert record.endswith(b"\x01" + tagged)
    error = _decode_error(record[: -len(tagged)] + b"\x00\x02\x01\x00")
    assert error.position == len(record)


def test_tagged_field_running_past_the_end() -> None:
    data = CHUNK_CHANGE_BYTES[:48] + b"\x7f" + CHUNK_CHANGE_BYTES[49:]
    error = _decode_error(data)
    assert error.position == 49
    assert "runs past the end" in str(error)


def test_unknown_tagged_fields_are_skipped() -> None:
    # TopicRecord has no tagged fields: tag 7 with 3 bytes is skipped.
    data = TOPIC_BYTES[:-1] + b"\x01" + b"\x07\x03abc"
    assert decode_record(data) == TOPIC
    # After ChunkChangeRecord's known tags 0 and 2: unknown tag 5 and a two-byte tag 300.
    extra = b"\x05\x02zz" + uvarint(300) + b"\x01q"
    data = CHUNK_CHANGE_BYTES[:35] + b"\x04" + CHUNK_CHANGE_BYTES[36:] + extra
    assert decode_record(data) == CHUNK_CHANGE


def test_tagged_fields_out_of_order() -> None:
    # Swap the two tagged fields: tag 2 then tag 0; the error names the second tag's byte.
    data = CHUNK_CHANGE_BYTES[:36] + CHUNK_CHANGE_BYTES[47:] + CHUNK_CHANGE_BYTES[36:47]
    error = _decode_error(data)
    assert error.position == 47
    assert "out of order" in str(error)
    # The same tag twice.
    data = CHUNK_CHANGE_BYTES[:47] + CHUNK_CHANGE_BYTES[36:47]
    assert _decode_error(data).position == 47


def test_bad_utf8() -> None:
    error = _decode_error(TOPIC_BYTES[:4] + b"\xff\xfe\xfd" + TOPIC_BYTES[7:])
    assert "UTF-8" in str(error)


def test_array_longer_than_the_input() -> None:
    # Directories of ChunkRecord (after the 1-item Replicas) claims 2 uuids but holds 1.
    record = ChunkRecord(topic_id=TOPIC_ID, replicas=(1,), directories=(DIR_A,))
    data = encode_record(record)
    at = data.index(b"\x02" + DIR_A.bytes)
    error = _decode_error(data[:at] + b"\x03" + data[at + 1 :])
    assert error.position == at + 1
    assert "runs past the end" in str(error)


def test_huge_lengths_are_decode_errors() -> None:
    huge = uvarint(2**62)
    # A string, an int array, a uuid array and a tagged-field count that claim far too much.
    cases = [
        TOPIC_BYTES[:3] + huge + TOPIC_BYTES[4:],
        encode_record(ChunkRecord())[:59] + huge + b"\x00" * 20,
        TOPIC_BYTES[:-1] + huge + b"\x00\x00",
    ]
    for data in cases:
        _decode_error(data)
    # A varint longer than 10 bytes.
    error = _decode_error(TOPIC_BYTES[:3] + b"\xff" * 11)
    assert error.position == 3


def test_varints() -> None:
    for value in (0, 1, 127, 128, 300, 2**32, 2**63 - 1):
        encoded = uvarint(value)
        assert read_uvarint(encoded + b"tail", 0) == (value, len(encoded))
    assert uvarint(300) == b"\xac\x02"
    with pytest.raises(RecordDecodeError) as info:
        read_uvarint(b"\x00\x80", 1)
    assert info.value.position == 1
