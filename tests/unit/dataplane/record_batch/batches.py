"""Batches the record batch tests share: Sarama's bytes for Kafka's layout and hand-made ones."""

from __future__ import annotations

import struct

from crc32c import crc32c

from chunkraft.dataplane.record_batch import (
    build_batch,
)

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
# Sarama's "gzipped record", "snappy compressed record" (one raw block, as librdkafka writes)
# and "lz4 compressed record" cases: the same record as SARAMA_UNCOMPRESSED, compressed; only
# the batch length, CRC, attributes and records section differ.
_SARAMA_HEAD = bytes([  # the header after the attributes
    0, 0, 0, 0,  # last offset delta
    0, 0, 1, 88, 141, 205, 89, 56,  # base timestamp
    0, 0, 0, 0, 0, 0, 0, 0,  # max timestamp
    0, 0, 0, 0, 0, 0, 0, 0,  # producer id
    0, 0, 0, 0, 0, 0,  # producer epoch, base sequence
    0, 0, 0, 1,  # record count
])


def _sarama(length: int, crc: tuple[int, ...], codec: int, records: list[int]) -> bytes:
    prefix = bytes(8) + bytes([0, 0, 0, length]) + bytes(4) + bytes([2, *crc, 0, codec])
    return prefix + _SARAMA_HEAD + bytes(records)


SARAMA_COMPRESSED = {
    1: _sarama(95, (231, 74, 206, 165), 1, [
        31, 139, 8, 0, 0, 9, 110, 136, 0, 255, 0, 21, 0, 234, 255, 40, 0, 10, 0, 8, 1, 2,
        3, 4, 6, 5, 6, 7, 2, 6, 8, 9, 10, 4, 11, 12, 3, 0, 173, 201, 88, 103, 21, 0, 0, 0]),
    2: _sarama(72, (21, 0, 159, 97), 2, [
        21, 80, 40, 0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7, 2, 6, 8, 9, 10, 4, 11, 12]),
    3: _sarama(89, (169, 74, 119, 197), 3, [
        4, 34, 77, 24, 100, 112, 185, 21, 0, 0, 128, 40, 0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7, 2,
        6, 8, 9, 10, 4, 11, 12, 0, 0, 0, 0, 12, 59, 239, 146]),
}
# Sarama's "empty record" and "control batch" cases: header-only batches.
SARAMA_EMPTY = bytes(8) + bytes([0, 0, 0, 49]) + bytes(4) + bytes([2, 89, 95, 183, 221]) + bytes(40)
SARAMA_EMPTY_CONTROL = (
    bytes(8) + bytes([0, 0, 0, 49]) + bytes(4) + bytes([2, 81, 46, 67, 217, 0, 32]) + bytes(38)
)


def small_batch(n: int = 3, **kwargs: int | bool) -> bytes:
    return build_batch(
        [(b"k%d" % i, b"v%d" % i, 1_000 + i) for i in range(n)],
        **kwargs,  # type: ignore[arg-type]
    )


def with_field(data: bytes, pos: int, fmt: str, value: int) -> bytearray:
    out = bytearray(data)
    struct.pack_into(fmt, out, pos, value)
    return out


def recrc(data: bytearray) -> bytearray:
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    return data


def one_record_batch(record_body: bytes, count: int = 1, last_offset_delta: int = 0) -> bytes:
    """A CRC-valid batch around hand-made record bytes (length prefix added)."""
    z = len(record_body) << 1
    assert z < 0x80
    body = bytes((z,)) + record_body
    header = struct.pack(">hiqqqhii", 0, last_offset_delta, 0, 0, -1, -1, -1, count)
    crc = crc32c(header + body)
    prefix = struct.pack(">qiibI", 0, 49 + len(body), -1, 2, crc)
    return prefix + header + body
