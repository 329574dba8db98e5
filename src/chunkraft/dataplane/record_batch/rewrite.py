"""Rewriting v2 batches: a leader's in-place base offset, epoch and append time, key-range
filtering, emptying. A compressed batch is filtered in its records decompressed, and what is kept
compressed again with the same codec.

Pure functions (``rewrite_base`` and ``set_log_append_time`` write only into the buffer they are
given), safe from any thread.
"""

from __future__ import annotations

import struct

from crc32c import crc32c

from chunkraft.dataplane.murmur2 import positive_hash
from chunkraft.dataplane.record_batch.build import _assemble
from chunkraft.dataplane.record_batch.layout import (
    _BASE,
    _BUFFER,
    _CRC_START,
    _EPOCH,
    COMPRESSION_MASK,
    MAX_OFFSET,
    TIMESTAMP_TYPE_FLAG,
    BatchHeader,
    Buffer,
)
from chunkraft.dataplane.record_batch.read import parse_header, records_section
from chunkraft.dataplane.record_batch.varint import _read_varint
from chunkraft.errors import CorruptBatchError

__all__ = ["filter_by_key_hash", "rewrite_base", "set_log_append_time", "without_records"]

_ATTRIBUTES = struct.Struct(">h")
_TIMESTAMP = struct.Struct(">q")
_CRC = struct.Struct(">I")
_ATTRIBUTES_AT = 21
_MAX_TIMESTAMP_AT = 35
_CRC_AT = 17


def rewrite_base(
    view: bytearray | memoryview, base_offset: int, partition_leader_epoch: int
) -> None:
    """Set the batch's base offset and partition leader epoch in place.

    Both fields are outside the CRC, so the batch stays valid; ``view`` must be writable and
    start at the batch. A base offset outside ``0 .. MAX_OFFSET`` raises CorruptBatchError
    (it cannot be written; callers check their offsets first, this keeps a struct.error from
    ever reaching a client).
    """
    if not 0 <= base_offset <= MAX_OFFSET:
        raise CorruptBatchError(f"base offset {base_offset} is outside 0..{MAX_OFFSET}",
                                _BUFFER, 0)
    _BASE.pack_into(view, 0, base_offset)
    _EPOCH.pack_into(view, 12, partition_leader_epoch)


def set_log_append_time(view: bytearray | memoryview, append_time_ms: int) -> None:
    """Mark the batch LogAppendTime with ``append_time_ms`` as its timestamp, in place.

    Kafka's rule for ``message.timestamp.type=LogAppendTime``: the timestamp-type bit of the
    attributes is set and ``maxTimestamp`` becomes the broker's append time, which readers then
    report for every record of the batch; the records themselves are left as they are. Both
    fields are inside the CRC, so the CRC is computed again. ``view`` must be writable, start
    at the batch and hold exactly it.
    """
    (attributes,) = _ATTRIBUTES.unpack_from(view, _ATTRIBUTES_AT)
    _ATTRIBUTES.pack_into(view, _ATTRIBUTES_AT, attributes | TIMESTAMP_TYPE_FLAG)
    _TIMESTAMP.pack_into(view, _MAX_TIMESTAMP_AT, append_time_ms)
    _CRC.pack_into(view, _CRC_AT, crc32c(view[_CRC_START:]))


def filter_by_key_hash(view: Buffer, lo: int, hi: int) -> bytes | None:
    """The batch with only the records whose positive murmur2 key hash is in ``[lo, hi]``.

    A null key hashes as 0. Kept records keep their offsets and timestamps (their bytes are
    copied unchanged, base offset, base and max timestamp and ``lastOffsetDelta`` stay, so the
    batch still ends at the same offset), the record count and CRC are recomputed; a compressed
    batch's kept records are compressed again with its codec. A control batch is returned
    whole. Returns None when no record is left, the original bytes when all are kept. Does not
    check the CRC of the input.
    """
    header = parse_header(view)
    if header.is_control:
        return bytes(view)
    data, pos, where = records_section(view)
    kept: list[bytes] = []
    read = _read_varint
    end = len(data)
    try:
        for _ in range(header.record_count):
            start = pos
            length, pos = read(data, pos)
            record_end = pos + length
            if length < 0 or record_end > end:
                raise CorruptBatchError(
                    f"record length {length} overruns the batch", where, start
                )
            _ts, p = read(data, pos + 1)
            _od, p = read(data, p)
            key_length, p = read(data, p)
            if key_length == -1:
                key_hash = 0
            elif key_length < 0 or p + key_length > record_end:
                raise ValueError(f"key length {key_length}")
            else:
                key_hash = positive_hash(data[p : p + key_length])
            if lo <= key_hash <= hi:
                kept.append(data[start:record_end])
            pos = record_end
    except (IndexError, ValueError) as e:
        raise CorruptBatchError(f"malformed record: {e}", where, pos) from None
    if pos != end:
        raise CorruptBatchError(
            f"{end - pos} bytes after the {header.record_count} records", where, pos
        )
    if not kept:
        return None
    if len(kept) == header.record_count:
        return bytes(view)
    return _with_records(header, b"".join(kept), len(kept))


def without_records(view: Buffer) -> bytes:
    """The batch's header with no records: record count 0 and a new CRC, the same base offset
    and ``lastOffsetDelta``, so the offsets it spans stay accounted for.

    A key-range fetch answers a batch none of whose records matched this way, as Kafka keeps an
    emptied batch after compaction: a reader moves past ``last_offset`` instead of fetching the
    same offsets again. The emptied batch is uncompressed whatever the original's codec, as
    Kafka writes an emptied batch's header (a consumer has no records section to decompress)."""
    header = parse_header(view)
    return _with_records(header._replace(attributes=header.attributes & ~COMPRESSION_MASK),
                         b"", 0)


def _with_records(header: BatchHeader, records: bytes, count: int) -> bytes:
    """A batch with ``header``'s fields (offsets, epochs, producer, timestamps, codec) around
    other records: ``count`` of them, encoded uncompressed in ``records``; a new CRC."""
    return _assemble(
        records,
        base_offset=header.base_offset,
        partition_leader_epoch=header.partition_leader_epoch,
        attributes=header.attributes,
        last_offset_delta=header.last_offset_delta,
        base_timestamp=header.base_timestamp,
        max_timestamp=header.max_timestamp,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        record_count=count,
    )
