"""Rewriting v2 batches (``record_batch.rewrite``): base offset and append time in place, key
ranges, emptying."""

from __future__ import annotations

import pytest

from chunkraft.dataplane.murmur2 import positive_hash
from chunkraft.dataplane.record_batch import (
    BATCH_HEADER_SIZE,
    build_batch,
    build_control_batch,
    decode_records,
    filter_by_key_hash,
    parse_header,
    rewrite_base,
    set_log_append_time,
    validate_batch,
    without_records,
)
from tests.unit.dataplane.record_batch.batches import (
    small_batch,
)


def test_rewrite_base_in_place_keeps_crc() -> None:
    buf = bytearray(small_batch(2) + small_batch(3))
    second = memoryview(buf)[len(small_batch(2)) :]
    rewrite_base(second, 1_000, 42)
    header = validate_batch(second)
    assert (header.base_offset, header.partition_leader_epoch) == (1_000, 42)
    assert [r.offset for r in decode_records(second)] == [1_000, 1_001, 1_002]
    rewrite_base(buf, 7, 1)
    assert parse_header(buf).base_offset == 7
    with pytest.raises(TypeError):
        rewrite_base(memoryview(small_batch()), 1, 1)  # read-only


def test_log_append_time_marks_the_batch_and_every_record_reads_that_time() -> None:
    original = build_batch([(b"a", b"1", 1_000), (b"b", b"2", 1_500)], producer_id=7,
                           producer_epoch=1, base_sequence=3)
    buf = bytearray(original)
    set_log_append_time(buf, 99_000)
    header = validate_batch(buf)  # the CRC was computed again
    assert header.is_log_append_time and header.max_timestamp == 99_000
    assert header.base_timestamp == 1_000  # the records are left as they were
    assert (header.producer_id, header.base_sequence) == (7, 3)
    assert [r.timestamp for r in decode_records(buf)] == [99_000, 99_000]
    assert [r.value for r in decode_records(buf)] == [b"1", b"2"]
    assert buf[61:] == original[61:]
    with pytest.raises(TypeError):
        set_log_append_time(memoryview(original), 1)  # read-only


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


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_a_compressed_batch_is_filtered_in_its_records_and_stays_compressed(codec: int) -> None:
    records = [(b"key-%d" % i, b"value-%d" % i, 1_000 + i) for i in range(40)]
    data = build_batch(records, base_offset=500, producer_id=7, producer_epoch=1,
                       base_sequence=3, compression=codec)
    hashes = sorted(positive_hash(key) for key, _, _ in records)
    lo, hi = hashes[10], hashes[29]
    filtered = filter_by_key_hash(data, lo, hi)
    assert filtered is not None
    header = validate_batch(filtered, deep=True)
    assert header.compression == codec
    original = parse_header(data)
    assert (header.base_offset, header.last_offset_delta, header.producer_id,
            header.base_sequence, header.max_timestamp) == (
        original.base_offset, original.last_offset_delta, original.producer_id,
        original.base_sequence, original.max_timestamp)
    kept = decode_records(filtered)
    assert len(kept) == header.record_count == 20
    assert [r for r in decode_records(data) if lo <= positive_hash(r.key or b"") <= hi] == kept
    assert filter_by_key_hash(data, 0, 2**31 - 1) == data
    assert filter_by_key_hash(data, hashes[-1] + 1, 2**31 - 1) is None


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_an_emptied_compressed_batch_is_written_uncompressed(codec: int) -> None:
    data = build_batch([(b"k", b"v", 5), (b"k", b"w", 6)], compression=codec)
    empty = without_records(data)
    header = validate_batch(empty, deep=True)
    assert (header.compression, header.record_count, header.last_offset_delta) == (0, 0, 1)
    assert len(empty) == BATCH_HEADER_SIZE and decode_records(empty) == []
