"""Batch layout, encoding and parsing (chunkraft.records.files.batch)."""

from __future__ import annotations

import struct
import zlib

import pytest

from chunkraft.errors import CorruptBatchError, TornTailError
from chunkraft.records import encode_record
from chunkraft.records.files import (
    END_OF_SNAPSHOT,
    HEADER_SIZE,
    MAGIC,
    MAX_BATCH_LENGTH,
    MIN_BATCH_LENGTH,
    Batch,
    encode_batch,
    encode_record_batch,
)
from chunkraft.records.files.batch import parse_batch

from .support import CLUSTER_ID, patch, sample_encoded, sample_records, with_crc_fixed


def _parse(data: bytes, position: int = 0) -> Batch:
    return parse_batch(data, position, len(data), "seg.log")


def test_round_trip_of_real_records() -> None:
    records = sample_records()
    data = encode_record_batch(records, base_offset=40, epoch=3, cluster_id=CLUSTER_ID)

    batch = _parse(data)

    assert batch.decode_records() == records
    assert batch.records == tuple(encode_record(record) for record in records)
    assert (batch.base_offset, batch.epoch, batch.cluster_id) == (40, 3, CLUSTER_ID)
    assert (batch.count, batch.last_offset, batch.next_offset) == (6, 45, 46)
    assert (batch.position, batch.size, batch.end_position) == (0, len(data), len(data))
    assert not batch.is_end_of_snapshot


def test_header_layout_is_the_documented_one() -> None:
    records = sample_encoded(2)
    data = encode_batch(records, base_offset=7, epoch=9, cluster_id=CLUSTER_ID, append_time_ms=1234)

    base_offset, batch_length, crc, magic, attributes, epoch, cluster, count, append_time = (
        struct.unpack_from(">qiIbhi16siq", data)
    )
    assert HEADER_SIZE == 51
    assert (base_offset, magic, attributes, epoch, count, append_time) == (7, MAGIC, 0, 9, 2, 1234)
    assert cluster == CLUSTER_ID.bytes
    assert batch_length == len(data) - 12
    assert crc == zlib.crc32(data[16:])
    # Each record: a uvarint length, then the codec's bytes.
    first = records[0]
    assert data[HEADER_SIZE] == len(first)
    assert data[HEADER_SIZE + 1 : HEADER_SIZE + 1 + len(first)] == first


def test_empty_batch_has_a_header_only() -> None:
    data = encode_batch([], base_offset=5, epoch=0, cluster_id=CLUSTER_ID, end_of_snapshot=True)

    batch = _parse(data)

    assert len(data) == HEADER_SIZE
    assert batch.records == ()
    assert (batch.last_offset, batch.next_offset) == (4, 5)
    assert batch.is_end_of_snapshot
    assert batch.attributes == END_OF_SNAPSHOT


@pytest.mark.parametrize("size", [0, 127, 128, 16383, 16384, 200_000])
def test_record_sizes_across_varint_widths(size: int) -> None:
    records = [b"a", bytes(range(256)) * (size // 256) + b"z" * (size % 256), b"b"]

    batch = _parse(encode_batch(records, base_offset=0, epoch=1, cluster_id=CLUSTER_ID))

    assert list(batch.records) == records


def test_parses_at_a_position_inside_a_larger_buffer() -> None:
    first = encode_batch([b"x"], base_offset=0, epoch=1, cluster_id=CLUSTER_ID)
    second = encode_batch([b"y", b"z"], base_offset=1, epoch=1, cluster_id=CLUSTER_ID)

    batch = _parse(first + second, len(first))

    assert (batch.position, batch.records) == (len(first), (b"y", b"z"))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"base_offset": -1}, "base offset"),
        ({"epoch": -1}, "epoch"),
        ({"epoch": 2**31}, "epoch"),
        ({"append_time_ms": -2}, "append time"),
        ({"max_batch_length": MAX_BATCH_LENGTH + 1}, "max batch length"),
    ],
)
def test_encode_refuses_values_the_header_cannot_hold(kwargs: dict[str, int], message: str) -> None:
    arguments = {"base_offset": 0, "epoch": 0, **kwargs}
    with pytest.raises(ValueError, match=message):
        encode_batch([b"r"], cluster_id=CLUSTER_ID, **arguments)


def test_encode_refuses_a_batch_over_the_length_limit() -> None:
    records = [b"x" * 100] * 10
    limit = MIN_BATCH_LENGTH + 10 * 101 - 1

    with pytest.raises(ValueError, match=r"1049 bytes long, over the limit of 1048 bytes"):
        encode_batch(records, base_offset=0, epoch=0, cluster_id=CLUSTER_ID, max_batch_length=limit)
    assert encode_batch(
        records[:9], base_offset=0, epoch=0, cluster_id=CLUSTER_ID, max_batch_length=limit
    )


GOOD = encode_batch([b"one", b"two", b"three"], base_offset=42, epoch=2, cluster_id=CLUSTER_ID)


def _corrupt_message(data: bytes) -> str:
    with pytest.raises(CorruptBatchError) as caught:
        _parse(data)
    assert caught.value.path == "seg.log"
    assert caught.value.position == 0
    return str(caught.value)


def test_crc_mismatch_names_the_batch() -> None:
    data = patch(GOOD, len(GOOD) - 1, b"X")

    message = _corrupt_message(data)

    assert "base offset 42 fails its CRC" in message
    assert message.startswith("seg.log: ") and message.endswith("(at byte 0)")


@pytest.mark.parametrize("length", [0, MIN_BATCH_LENGTH - 1, MAX_BATCH_LENGTH + 1, -5])
def test_impossible_length(length: int) -> None:
    message = _corrupt_message(patch(GOOD, 8, struct.pack(">i", length)))

    assert f"impossible length {length}" in message


def test_negative_base_offset() -> None:
    assert "impossible base offset -1" in _corrupt_message(patch(GOOD, 0, struct.pack(">q", -1)))


def test_unknown_magic_is_reported_before_the_crc() -> None:
    message = _corrupt_message(with_crc_fixed(patch(GOOD, 16, b"\x02")))

    assert "magic 2, expected 1" in message


def test_unknown_attributes() -> None:
    message = _corrupt_message(with_crc_fixed(patch(GOOD, 17, struct.pack(">h", 0x10))))

    assert "unknown attributes 0x0010" in message


def test_negative_epoch() -> None:
    message = _corrupt_message(with_crc_fixed(patch(GOOD, 19, struct.pack(">i", -3))))

    assert "impossible epoch -3" in message


@pytest.mark.parametrize("count", [0, 2, 4, -1, 2**31 - 1])
def test_record_count_that_does_not_match_the_record_bytes(count: int) -> None:
    message = _corrupt_message(with_crc_fixed(patch(GOOD, 39, struct.pack(">i", count))))

    assert f"record count {count} does not match" in message


def test_record_length_running_past_the_batch() -> None:
    # The last record claims one byte more than the batch holds.
    position = HEADER_SIZE + 4 + 4
    message = _corrupt_message(with_crc_fixed(patch(GOOD, position, bytes([6]))))

    assert "record count 3 does not match" in message


@pytest.mark.parametrize("keep", [0, 1, 11])
def test_file_ending_inside_the_first_twelve_bytes_is_a_torn_header(keep: int) -> None:
    with pytest.raises(
        TornTailError, match=rf"inside a batch header \(need at least 51 bytes, have {keep}\)"
    ):
        _parse(GOOD[:keep])


@pytest.mark.parametrize("keep", [12, 50, 51, len(GOOD) - 1])
def test_file_ending_inside_the_batch_is_a_torn_tail(keep: int) -> None:
    with pytest.raises(TornTailError) as caught:
        _parse(GOOD[:keep])

    assert f"base offset 42 (need {len(GOOD)} bytes, have {keep})" in str(caught.value)
    assert caught.value.position == 0
