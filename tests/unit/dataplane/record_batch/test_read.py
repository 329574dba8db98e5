"""Reading v2 batches (``record_batch.read``): Kafka's bytes, validation, iteration, bad records."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c

from chunkraft.dataplane.record_batch import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    CorruptBatchError,
    DecompressionLimitError,
    Record,
    UnsupportedCompressionError,
    build_batch,
    compress,
    decode_records,
    filter_by_key_hash,
    iter_batches,
    parse_header,
    records_section,
    valid_prefix_length,
    validate_batch,
)
from chunkraft.errors import LogFileError
from tests.unit.dataplane.record_batch.batches import (
    SARAMA_EMPTY,
    SARAMA_EMPTY_CONTROL,
    SARAMA_UNCOMPRESSED,
    one_record_batch,
    recrc,
    small_batch,
    with_field,
)


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


def test_header_only_batches_from_sarama_validate() -> None:
    assert validate_batch(SARAMA_EMPTY).record_count == 0
    control = validate_batch(SARAMA_EMPTY_CONTROL)
    assert control.is_control
    assert decode_records(SARAMA_EMPTY) == []


def test_log_append_time_reports_max_timestamp() -> None:
    data = build_batch([(b"a", b"1", 10), (b"b", b"2", 30)], log_append_time=True)
    header = parse_header(data)
    assert header.is_log_append_time
    assert [r.timestamp for r in decode_records(data)] == [30, 30]


def test_validate_rejects() -> None:
    data = small_batch()
    with pytest.raises(CorruptBatchError, match="cannot hold"):
        validate_batch(data[:60])
    with pytest.raises(CorruptBatchError, match="does not match"):
        validate_batch(data[:-1])
    with pytest.raises(CorruptBatchError, match="magic"):
        validate_batch(with_field(data, 16, ">b", 1))
    flipped = bytearray(data)
    flipped[-1] ^= 0x01
    with pytest.raises(CorruptBatchError, match="CRC") as info:
        validate_batch(flipped)
    assert isinstance(info.value, LogFileError) and info.value.position == 17


def test_a_codec_id_kafka_does_not_have_is_unsupported() -> None:
    for codec in (5, 6, 7):
        data = with_field(small_batch(), 21, ">h", codec)
        struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
        with pytest.raises(UnsupportedCompressionError) as info:
            validate_batch(data)
        assert info.value.position == 21
        with pytest.raises(UnsupportedCompressionError):
            decode_records(data)
        assert parse_header(data).compression == codec
        assert valid_prefix_length(data) == 0  # a log recovery cuts it


def test_a_batch_marked_compressed_whose_records_are_not_is_corrupt_when_read() -> None:
    data = with_field(small_batch(), 21, ">h", 1)  # gzip, but the records are plain
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    header = validate_batch(data)  # the header and CRC are fine: only the records are wrong
    assert header.compression == 1
    with pytest.raises(CorruptBatchError, match="gzip records do not decompress") as info:
        validate_batch(data, deep=True)
    assert not isinstance(info.value, UnsupportedCompressionError)
    with pytest.raises(CorruptBatchError):
        decode_records(data)


def test_deep_validation_walks_records() -> None:
    data = small_batch(3)
    # claims 4 records: the CRC is right (recomputed) but the records do not add up
    bad_count = recrc(with_field(data, 57, ">i", 4))
    validate_batch(bad_count)
    with pytest.raises(CorruptBatchError):
        validate_batch(bad_count, deep=True)
    with pytest.raises(CorruptBatchError):
        decode_records(bad_count)
    fewer = recrc(with_field(data, 57, ">i", 2))
    with pytest.raises(CorruptBatchError, match="after the 2 records"):
        validate_batch(fewer, deep=True)
    # last offset delta 0 but records at deltas 1 and 2
    short_delta = recrc(with_field(data, 23, ">i", 0))
    with pytest.raises(CorruptBatchError, match="offset delta"):
        validate_batch(short_delta, deep=True)
    negative = recrc(with_field(data, 57, ">i", -1))
    with pytest.raises(CorruptBatchError, match="impossible"):
        validate_batch(negative)


def test_parse_header_needs_61_bytes() -> None:
    with pytest.raises(CorruptBatchError):
        parse_header(small_batch()[:60])
    assert parse_header(b"\x00" + small_batch(), 1).record_count == 3


def test_iter_batches_and_truncated_tail() -> None:
    batches = [
        small_batch(1, base_offset=0),
        small_batch(2, base_offset=1),
        small_batch(3, base_offset=3),
    ]
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
    joined = small_batch(1) + bytes(8) + struct.pack(">i", 10) + bytes(60)
    it = iter_batches(joined)
    next(it)
    with pytest.raises(CorruptBatchError) as info:
        next(it)
    assert info.value.position == len(small_batch(1))
    assert valid_prefix_length(joined) == len(small_batch(1))


def test_valid_prefix_stops_at_a_bad_crc() -> None:
    a, b = small_batch(2), small_batch(2, base_offset=2)
    broken = bytearray(a + b)
    broken[len(a) + 40] ^= 0x80
    assert valid_prefix_length(broken) == len(a)


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
    data = one_record_batch(record_body)
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
    data = one_record_batch(bytes([0, 0, 0, 2]) + b"k" + bytes([1, 2, 2]) + b"h" + bytes([0]))
    assert decode_records(data) == [Record(0, 0, b"k", None, (("h", b""),))]


def test_deep_validation_wants_increasing_offset_deltas() -> None:
    data = bytearray(small_batch(2))
    # the second record's offset delta (after its length, attributes and timestamp delta) -> 0
    second = BATCH_HEADER_SIZE + 1 + data[BATCH_HEADER_SIZE] // 2
    assert data[second + 3] == 2  # zigzag(1)
    data[second + 3] = 0
    data = recrc(data)
    validate_batch(data)
    with pytest.raises(CorruptBatchError, match="out of order"):
        validate_batch(data, deep=True)


def test_trailing_bytes_after_the_records_are_corrupt() -> None:
    data = bytearray(small_batch(2) + b"\x00")
    struct.pack_into(">i", data, 8, len(data) - 12)
    data = recrc(data)
    validate_batch(data)
    with pytest.raises(CorruptBatchError, match="after the 2 records"):
        decode_records(data)
    with pytest.raises(CorruptBatchError, match="after the 2 records"):
        filter_by_key_hash(data, 0, 0)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_a_compressed_batch_decodes_to_the_records_it_was_built_from(codec: int) -> None:
    records = [(b"k%d" % i, b"v" * i, 1_000 + i) for i in range(300)]
    plain = build_batch(records, base_offset=9, log_append_time=True)
    packed = build_batch(records, base_offset=9, log_append_time=True, compression=codec)
    assert len(packed) < len(plain)
    header = validate_batch(packed, deep=True)
    assert (header.compression, header.record_count) == (codec, 300)
    assert decode_records(packed) == decode_records(plain)
    data, start, name = records_section(packed)
    assert (data[start:], name) == (plain[BATCH_HEADER_SIZE:], "<decompressed records>")


def test_a_compressed_batchs_errors_are_placed_in_its_decompressed_records() -> None:
    body = b"".join(bytes(build_batch([(b"k", b"v", 1)]))[BATCH_HEADER_SIZE:] for _ in range(2))
    header = bytearray(build_batch([(b"k", b"v", 1)], compression=1)[:BATCH_HEADER_SIZE])
    packed = bytearray(header + compress(1, body))  # two records, the header claims one
    struct.pack_into(">i", packed, 8, len(packed) - 12)
    packed = recrc(packed)
    with pytest.raises(CorruptBatchError, match="bytes after the 1 records") as info:
        validate_batch(packed, deep=True)
    assert info.value.path == "<decompressed records>"


def test_the_decompression_limit_applies_to_reads_and_deep_validation() -> None:
    packed = build_batch([(b"k", bytes(10_000), 1)], compression=4)
    assert len(decode_records(packed, max_decompressed=20_000)) == 1
    with pytest.raises(DecompressionLimitError):
        decode_records(packed, max_decompressed=5_000)
    with pytest.raises(DecompressionLimitError):
        validate_batch(packed, deep=True, max_decompressed=5_000)
    validate_batch(packed, max_decompressed=5_000)  # the header alone decompresses nothing
