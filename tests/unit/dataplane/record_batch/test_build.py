"""Building v2 batches (``record_batch.build``): Kafka's byte layout, control batches, speed."""

from __future__ import annotations

import struct
import time

import pytest
from crc32c import crc32c

from chunkraft.dataplane.record_batch import (
    BATCH_HEADER_SIZE,
    ControlType,
    ProducerRecord,
    Record,
    build_batch,
    build_control_batch,
    control_type,
    decode_records,
    parse_header,
    validate_batch,
)
from tests.unit.dataplane.record_batch.batches import (
    SARAMA_UNCOMPRESSED,
    small_batch,
)


def test_build_batch_matches_sarama_bytes() -> None:
    built = build_batch(
        [
            ProducerRecord(
                b"\x01\x02\x03\x04", b"\x05\x06\x07", 1479847795005, (("\x08\t\n", b"\x0b\x0c"),)
            )
        ],
        producer_id=0,
        producer_epoch=0,
        base_sequence=0,
        partition_leader_epoch=0,
    )
    # Kafka's builder takes the base timestamp from the first record (Sarama's test sets it 5 ms
    # earlier and max 0), so set those two fields as Sarama did and recompute the CRC: every other
    # byte, the records section and the CRC algorithm and range included, must then agree.
    patched = bytearray(built)
    struct.pack_into(">qq", patched, 27, 1479847795000, 0)
    patched[61:] = SARAMA_UNCOMPRESSED[61:]  # record timestamp delta becomes 5 (Sarama's base)
    struct.pack_into(">I", patched, 17, crc32c(bytes(patched[21:])))
    assert bytes(patched) == SARAMA_UNCOMPRESSED
    # and the records section we built differs from Sarama's only by the timestamp delta varint
    assert built[61:] == SARAMA_UNCOMPRESSED[61:63] + b"\x00" + SARAMA_UNCOMPRESSED[64:]


def test_field_positions() -> None:
    data = build_batch(
        [(b"k", b"v", 1_000), (None, None, 999), (b"", b"", 1_234)],
        base_offset=0x0102030405060708,
        producer_id=77,
        producer_epoch=3,
        base_sequence=11,
        transactional=True,
        partition_leader_epoch=9,
    )
    assert BATCH_HEADER_SIZE == 61
    assert struct.unpack_from(">q", data, 0)[0] == 0x0102030405060708
    assert struct.unpack_from(">i", data, 8)[0] == len(data) - 12
    assert struct.unpack_from(">i", data, 12)[0] == 9
    assert data[16] == 2
    assert struct.unpack_from(">I", data, 17)[0] == crc32c(data[21:])
    header = parse_header(data)
    assert header.attributes == 0x10
    assert header.last_offset_delta == 2
    assert header.base_timestamp == 1_000  # the first record's, as Kafka
    assert header.max_timestamp == 1_234
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (77, 3, 11)
    assert header.record_count == 3
    assert header.is_transactional and not header.is_control and not header.is_log_append_time
    assert header.last_offset == 0x0102030405060708 + 2
    assert header.next_offset == header.last_offset + 1
    assert header.size_in_bytes == len(data)
    assert header.last_sequence == 13
    # second record: null key and value are varint -1 (0x01); timestamp delta -1 (0x01)
    assert decode_records(data)[1] == Record(0x0102030405060708 + 1, 999, None, None)


def test_control_batch_layout() -> None:
    data = build_control_batch(
        False,
        producer_id=5,
        producer_epoch=2,
        coordinator_epoch=7,
        base_offset=40,
        timestamp_ms=123,
    )
    header = validate_batch(data, deep=True)
    assert header.attributes == 0x30  # transactional + control
    assert header.base_sequence == -1
    assert header.record_count == 1
    assert (header.producer_id, header.producer_epoch) == (5, 2)
    [record] = decode_records(data)
    # Kafka's ControlRecordType key (version 0, type) and EndTransactionMarker value
    # (version 0, coordinator epoch)
    assert record == Record(40, 123, b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x07")
    assert control_type(data) is ControlType.ABORT
    commit = build_control_batch(True, producer_id=5, producer_epoch=2, timestamp_ms=1)
    assert control_type(commit) is ControlType.COMMIT
    assert control_type(small_batch()) is None


def test_build_refuses_empty_and_transactional_without_producer() -> None:
    with pytest.raises(ValueError):
        build_batch([])
    with pytest.raises(ValueError):
        build_batch([(b"k", b"v", 1)], transactional=True)


def test_large_varints_and_headers_round_trip() -> None:
    value = b"x" * 70_000  # a three-byte length varint
    records = [
        ProducerRecord(None, value, -5),
        ProducerRecord(b"k" * 200, None, 2**40, (("h" * 300, None), ("é", b""))),
    ]
    data = build_batch(records, base_offset=2**50)
    validate_batch(data, deep=True)
    assert decode_records(data) == [
        Record(2**50, -5, None, value),
        Record(2**50 + 1, 2**40, b"k" * 200, None, (("h" * 300, None), ("é", b""))),
    ]


def test_build_and_parse_100_records_of_1kib_is_fast() -> None:
    records = [(b"key-%d" % i, bytes(1024), 1_700_000_000_000 + i) for i in range(100)]
    build_batch(records)
    best = float("inf")
    for _ in range(20):
        start = time.perf_counter()
        data = build_batch(records)
        validate_batch(data)
        decode_records(data)
        best = min(best, time.perf_counter() - start)
    # ~0.3 ms on a laptop; the bound leaves room for a busy shared CI machine.
    assert best < 0.005
