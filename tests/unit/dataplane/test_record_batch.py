"""The v2 record batch: Kafka's byte layout, validation, rewriting, filtering and decoding."""

from __future__ import annotations

import struct
import time

import pytest
from crc32c import crc32c

from chunkraft.dataplane.murmur2 import positive_hash
from chunkraft.dataplane.record_batch import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    ControlType,
    CorruptBatchError,
    ProducerRecord,
    Record,
    UnsupportedCompressionError,
    build_batch,
    build_control_batch,
    control_type,
    decode_records,
    filter_by_key_hash,
    iter_batches,
    parse_header,
    rewrite_base,
    valid_prefix_length,
    validate_batch,
    without_records,
)
from chunkraft.errors import LogFileError

# IBM/sarama record_test.go, recordBatchTestCases "uncompressed record": a v2 batch Sarama (tested
# against real Kafka brokers) encodes, CRC-32C included. Base timestamp 1479847795000 ms, max
# timestamp 0 (Sarama's test leaves it unset), producer id/epoch/sequence 0, one record with
# timestamp delta 5, key 01020304, value 050607, one header (080910 -> 0b0c).
# fmt: off
SARAMA_UNCOMPRESSED = bytes([
    0, 0, 0, 0, 0, 0, 0, 0,  # base offset
    0, 0, 0, 70,  # batch length
    0, 0, 0, 0,  # partition leader epoch
    2,  # magic
    84, 121, 97, 253,  # CRC
    0, 0,  # attributes
    0, 0, 0, 0,  # last offset delta
    0, 0, 1, 88, 141, 205, 89, 56,  # base timestamp
    0, 0, 0, 0, 0, 0, 0, 0,  # max timestamp
    0, 0, 0, 0, 0, 0, 0, 0,  # producer id
    0, 0,  # producer epoch
    0, 0, 0, 0,  # base sequence
    0, 0, 0, 1,  # record count
    40, 0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7, 2, 6, 8, 9, 10, 4, 11, 12,  # the record
])
# fmt: on
# Sarama's "empty record" and "control batch" cases: header-only batches.
SARAMA_EMPTY = bytes(8) + bytes([0, 0, 0, 49]) + bytes(4) + bytes([2, 89, 95, 183, 221]) + bytes(40)
SARAMA_EMPTY_CONTROL = (
    bytes(8) + bytes([0, 0, 0, 49]) + bytes(4) + bytes([2, 81, 46, 67, 217, 0, 32]) + bytes(38)
)


def _batch(n: int = 3, **kwargs: int | bool) -> bytes:
    return build_batch(
        [(b"k%d" % i, b"v%d" % i, 1_000 + i) for i in range(n)],
        **kwargs,  # type: ignore[arg-type]
    )


# --------------------------------------------------------------------------- Kafka's layout


def test_sarama_uncompressed_batch_is_read_as_kafka_wrote_it() -> None:
    header = validate_batch(SARAMA_UNCOMPRESSED, deep=True)
    assert header == BatchHeader(
        base_offset=0,
        batch_length=70,
        partition_leader_epoch=0,
        magic=2,
        crc=0x547961FD,
        attributes=0,
        last_offset_delta=0,
        base_timestamp=1479847795000,
        max_timestamp=0,
        producer_id=0,
        producer_epoch=0,
        base_sequence=0,
        record_count=1,
    )
    assert decode_records(SARAMA_UNCOMPRESSED) == [
        Record(0, 1479847795005, b"\x01\x02\x03\x04", b"\x05\x06\x07", (("\x08\t\n", b"\x0b\x0c"),))
    ]


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


def test_header_only_batches_from_sarama_validate() -> None:
    assert validate_batch(SARAMA_EMPTY).record_count == 0
    control = validate_batch(SARAMA_EMPTY_CONTROL)
    assert control.is_control
    assert decode_records(SARAMA_EMPTY) == []


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
    assert control_type(_batch()) is None


def test_last_sequence_wraps_like_kafka() -> None:
    header = parse_header(_batch(3, base_sequence=2**31 - 2, producer_id=1, producer_epoch=0))
    assert header.last_sequence == 0
    assert parse_header(_batch(3)).last_sequence == -1


def test_log_append_time_reports_max_timestamp() -> None:
    data = build_batch([(b"a", b"1", 10), (b"b", b"2", 30)], log_append_time=True)
    header = parse_header(data)
    assert header.is_log_append_time
    assert [r.timestamp for r in decode_records(data)] == [30, 30]


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


# --------------------------------------------------------------------------- validation


def _with(data: bytes, pos: int, fmt: str, value: int) -> bytearray:
    out = bytearray(data)
    struct.pack_into(fmt, out, pos, value)
    return out


def test_validate_rejects() -> None:
    data = _batch()
    with pytest.raises(CorruptBatchError, match="cannot hold"):
        validate_batch(data[:60])
    with pytest.raises(CorruptBatchError, match="does not match"):
        validate_batch(data[:-1])
    with pytest.raises(CorruptBatchError, match="magic"):
        validate_batch(_with(data, 16, ">b", 1))
    flipped = bytearray(data)
    flipped[-1] ^= 0x01
    with pytest.raises(CorruptBatchError, match="CRC") as info:
        validate_batch(flipped)
    assert isinstance(info.value, LogFileError) and info.value.position == 17


def test_compressed_batch_is_unsupported() -> None:
    data = _with(_batch(), 21, ">h", 1)  # gzip
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    with pytest.raises(UnsupportedCompressionError):
        validate_batch(data)
    with pytest.raises(UnsupportedCompressionError):
        decode_records(data)
    assert parse_header(data).compression == 1


def _recrc(data: bytearray) -> bytearray:
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    return data


def test_deep_validation_walks_records() -> None:
    data = _batch(3)
    # claims 4 records: the CRC is right (recomputed) but the records do not add up
    bad_count = _recrc(_with(data, 57, ">i", 4))
    validate_batch(bad_count)
    with pytest.raises(CorruptBatchError):
        validate_batch(bad_count, deep=True)
    with pytest.raises(CorruptBatchError):
        decode_records(bad_count)
    fewer = _recrc(_with(data, 57, ">i", 2))
    with pytest.raises(CorruptBatchError, match="after the 2 records"):
        validate_batch(fewer, deep=True)
    # last offset delta 0 but records at deltas 1 and 2
    short_delta = _recrc(_with(data, 23, ">i", 0))
    with pytest.raises(CorruptBatchError, match="offset delta"):
        validate_batch(short_delta, deep=True)
    negative = _recrc(_with(data, 57, ">i", -1))
    with pytest.raises(CorruptBatchError, match="impossible"):
        validate_batch(negative)


def test_parse_header_needs_61_bytes() -> None:
    with pytest.raises(CorruptBatchError):
        parse_header(_batch()[:60])
    assert parse_header(b"\x00" + _batch(), 1).record_count == 3


# --------------------------------------------------------------------------- iteration


def test_iter_batches_and_truncated_tail() -> None:
    batches = [_batch(1, base_offset=0), _batch(2, base_offset=1), _batch(3, base_offset=3)]
    joined = b"".join(batches)
    seen = [(h.base_offset, bytes(v)) for h, v in iter_batches(joined)]
    assert seen == [(0, batches[0]), (1, batches[1]), (3, batches[2])]
    for cut in (1, 30, len(batches[2]) - 1):
        got = [h.base_offset for h, _ in iter_batches(joined[:-cut])]
        assert got == [0, 1]
    assert list(iter_batches(b"")) == []
    assert valid_prefix_length(joined) == len(joined)
    assert valid_prefix_length(joined[:-1]) == len(batches[0]) + len(batches[1])
    # a garbage tail whose length field is plausible but overruns: a truncated tail too
    garbage = joined + b"\x00" * 8 + b"\x7f" + b"\xff" * 91
    assert [h.base_offset for h, _ in iter_batches(garbage)] == [0, 1, 3]
    assert valid_prefix_length(garbage) == len(joined)
    # one whose length is impossible (-1) is corruption, as Kafka's log input stream says
    with pytest.raises(CorruptBatchError):
        list(iter_batches(joined + b"\xff" * 100))
    assert valid_prefix_length(joined + b"\xff" * 100) == len(joined)


def test_iter_batches_refuses_an_impossible_length() -> None:
    joined = _batch(1) + bytes(8) + struct.pack(">i", 10) + bytes(60)
    it = iter_batches(joined)
    next(it)
    with pytest.raises(CorruptBatchError) as info:
        next(it)
    assert info.value.position == len(_batch(1))
    assert valid_prefix_length(joined) == len(_batch(1))


def test_valid_prefix_stops_at_a_bad_crc() -> None:
    a, b = _batch(2), _batch(2, base_offset=2)
    broken = bytearray(a + b)
    broken[len(a) + 40] ^= 0x80
    assert valid_prefix_length(broken) == len(a)


# --------------------------------------------------------------------------- rewriting


def test_rewrite_base_in_place_keeps_crc() -> None:
    buf = bytearray(_batch(2) + _batch(3))
    second = memoryview(buf)[len(_batch(2)) :]
    rewrite_base(second, 1_000, 42)
    header = validate_batch(second)
    assert (header.base_offset, header.partition_leader_epoch) == (1_000, 42)
    assert [r.offset for r in decode_records(second)] == [1_000, 1_001, 1_002]
    rewrite_base(buf, 7, 1)
    assert parse_header(buf).base_offset == 7
    with pytest.raises(TypeError):
        rewrite_base(memoryview(_batch()), 1, 1)  # read-only


# --------------------------------------------------------------------------- key-range filtering


def test_filter_by_key_hash() -> None:
    keys = [b"alpha", b"beta", b"gamma", b"delta", None]
    data = build_batch(
        [(k, b"v", 500 + i) for i, k in enumerate(keys)],
        base_offset=100,
        producer_id=3,
        producer_epoch=0,
        base_sequence=0,
    )
    hashes = [0 if k is None else positive_hash(k) for k in keys]
    mid = sorted(hashes)[2]
    filtered = filter_by_key_hash(data, 0, mid)
    assert filtered is not None
    header = validate_batch(filtered, deep=True)
    original = parse_header(data)
    assert header.last_offset == original.last_offset == 104
    assert header.base_sequence == 0 and header.producer_id == 3
    assert (header.base_timestamp, header.max_timestamp) == (500, 504)
    kept = decode_records(filtered)
    assert [r.offset for r in kept] == [100 + i for i, h in enumerate(hashes) if h <= mid]
    assert [r.timestamp for r in kept] == [500 + i for i, h in enumerate(hashes) if h <= mid]
    assert header.record_count == len(kept) == 3
    assert filter_by_key_hash(data, 0, 2**31 - 1) == data
    nothing = filter_by_key_hash(data, 1, 0)
    assert nothing is None
    # the null key hashes as 0
    only_null = filter_by_key_hash(data, 0, 0)
    assert only_null is not None
    assert [r.key for r in decode_records(only_null)] == [None]


def test_filter_keeps_control_batches_whole() -> None:
    marker = build_control_batch(True, producer_id=1, producer_epoch=0, timestamp_ms=5)
    assert filter_by_key_hash(marker, 1, 1) == marker


# --------------------------------------------------------------------------- speed


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


# --------------------------------------------------------------------------- malformed records


def _one_record_batch(record_body: bytes, count: int = 1, last_offset_delta: int = 0) -> bytes:
    """A CRC-valid batch around hand-made record bytes (length prefix added)."""
    z = len(record_body) << 1
    assert z < 0x80
    body = bytes((z,)) + record_body
    header = struct.pack(">hiqqqhii", 0, last_offset_delta, 0, 0, -1, -1, -1, count)
    crc = crc32c(header + body)
    prefix = struct.pack(">qiibI", 0, 49 + len(body), -1, 2, crc)
    return prefix + header + body


@pytest.mark.parametrize(
    ("record_body", "problem"),
    [
        (bytes([0, 0, 0, 3, 0, 0]), "key length -2"),
        (bytes([0, 0, 0, 1, 5, 0]), "value length -3"),
        (bytes([0, 0, 0, 1, 1, 1]), "header count -1"),
        (bytes([0, 0, 0, 1, 1, 2, 1, 1]), "null header key"),
        (bytes([0, 0, 0, 1, 1, 2, 2, 0xFF, 0]), "header key not UTF-8"),
        (bytes([0, 0, 0, 4, 1, 1, 0]), "key overruns the record"),
        (bytes([0, 0, 0, 1, 1, 0, 0]), "a byte left in the record"),
        (bytes([0, 0xFF, 0xFF]), "varint runs off the end"),
    ],
)
def test_malformed_records_are_corrupt(record_body: bytes, problem: str) -> None:
    data = _one_record_batch(record_body)
    validate_batch(data)  # the CRC is right: only decoding can tell
    with pytest.raises(CorruptBatchError):
        decode_records(data)
    with pytest.raises(CorruptBatchError):
        validate_batch(data, deep=True)
    if problem == "key length -2":  # the filter reads only up to the key
        with pytest.raises(CorruptBatchError):
            filter_by_key_hash(data, 0, 2**31 - 1)


def test_well_formed_hand_made_record_decodes() -> None:
    # attributes 0, ts delta 0, offset delta 0, key b"k", value null, one header ("h", b"")
    data = _one_record_batch(bytes([0, 0, 0, 2]) + b"k" + bytes([1, 2, 2]) + b"h" + bytes([0]))
    assert decode_records(data) == [Record(0, 0, b"k", None, (("h", b""),))]


def test_deep_validation_wants_increasing_offset_deltas() -> None:
    data = bytearray(_batch(2))
    # the second record's offset delta (after its length, attributes and timestamp delta) -> 0
    second = BATCH_HEADER_SIZE + 1 + data[BATCH_HEADER_SIZE] // 2
    assert data[second + 3] == 2  # zigzag(1)
    data[second + 3] = 0
    data = _recrc(data)
    validate_batch(data)
    with pytest.raises(CorruptBatchError, match="out of order"):
        validate_batch(data, deep=True)


def test_trailing_bytes_after_the_records_are_corrupt() -> None:
    data = bytearray(_batch(2) + b"\x00")
    struct.pack_into(">i", data, 8, len(data) - 12)
    data = _recrc(data)
    validate_batch(data)
    with pytest.raises(CorruptBatchError, match="after the 2 records"):
        decode_records(data)
    with pytest.raises(CorruptBatchError, match="after the 2 records"):
        filter_by_key_hash(data, 0, 0)


def test_a_batch_without_records_keeps_its_offsets_and_is_valid() -> None:
    original = build_batch([(b"k%d" % i, b"v", 1_000 + i) for i in range(5)], base_offset=40,
                           producer_id=7, producer_epoch=1, base_sequence=3,
                           partition_leader_epoch=2)
    emptied = without_records(original)
    header = validate_batch(emptied, deep=True)
    before = parse_header(original)
    assert (header.base_offset, header.last_offset, header.next_offset) == (40, 44, 45)
    assert header.record_count == 0 and len(emptied) == BATCH_HEADER_SIZE
    assert (header.producer_id, header.producer_epoch, header.base_sequence,
            header.partition_leader_epoch) == (7, 1, 3, 2)
    assert header.max_timestamp == before.max_timestamp
    assert decode_records(emptied) == []
